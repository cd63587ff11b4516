"""`python -m evals.conflict_sample --corpora-dir DIR`: the samples conflict-note precision is measured on.

1. **Would-be notes.** Every setting name a corpus states with different values in different files, under
   `find_conflicts`' rules: the note a question naming that setting would get. Each printed line is read and
   labelled (real conflict or not); the count is the sample's size.
2. **Planted conflicts.** Every setting the corpus's docs and code state with the same value; the docs'
   value is changed and `find_conflicts`, given the two files, must note it (a rule that notes nothing would
   score perfect precision on 1).

Reads the corpora's files directly (tests excluded, as `find_conflicts` excludes them); needs no index.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from nodes.context_analysis.conflicts import disagreement, file_statements, find_conflicts, is_code_path
from nodes.context_analysis.models import Span
from nodes.context_retrieval.merge import is_test_path

PLANTED = "12345"


def corpus_files(root: Path) -> dict[str, str]:
    """Path (relative) → text of every readable `.md`/`.py` file under `root` that is not a test."""
    out = {}
    for p in sorted(root.rglob("*")):
        parts = set(p.relative_to(root).parts)
        if p.suffix not in (".md", ".py") or not p.is_file() or parts & {".venv", ".data", ".git", "node_modules"}:
            continue
        rel = p.relative_to(root).as_posix()
        if is_test_path(rel):
            continue
        try:
            out[rel] = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return out


def statements_by_name(files: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """Setting name (its last dotted part, lower-cased) → value → the files stating it."""
    by: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path, text in files.items():
        for name, value in file_statements(text, path):
            paths = by[name.rsplit(".", 1)[-1].lower()][value]
            if path not in paths:
                paths.append(path)
    return by


def would_be_notes(by: dict[str, dict[str, list[str]]]) -> list[str]:
    return [f"{name}: " + " ≠ ".join(f"{v} ({p})" for v, p in shown[:3])
            for name, values in sorted(by.items()) if (shown := disagreement(values))]


def planted(files: dict[str, str], by: dict[str, dict[str, list[str]]]) -> tuple[int, list[str]]:
    """(settings planted, the ones `find_conflicts` missed)."""
    missed, total = [], 0
    for name, values in sorted(by.items()):
        for value, paths in values.items():
            doc = next((p for p in paths if not is_code_path(p)), None)
            code = next((p for p in paths if is_code_path(p)), None)
            if doc is None or code is None:
                continue
            text = files[doc]
            for variant in (f"`{value}`", f'`"{value}"`', f"={value}", f"= {value}", value):
                text = text.replace(variant, variant.replace(value, PLANTED))
                if (name, PLANTED) in [(n.rsplit(".", 1)[-1].lower(), v) for n, v in file_statements(text, doc)]:
                    break
            else:
                continue  # the value could not be changed where it is stated
            total += 1
            spans = [Span(path=doc, start_line=1, end_line=1, text=text, row_id="doc", layer="D0_DOC_CHUNKS"),
                     Span(path=code, start_line=1, end_line=1, text=files[code], row_id="code",
                          layer="C0_SOURCE_CHUNKS")]
            if not find_conflicts(spans, [], [name]):
                missed.append(f"{name} = {value} ({doc} / {code})")
    return total, missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.conflict_sample", description=__doc__.split("\n")[0])
    parser.add_argument("--corpora-dir", type=Path, required=True, help="folder with one assembled corpus per folder")
    parser.add_argument("--corpus", action="append", help="corpus folder name (default: every folder)")
    args = parser.parse_args(argv)
    if not args.corpora_dir.is_dir():
        print(f"error: corpora folder not found: {args.corpora_dir}", file=sys.stderr)
        return 2
    names = args.corpus or sorted(p.name for p in args.corpora_dir.iterdir() if p.is_dir())
    notes_total = planted_total = missed_total = 0
    for name in names:
        root = args.corpora_dir / name
        if not root.is_dir():
            print(f"error: corpus not found: {root}", file=sys.stderr)
            return 2
        files = corpus_files(root)
        by = statements_by_name(files)
        notes = would_be_notes(by)
        total, missed = planted(files, by)
        print(f"== {name}: {len(files)} files, {sum(len(v) for v in by.values())} stated values; "
              f"would-be notes {len(notes)}; planted conflicts noted {total - len(missed)}/{total}")
        for line in notes:
            print("   note:", line)
        for line in missed:
            print("   missed:", line)
        notes_total += len(notes)
        planted_total += total
        missed_total += len(missed)
    print(f"total: would-be notes {notes_total} (label each); planted conflicts noted "
          f"{planted_total - missed_total}/{planted_total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
