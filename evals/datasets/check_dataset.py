"""Verify a Lotsman evaluation dataset (JSONL) against its corpus.

Usage: python evals/datasets/check_dataset.py DATASET.jsonl --corpus /tmp/fastapi-ru
       python evals/datasets/check_dataset.py --twins                 # dev cases that twin a held-out case
       python evals/datasets/check_dataset.py --fix-gold DATASET.jsonl --corpus /tmp/fastapi-ru

The checks are listed in evals/datasets/README.md ("Verification"). Prints one
line per problem plus a summary; exits 1 on any problem, 2 on bad usage.

Two rules tie the splits together (issue 41):

- **The gold rule**, one for dev and held-out: an answerable case's gold files include every file the indexer
  takes (`stores.indexing.files.collect_files`: .md/.py) that states all of its key facts
  (`evals.facts.fact_in_text`), at most `MAX_GOLD` in all. `--fix-gold` adds the missing files (original
  gold first, the added ones sorted) and refuses a case the rule would widen past `MAX_GOLD`: its facts are
  too generic, a person makes them specific.
- **No twins**: a dev case twins a held-out case of the same corpus when they share a gold file and a key
  fact (folded as `evals.facts.fold`; one fact holding the other as whole words is the same fact). A twin
  makes the held-out case seen: the dev case goes. No id and no question (folded: `evals.holdout.
  question_key`) is in both splits either. The normal check of either split fails on any of these;
  `--twins` lists them for every registered corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
# The metric's own matcher, so a fact the checker accepts is one the eval can credit (issue 28).
from evals.facts import fact_in_text, fold, raw_form, symbol_shaped  # noqa: E402
from evals.holdout import question_key  # noqa: E402
from evals.suites import REPO_ROOT, SUITES  # noqa: E402

ROUTES = {"GENERAL_QA", "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/FIND_FILES"}
FIELDS = {
    "id",
    "question",
    "history",
    "expected_route",
    "gold_paths",
    "key_facts",
    "answerable",
    "tags",
}
TAGS = {
    "ru",
    "en",
    "followup",
    "code_only",
    "paraphrase",
    "exact_file",
    "identifier",
    "overview",
    "multi_gold",
    "unanswerable",
    "find_files",
    "general",
    "absent_topic",
    "near_miss",
}
UNANSWERABLE_KINDS = {"absent_topic", "near_miss"}
"""Optional tags of an unanswerable case: no word of the topic in the corpus, or the asked thing does not exist
though its words do (abstention is reported per kind)."""
MAX_FACT_WORDS = 5
MAX_GOLD = 5
"""Gold files of an answerable case at most: the gold rule may widen a case to this many, not more."""
CYRILLIC = re.compile(r"[\u0400-\u04FF]")
_WORDS = re.compile(r"\w+")

class Corpus:
    """Lazy, lower-cased view of the text files under the corpus root."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._cache: dict[str, str] = {}
        self._raw: dict[str, str] = {}
        self._all: dict[str, str] | None = None
        self._indexable: dict[str, str] | None = None
        self._lower: dict[str, str] = {}

    def resolve(self, rel: str) -> Path | None:
        if not rel or os.path.isabs(rel) or "\\" in rel:
            return None
        p = (self.root / rel).resolve()
        try:
            p.relative_to(self.root)
        except ValueError:
            return None
        return p

    def text(self, rel: str) -> str:
        if rel not in self._cache:
            p = self.resolve(rel)
            self._cache[rel] = (
                p.read_text(encoding="utf-8", errors="replace").lower() if p and p.is_file() else ""
            )
        return self._cache[rel]

    def raw(self, rel: str) -> str:
        """The file's text as it is (the key-fact matcher is case-sensitive for identifiers)."""
        if rel not in self._raw:
            p = self.resolve(rel)
            self._raw[rel] = p.read_text(encoding="utf-8", errors="replace") if p and p.is_file() else ""
        return self._raw[rel]

    def all_texts(self) -> dict[str, str]:
        if self._all is None:
            self._all = {}
            for p in sorted(self.root.rglob("*")):
                if p.is_file() and not p.is_symlink():
                    rel = p.relative_to(self.root).as_posix()
                    self._all[rel] = p.read_text(encoding="utf-8", errors="replace").lower()
        return self._all

    def indexable(self) -> dict[str, str]:
        """Path → text of every file the indexer takes (`collect_files`: .md/.py, hidden folders skipped, the
        text as it is indexed), in path order."""
        if self._indexable is None:
            from stores.indexing.files import collect_files

            self._indexable = {f.path: f.text for f in collect_files(self.root).files}
            self._lower = {rel: text.lower() for rel, text in self._indexable.items()}
        return self._indexable

    def stating(self, facts: list[str]) -> list[str]:
        """Indexable files that state every one of `facts` by the eval's matcher, in path order.

        A cheap necessary test comes first: a symbol-shaped fact's raw tokens occur in the file's text as
        they are (the matcher's raw form only drops backticks and quote marks and joins whitespace), any other
        fact's words in its lower-cased text (the matcher folds both sides)."""
        texts = self.indexable()
        needles = [(True, raw_form(f).split()) if symbol_shaped(f) else (False, _WORDS.findall(f.lower()))
                   for f in facts]
        return [rel for rel, text in texts.items()
                if all(all(t in (text if raw else self._lower[rel]) for t in tokens) for raw, tokens in needles)
                and all(fact_in_text(f, text) for f in facts)]

    def count(self, term: str) -> tuple[int, int]:
        """(files containing term, total occurrences), case-insensitive."""
        t = term.lower()
        files = hits = 0
        for txt in self.all_texts().values():
            n = txt.count(t)
            if n:
                files += 1
                hits += n
        return files, hits


