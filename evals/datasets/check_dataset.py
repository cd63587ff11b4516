"""Verify a Lotsman evaluation dataset (JSONL) against its corpus.

Usage: python evals/datasets/check_dataset.py DATASET.jsonl --corpus /tmp/fastapi-ru

The checks are listed in evals/datasets/README.md ("Verification"). Prints one
line per problem plus a summary; exits 1 on any problem, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
# The metric's own matcher, so a fact the checker accepts is one the eval can credit (issue 28).
from evals.facts import fact_in_text  # noqa: E402

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
}
MAX_FACT_WORDS = 5
CYRILLIC = re.compile(r"[\u0400-\u04FF]")

class Corpus:
    """Lazy, lower-cased view of the text files under the corpus root."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._cache: dict[str, str] = {}
        self._raw: dict[str, str] = {}
        self._all: dict[str, str] | None = None

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

    # gold paths
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
        if not 1 <= len(gold) <= 3:
            bad(f"answerable case needs 1-3 gold paths, has {len(gold)}")
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

    # tags
    unknown = set(tags) - TAGS
    if unknown:
        bad(f"unknown tags {sorted(unknown)}")
    if len(set(tags)) != len(tags):
        bad("duplicate tag")
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--corpus", type=Path, required=True, help="corpus root (assembled DEST)")
    ap.add_argument("--quiet", action="store_true", help="print only problems")
    ap.add_argument(
        "--absent-report",
        action="store_true",
        help="also print the corpus count of every absent term",
    )
    args = ap.parse_args(argv)

    if not args.corpus.is_dir():
        print(f"error: corpus root {args.corpus} is not a directory", file=sys.stderr)
        return 2
    if not args.dataset.is_file():
        print(f"error: dataset {args.dataset} not found", file=sys.stderr)
        return 2

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
