"""Verify the lotsman-self dataset (questions about this repository) against the repository itself.

Usage: python evals/datasets/check_self.py [evals/datasets/lotsman_self.jsonl] [--corpus .] [--absent-report]

Runs every check of check_dataset.py (format, routes, gold paths, key facts, tags, absent topics) with
three differences that matter when the corpus is this repository:

- the "corpus" for the absence check is what `lotsman index` would index (`collect_files`: .md, .markdown
  and .py files, hidden and vendored directories skipped), not every file under the root (`.venv/`,
  `.data/`, the JSONL datasets themselves);
- every gold path must be one of those indexable files;
- a `code_only` case's key facts must occur in none of the `docs/**/*.md` pages (the answer really is
  only in the code), by the eval's own matcher (`evals.facts.fact_in_text`).

The absent terms of the unanswerable cases are stored *reversed* below. This file is itself indexed
(the eval indexes the whole repository root), so writing the topics out here would put them into the
corpus that the cases claim does not mention them. README.md describes the topics without naming them.

Prints one line per problem plus a summary; exits 1 on any problem, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from check_dataset import Corpus, check_case, fact_in_text, print_summary  # noqa: E402

DEFAULT_DATASET = HERE / "lotsman_self.jsonl"
DEFAULT_ROOT = HERE.parent.parent

# Case id -> terms that must occur nowhere in the indexed repository (case-insensitive substring search).
# Each term is written backwards (see the module docstring); `absent_terms()` turns them around.
_ABSENT_REVERSED: dict[str, list[str]] = {
    "ls-027": ["tnardq"],
    "ls-029": ["margelet", "маргелет"],
    # "backup" itself: the eval corpora READMEs name backup commands; "бэкап": test questions of `lotsman gaps`
    "ls-046": ["pmud_gp", "erotser_gp"],
    "ls-057": ["noitnetta", "noitnetta-fles"],
    "ls-058": ["aduc", "тракоедив"],  # not "gpu": the web-page test starts Chromium with --disable-gpu
    "ls-059": ["cabr", "велор", "desab-elor", "desab elor"],
}


def absent_terms() -> dict[str, list[str]]:
    return {cid: [t[::-1] for t in terms] for cid, terms in _ABSENT_REVERSED.items()}


_INCLUDE_EXTS = (".md", ".markdown", ".py")
_IGNORED_DIRS = {"node_modules", "__pycache__", "__pypackages__", "site-packages", "venv"}


def indexed_files(root: Path) -> list[str]:
    """Relative paths `lotsman index` would index (stores.indexing.files.collect_files when importable)."""
    try:
        sys.path.insert(0, str(root))
        from stores.indexing.files import collect_files

        return [f.path for f in collect_files(root).files]
    except ImportError:
        out = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _IGNORED_DIRS)
            for name in sorted(filenames):
                if not name.startswith(".") and name.lower().endswith(_INCLUDE_EXTS):
                    out.append((Path(dirpath) / name).relative_to(root).as_posix())
        return out


class IndexedCorpus(Corpus):
    """check_dataset's Corpus, restricted to the files the eval indexes."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.files = indexed_files(self.root)

    def all_texts(self) -> dict[str, str]:
        if self._all is None:
            self._all = {rel: self.text(rel) for rel in self.files}
        return self._all


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path, nargs="?", default=DEFAULT_DATASET)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_ROOT, help="repository root (default: this repo)")
    ap.add_argument("--quiet", action="store_true", help="print only problems")
    ap.add_argument("--absent-report", action="store_true",
                    help="print the corpus count of every absent term")
    args = ap.parse_args(argv)
    if not args.corpus.is_dir() or not args.dataset.is_file():
        print(f"error: need an existing dataset and corpus root ({args.dataset}, {args.corpus})",
              file=sys.stderr)
        return 2

    corpus = IndexedCorpus(args.corpus)
    indexed = set(corpus.files)
    docs = [rel for rel in corpus.files if rel.startswith("docs/") and rel.endswith(".md")]
    absent = absent_terms()
    problems: list[str] = []
    records: list[dict] = []
    with args.dataset.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(f"line {n}: invalid JSON ({e})")
                continue
            check_case(n, rec, corpus, absent, problems)
            if not isinstance(rec, dict):
                continue
            records.append(rec)
            cid = rec.get("id", f"line {n}")
            for g in rec.get("gold_paths", []):
                if g not in indexed:
                    problems.append(f"{cid}: gold path {g!r} is not an indexed file")
            if "code_only" in rec.get("tags", []):
                for fact in rec.get("key_facts", []):
                    hits = [d for d in docs if fact_in_text(fact, corpus.raw(d))]
                    if hits:
                        problems.append(f"{cid}: code_only fact {fact!r} also occurs in {', '.join(hits)}")

    for key, what in (("id", "id"), ("question", "question")):
        for value, count in Counter(str(r.get(key, "")).strip().lower() for r in records).items():
            if count > 1:
                problems.append(f"{what} used {count} times: {value!r}")
    ids = {r.get("id") for r in records}
    problems += [f"{cid}: has absent terms but is not in the dataset" for cid in absent if cid not in ids]

    for p in problems:
        print(f"PROBLEM {p}")
    if not args.quiet:
        print_summary(args.dataset, records, problems, absent, corpus, absent_report=args.absent_report,
                      extra=f"  indexed files: {len(indexed)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