def check_case(
    n: int, rec: object, corpus: Corpus, absent: dict[str, list[str]], problems: list[str]
) -> None:
    def bad(msg: str) -> None:
        cid = rec.get("id", f"line {n}") if isinstance(rec, dict) else f"line {n}"
        problems.append(f"{cid}: {msg}")

    if not isinstance(rec, dict):
        bad("not a JSON object")
        return
    missing, extra = FIELDS - rec.keys(), rec.keys() - FIELDS
    if missing:
        bad(f"missing fields {sorted(missing)}")
    if extra:
        bad(f"unexpected fields {sorted(extra)}")
    if missing:
        return

    cid, q, hist = rec["id"], rec["question"], rec["history"]
    route, gold, facts = rec["expected_route"], rec["gold_paths"], rec["key_facts"]
    answerable, tags = rec["answerable"], rec["tags"]

    if not isinstance(cid, str) or not cid:
        bad("id must be a non-empty string")
    if not isinstance(q, str) or not q.strip():
        bad("question must be a non-empty string")
        q = ""
    if route not in ROUTES:
        bad(f"expected_route {route!r} not in {sorted(ROUTES)}")
    if not isinstance(answerable, bool):
        bad("answerable must be a boolean")
    if not isinstance(hist, list) or not all(
        isinstance(t, dict)
        and set(t) == {"role", "content"}
        and t["role"] in ("user", "assistant")
        and isinstance(t["content"], str)
        and t["content"].strip()
        for t in hist
    ):
        bad("history must be a list of {role: user|assistant, content: non-empty str}")
        hist = []
    if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
        bad("gold_paths must be a list of strings")
        gold = []
    if not isinstance(facts, list) or not all(isinstance(f, str) and f.strip() for f in facts):
        bad("key_facts must be a list of non-empty strings")
        facts = []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        bad("tags must be a list of strings")
        tags = []

    _gold_and_facts(rec, gold, facts, tags, q, corpus, absent, bad)
    _tag_problems(tags, route, gold, hist, answerable, q, bad)


def _gold_and_facts(rec: dict, gold: list[str], facts: list[str], tags: list[str], q: str, corpus: Corpus,
                    absent: dict[str, list[str]], bad: Callable[[str], None]) -> None:
    """`check_case`'s gold paths, and what an answerable or unanswerable case must have."""
    cid, answerable = rec["id"], rec["answerable"]
    if len(set(gold)) != len(gold):
        bad("duplicate gold path")
    for g in gold:
        p = corpus.resolve(g)
        if p is None:
            bad(f"gold path {g!r} is not a relative path inside the corpus")
        elif not p.is_file():
            bad(f"gold path {g!r} does not exist in the corpus")

    # answerable vs not
    if answerable is True:
        if not 1 <= len(gold) <= MAX_GOLD:
            bad(f"answerable case needs 1-{MAX_GOLD} gold paths, has {len(gold)}")
        if not 1 <= len(facts) <= 3:
            bad(f"answerable case needs 1-3 key facts, has {len(facts)}")
        for f in facts:
            if len(f.split()) > MAX_FACT_WORDS:
                bad(f"key fact {f!r} is longer than {MAX_FACT_WORDS} words")
            if not any(fact_in_text(f, corpus.raw(g)) for g in gold):
                bad(f"key fact {f!r} is stated in no gold file by the eval's matcher (evals/facts.py: whole "
                    "words; identifiers case-sensitive; a fact without a letter or digit never matches)")
        if facts and all(fact_in_text(f, q) for f in facts):
            bad("every key fact is in the question: an answer that quotes the question's words would score "
                "full marks; give a fact the answer adds")
        if "unanswerable" in tags:
            bad("answerable case tagged 'unanswerable'")
        if cid in absent:
            bad("answerable case has absent terms")
    elif answerable is False:
        if gold:
            bad("unanswerable case must have gold_paths == []")
        if facts:
            bad("unanswerable case must have key_facts == []")
        if "unanswerable" not in tags:
            bad("unanswerable case lacks the 'unanswerable' tag")
        terms = absent.get(cid)
        if not terms:
            bad("unanswerable case has no absent terms (NAME.absent.json next to the dataset)")
        for term in terms or []:
            files, hits = corpus.count(term)
            if hits:
                bad(f"'absent' term {term!r} occurs {hits} times in {files} corpus files")


def _tag_problems(tags: list[str], route: object, gold: list[str], hist: list[dict], answerable: object, q: str,
                  bad: Callable[[str], None]) -> None:
    """`check_case`'s tags: known, once each, and agreeing with the language, route, history and gold."""
    unknown = set(tags) - TAGS
    if unknown:
        bad(f"unknown tags {sorted(unknown)}")
    if len(set(tags)) != len(tags):
        bad("duplicate tag")
    kinds = UNANSWERABLE_KINDS.intersection(tags)
    if kinds and answerable is not False:
        bad(f"tag {sorted(kinds)[0]!r} belongs to unanswerable cases")
    if len(kinds) > 1:
        bad("an unanswerable case is either an absent topic or a near miss, not both")
    langs = [t for t in tags if t in ("ru", "en")]
    if len(langs) != 1:
        bad("exactly one of the tags ru/en is required")
    elif langs[0] == "ru" and not CYRILLIC.search(q):
        bad("tagged ru but the question has no Cyrillic")
    elif langs[0] == "en" and CYRILLIC.search(q):
        bad("tagged en but the question contains Cyrillic")
    if ("followup" in tags) != bool(hist):
        bad("'followup' tag and non-empty history must go together")
    if hist and hist[-1]["role"] != "assistant":
        bad("history should end with an assistant turn")
    if ("find_files" in tags) != (route == "DOC_EXPLAIN/FIND_FILES"):
        bad("'find_files' tag and FIND_FILES route must go together")
    if ("general" in tags) != (route == "GENERAL_QA"):
        bad("'general' tag and GENERAL_QA route must go together")
    if "code_only" in tags and (not gold or not any(g.endswith(".py") for g in gold)):
        bad("'code_only' case needs a .py gold file")
    if "code_only" in tags and any(not g.endswith(".py") for g in gold) and "multi_gold" not in tags:
        bad("'code_only' case with a non-.py gold file must also be tagged multi_gold")
    if "multi_gold" in tags and len(gold) < 2:
        bad("'multi_gold' case needs 2+ gold paths")
    if len(gold) >= 2 and "multi_gold" not in tags:
        bad("case with 2+ gold paths should be tagged multi_gold")


# ---- the gold rule -------------------------------------------------------------------------------------

def gold_gaps(rec: dict, corpus: Corpus) -> tuple[list[str], list[str]]:
    """(indexable files stating every key fact of an answerable case that are not gold, all such files);
    ([], []) for a case the rule does not apply to (unanswerable, no facts, malformed)."""
    facts, gold = rec.get("key_facts"), rec.get("gold_paths")
    if rec.get("answerable") is not True or not isinstance(facts, list) or not facts or not isinstance(gold, list):
        return [], []
    if not all(isinstance(f, str) for f in facts):
        return [], []
    stating = corpus.stating(facts)
    return [f for f in stating if f not in gold], stating


def gold_rule_problems(records: list[dict], corpus: Corpus, problems: list[str]) -> None:
    """The gold rule (module docstring) on every case; gold files the indexer does not take are named too
    (retrieval can never return them)."""
    indexable = corpus.indexable()
    for rec in records:
        cid = rec.get("id")
        gold = rec.get("gold_paths") if isinstance(rec.get("gold_paths"), list) else []
        for g in gold:
            if isinstance(g, str) and corpus.resolve(g) is not None and (corpus.root / g).is_file() \
                    and g not in indexable:
                problems.append(f"{cid}: gold path {g!r} is not a file the indexer takes (.md/.py, not hidden)")
        missing, stating = gold_gaps(rec, corpus)
        if not missing:
            continue
        wide = len(dict.fromkeys([*gold, *missing]))
        if wide > MAX_GOLD:
            problems.append(f"{cid}: gold rule: {len(stating)} files state every key fact (gold would grow to "
                            f"{wide} > {MAX_GOLD}): make the key facts specific to the answer")
        else:
            problems.append(f"{cid}: gold rule: not gold but states every key fact: {', '.join(missing)} "
                            "(--fix-gold adds them)")


def fix_gold(dataset: Path, corpus: Corpus) -> tuple[list[str], list[str]]:
    """Add to each answerable case's gold the indexable files that state all its key facts (original gold
    first, then the added files in path order; `multi_gold` tagged once there are 2+), rewriting only the
    lines that change. A case the rule would widen past `MAX_GOLD` is left as it is and reported.

    Returns:
        (lines describing the added files, lines describing the refused cases).
    """
    lines = dataset.read_text(encoding="utf-8").splitlines(keepends=True)
    fixed, refused = [], []
    for i, line in enumerate(lines):
        try:
            rec = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            continue
        if not isinstance(rec, dict):
            continue
        missing, stating = gold_gaps(rec, corpus)
        if not missing:
            continue
        gold = list(dict.fromkeys([*rec["gold_paths"], *missing]))
        if len(gold) > MAX_GOLD:
            refused.append(f"{rec.get('id')}: {len(stating)} files state every key fact {rec['key_facts']} "
                           f"({', '.join(stating[:8])}{', ...' if len(stating) > 8 else ''}): gold would grow to "
                           f"{len(gold)} > {MAX_GOLD}; make the key facts specific to the answer")
            continue
        rec["gold_paths"] = gold
        tags = rec.get("tags")
        if isinstance(tags, list) and len(gold) >= 2 and "multi_gold" not in tags:
            tags.append("multi_gold")
        end = "\n" if line.endswith("\n") else ""
        lines[i] = json.dumps(rec, ensure_ascii=False) + end
        fixed.append(f"{rec.get('id')}: + {', '.join(missing)}")
    if fixed:
        tmp = dataset.with_name(f".{dataset.name}.{os.getpid()}.tmp")
        tmp.write_text("".join(lines), encoding="utf-8")
        os.replace(tmp, dataset)
    return fixed, refused


# ---- twins of held-out cases ----------------------------------------------------------------------------

def same_fact(a: str, b: str) -> bool:
    """Two key facts are the same after folding (`evals.facts.fold`), or one holds the other as whole words."""
    fa, fb = fold(a), fold(b)
    return bool(fa) and bool(fb) and (f" {fa} " in f" {fb} " or f" {fb} " in f" {fa} ")


def read_cases(path: Path) -> list[dict]:
    """The JSON objects of a dataset (blank and malformed lines skipped: the normal check reports them)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        try:
            rec = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def twins(dev: list[dict], held: list[dict]) -> list[tuple[str, str, str, str, str]]:
    """(dev id, held-out id, shared gold file, dev fact, held-out fact) of every dev case that twins a
    held-out case: a shared gold file and a shared key fact (`same_fact`); one row per pair of cases."""
    def usable(rec: dict) -> tuple[list[str], list[str]]:
        gold, facts = rec.get("gold_paths"), rec.get("key_facts")
        ok = isinstance(gold, list) and isinstance(facts, list)
        return ([g for g in gold if isinstance(g, str)] if ok else [],
                [f for f in facts if isinstance(f, str)] if ok else [])

    found = []
    for h in held:
        h_gold, h_facts = usable(h)
        for d in dev:
            d_gold, d_facts = usable(d)
            shared = [g for g in d_gold if g in h_gold]
            pair = next(((df, hf) for df in d_facts for hf in h_facts if same_fact(df, hf)), None)
            if shared and pair:
                found.append((str(d.get("id")), str(h.get("id")), shared[0], pair[0], pair[1]))
    return found


def split_pair(dataset: Path) -> tuple[str, Path, Path] | None:
    """(corpus name, dev dataset, held-out dataset) the dataset belongs to: a registered suite's, else by
    name (`NAME.jsonl` beside `NAME_holdout.jsonl`); None when it has no other split."""
    here = dataset.resolve()
    for suite in SUITES.values():
        if suite.holdout and here in ((REPO_ROOT / suite.dev).resolve(), (REPO_ROOT / suite.holdout).resolve()):
            return suite.name, REPO_ROOT / suite.dev, REPO_ROOT / suite.holdout
    if dataset.stem.endswith("_holdout"):
        return dataset.stem[: -len("_holdout")], dataset.with_name(dataset.stem[: -len("_holdout")] + ".jsonl"), \
            dataset
    other = dataset.with_name(dataset.stem + "_holdout.jsonl")
    return (dataset.stem, dataset, other) if other.is_file() else None


def twin_problems(dataset: Path, problems: list[str]) -> None:
    """The normal check's part of the twin rule: twins (and shared ids) between this dataset and its other
    split, named from this dataset's side."""
    pair = split_pair(dataset)
    if pair is None or not pair[1].is_file() or not pair[2].is_file():
        return
    _, dev_path, held_path = pair
    dev, held = read_cases(dev_path), read_cases(held_path)
    is_dev = dataset.resolve() == dev_path.resolve()
    for d_id, h_id, gold, d_fact, h_fact in twins(dev, held):
        if is_dev:
            problems.append(f"{d_id}: twins held-out {h_id} ({held_path.name}: gold {gold}, key fact {d_fact!r} ~ "
                            f"{h_fact!r}): remove it from dev")
        else:
            problems.append(f"{h_id}: twinned by dev {d_id} ({dev_path.name}: gold {gold}, key fact {h_fact!r} ~ "
                            f"{d_fact!r}): the dev case must go")
    for what, value in shared_cases(dev, held):
        problems.append(f"{value}: id used in both {dev_path.name} and {held_path.name}" if what == "id" else
                        f"question {value!r} asked in both {dev_path.name} and {held_path.name}")


def shared_cases(dev: list[dict], held: list[dict]) -> list[tuple[str, str]]:
    """("id", id) for every id, then ("question", folded question) for every question (`evals.holdout.
    question_key`: words, case-folded) that is in both splits, sorted: a copy with renamed ids is caught."""
    ids = {str(r.get("id")) for r in dev} & {str(r.get("id")) for r in held}

    def questions(cases: list[dict]) -> set[str]:
        return {k for r in cases if isinstance(r.get("question"), str) and (k := question_key(r["question"]))}

    return [("id", cid) for cid in sorted(ids)] + [("question", q) for q in sorted(questions(dev) & questions(held))]


def twins_report(names: list[str] | None = None) -> int:
    """`--twins`: every registered corpus with a held-out split (or the named ones), its twins and a summary
    line each; exit 1 when any dev case twins a held-out case."""
    total = both = 0
    for suite in SUITES.values():
        if suite.holdout is None or (names and suite.name not in names):
            continue
        dev, held = read_cases(REPO_ROOT / suite.dev), read_cases(REPO_ROOT / suite.holdout)
        found, shared = twins(dev, held), shared_cases(dev, held)
        for d_id, h_id, gold, d_fact, h_fact in found:
            print(f"TWIN {suite.name}: dev {d_id} ~ held-out {h_id}: gold {gold}; key fact {d_fact!r} ~ {h_fact!r}")
        for what, value in shared:
            print(f"SHARED {suite.name}: {what} {value if what == 'id' else repr(value)} in both splits")
        cases = len({d for d, *_ in found})
        print(f"{suite.name}: dev {len(dev)} cases, held-out {len(held)} cases: {len(found)} twin pairs"
              f"{f' ({cases} dev cases to remove)' if found else ''}"
              f"{f', {len(shared)} ids or questions in both splits' if shared else ''}")
        total += len(found)
        both += len(shared)
    print("OK: no dev case twins a held-out case" if total + both == 0
          else f"{total} twin pair(s)" + (f", {both} id(s) or question(s) in both splits" if both else ""))
    return 1 if total + both else 0


def sidecar_absent_terms(dataset: Path) -> dict[str, list[str]]:
    """Terms that must be absent from the corpus for each unanswerable case, kept next to the dataset
    (`NAME.absent.json`: case id -> terms; a case-insensitive substring search over every file under the
    corpus root). A term may be a phrase: for a near-miss case every word occurs in the corpus, but the
    phrase (the asked-for thing) does not."""
    side = dataset.with_name(dataset.stem + ".absent.json")
    if not side.is_file():
        return {}
    data = json.loads(side.read_text(encoding="utf-8"))
    return {str(k): [str(t) for t in v] for k, v in data.items()}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path, nargs="?")
    ap.add_argument("--corpus", type=Path, help="corpus root (assembled DEST)")
    ap.add_argument("--quiet", action="store_true", help="print only problems")
    ap.add_argument(
        "--absent-report",
        action="store_true",
        help="also print the corpus count of every absent term",
    )
    ap.add_argument("--twins", action="store_true",
                    help="list every dev case that twins a held-out case of its corpus (same gold file and key "
                    "fact), and every id or question in both splits, for every registered corpus (or those "
                    "named with --corpus-set); exit 1 on any")
    ap.add_argument("--corpus-set", metavar="NAMES", help="with --twins: comma-separated corpora")
    ap.add_argument("--fix-gold", type=Path, metavar="DATASET",
                    help=f"add to gold every indexable file of --corpus that states all of a case's key facts; "
                    f"cases that would pass {MAX_GOLD} gold files are refused (listed), exit 1")
    return ap


def _twins_main(args: argparse.Namespace) -> int:
    """`--twins [--corpus-set NAMES]`: usage checked, then `twins_report`."""
    if args.dataset or args.fix_gold:
        print("error: --twins reads the registered datasets; give no DATASET or --fix-gold", file=sys.stderr)
        return 2
    names = [n.strip() for n in args.corpus_set.split(",") if n.strip()] if args.corpus_set else None
    unknown = [n for n in names or () if n not in SUITES]
    if unknown:
        print(f"error: unknown corpus {', '.join(unknown)}; known: {', '.join(SUITES)}", file=sys.stderr)
        return 2
    return twins_report(names)


def _fix_gold_main(dataset: Path, corpus: Path) -> int:
    """`--fix-gold DATASET --corpus PATH`: widen the gold files, list what was added and refused."""
    fixed, refused = fix_gold(dataset, Corpus(corpus))
    for line in fixed:
        print(f"FIXED {line}")
    for line in refused:
        print(f"REFUSED {line}")
    print(f"{dataset}: {len(fixed)} case(s) widened, {len(refused)} refused"
          + (" (make their key facts specific, then run --fix-gold again)" if refused else ""))
    return 1 if refused else 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.twins:
        return _twins_main(args)
    dataset = args.fix_gold or args.dataset
    if dataset is None or (args.fix_gold and args.dataset):
        print("error: give DATASET --corpus PATH, --fix-gold DATASET --corpus PATH, or --twins", file=sys.stderr)
        return 2
    if args.corpus is None or not args.corpus.is_dir():
        print(f"error: corpus root {args.corpus} is not a directory (--corpus PATH)", file=sys.stderr)
        return 2
    if not dataset.is_file():
        print(f"error: dataset {dataset} not found", file=sys.stderr)
        return 2
    if args.fix_gold:
        return _fix_gold_main(dataset, args.corpus)
    args.dataset = dataset

    corpus = Corpus(args.corpus)
    absent = sidecar_absent_terms(args.dataset)
    problems: list[str] = []
    records: list[dict] = []
    seen_ids: Counter[str] = Counter()
    seen_q: Counter[str] = Counter()

    with args.dataset.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                problems.append(f"line {n}: empty line")
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(f"line {n}: invalid JSON ({e})")
                continue
            check_case(n, rec, corpus, absent, problems)
            if isinstance(rec, dict):
                records.append(rec)
                seen_ids[str(rec.get("id"))] += 1
                seen_q[str(rec.get("question", "")).strip().lower()] += 1

    for cid, c in seen_ids.items():
        if c > 1:
            problems.append(f"{cid}: id used {c} times")
    for q, c in seen_q.items():
        if c > 1:
            problems.append(f"question used {c} times: {q!r}")
    ids = {str(r.get("id")) for r in records}
    for cid in absent:
        if cid not in ids:
            problems.append(f"{cid}: has absent terms ({args.dataset.stem}.absent.json) but is not in the dataset")
    gold_rule_problems(records, corpus, problems)
    twin_problems(args.dataset, problems)

    for p in problems:
        print(f"PROBLEM {p}")

    if not args.quiet:
        print_summary(args.dataset, records, problems, absent, corpus, absent_report=args.absent_report)
    return 1 if problems else 0


def print_summary(dataset, records: list[dict], problems: list[str], absent: dict, corpus: Corpus, *,
                  absent_report: bool, extra: str = "") -> None:
    """Counts per route, tag and gold-path number, the optional absence report, and the verdict."""
    routes = Counter(r.get("expected_route") for r in records)
    tags = Counter(t for r in records for t in r.get("tags", []) if isinstance(t, str))
    n_ans = sum(1 for r in records if r.get("answerable") is True)
    print(f"dataset: {dataset}  cases: {len(records)}  answerable: {n_ans}  "
          f"unanswerable: {len(records) - n_ans}{extra}")
    print("routes: " + ", ".join(f"{k}={v}" for k, v in sorted(routes.items())))
    print("tags:   " + ", ".join(f"{k}={v}" for k, v in sorted(tags.items())))
    golds = Counter(len(r.get("gold_paths", [])) for r in records)
    print("gold paths per case: " + ", ".join(f"{k}:{v}" for k, v in sorted(golds.items())))
    if absent_report:
        for cid, terms in absent.items():
            for term in terms:
                files, hits = corpus.count(term)
                print(f"absent {cid} {term!r}: files={files} hits={hits}")
    print("OK" if not problems else f"{len(problems)} problem(s)")


if __name__ == "__main__":
    sys.exit(main())
