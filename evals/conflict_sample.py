"""`python -m evals.conflict_sample --corpora-dir DIR`: the samples conflict-note precision is measured on.

1. **Would-be notes.** Every setting name a corpus states with different values in different files, under
   `find_conflicts`' rules: the note a question naming that setting would get. Each printed line is read and
   labelled (real conflict or not); the count is the sample's size.
2. **Planted docs.** Every setting the corpus's code states (a signature default, a module constant, a class
   attribute) gets a docs line "`name` defaults to `value`" twice over: once with a value the code states
   and once with a value no code states. This checks the parser and the rule's logic (a missed disagreement
   is a defect), not precision: the rule never notes a value some code states, so the agreeing line cannot
   be noted by construction.
3. **Planted conflicts in real docs.** Every setting the docs and the code state alike: the docs' value is
   changed, and `find_conflicts`, given the two files, must note it.

Reads the corpora's `.md` and `.py` files directly (what Lotsman indexes; tests excluded, as `find_conflicts`
excludes them) as whole files, not as the index's chunks; needs no index.
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
    """Planted conflicts in real docs: (settings planted, the ones `find_conflicts` missed)."""
    missed, total = [], 0
    for name, values in sorted(by.items()):
        for value, paths in values.items():
            doc = next((p for p in paths if not is_code_path(p)), None)
            code = next((p for p in paths if is_code_path(p)), None)
            if doc is None or code is None:
                continue
            for variant in (f"`{value}`", f'`"{value}"`', f"={value}", f"= {value}"):  # each from the page as is
                text = files[doc].replace(variant, variant.replace(value, PLANTED))
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


def quoted(value: str) -> str:
    """`value` as a string literal whose quotes `normalized_value` strips (a value may hold one kind)."""
    return f"'{value}'" if '"' in value else f'"{value}"'


def planted_docs(files: dict[str, str], by: dict[str, dict[str, list[str]]]) -> tuple[int, list[str], list[str]]:
    """Planted docs lines: (settings, false notes on a docs line agreeing with the code, conflicts missed on a
    docs line stating a value no code states). Each setting's docs line is read with every code file stating
    the name (whatever value), as an answer quoting them all would."""
    false_notes, missed, total = [], [], 0
    for name, values in sorted(by.items()):
        code_files = list(dict.fromkeys(p for ps in values.values() for p in ps if is_code_path(p)))
        stated = [v for v, ps in values.items() if any(is_code_path(p) for p in ps)]
        if not code_files or not stated:
            continue
        total += 1
        spans = [Span(path=p, start_line=1, end_line=1, text=files[p], row_id=p, layer="C0_SOURCE_CHUNKS")
                 for p in code_files]
        for value, conflict in ((stated[0], False), (PLANTED, True)):
            page = Span(path="docs/planted.md", start_line=1, end_line=1, row_id="doc", layer="D0_DOC_CHUNKS",
                        text=f"The `{name}` setting defaults to `{quoted(value)}`.")
            notes = find_conflicts([page, *spans], [], [name])
            if notes and not conflict:
                false_notes.append(notes[0])
            elif conflict and not notes:
                missed.append(f"{name} = {value}")
    return total, false_notes, missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.conflict_sample", description=__doc__.split("\n")[0])
    parser.add_argument("--corpora-dir", type=Path, required=True, help="folder with one assembled corpus per folder")
    parser.add_argument("--corpus", action="append", help="corpus folder name (default: every folder)")
    args = parser.parse_args(argv)
    if not args.corpora_dir.is_dir():
        print(f"error: corpora folder not found: {args.corpora_dir}", file=sys.stderr)
        return 2
    names = args.corpus or sorted(p.name for p in args.corpora_dir.iterdir() if p.is_dir())
    notes_total = planted_total = missed_total = false_total = agreeing_total = 0
    for name in names:
        root = args.corpora_dir / name
        if not root.is_dir():
            print(f"error: corpus not found: {root}", file=sys.stderr)
            return 2
        files = corpus_files(root)
        by = statements_by_name(files)
        notes = would_be_notes(by)
        total, missed = planted(files, by)
        docs_total, false_notes, docs_missed = planted_docs(files, by)
        print(f"== {name}: {len(files)} files, {sum(len(v) for v in by.values())} stated values; "
              f"would-be notes {len(notes)}; planted conflicts in real docs noted {total - len(missed)}/{total}; "
              f"planted docs lines: {docs_total} settings, false notes {len(false_notes)}, "
              f"conflicts noted {docs_total - len(docs_missed)}/{docs_total}")
        for line in notes:
            print("   note:", line)
        for line in [*missed, *docs_missed]:
            print("   missed:", line)
        for line in false_notes:
            print("   false note:", line)
        notes_total += len(notes)
        planted_total += total + docs_total
        missed_total += len(missed) + len(docs_missed)
        false_total += len(false_notes)
        agreeing_total += docs_total
    print(f"total: would-be notes {notes_total} (label each); planted conflicts noted "
          f"{planted_total - missed_total}/{planted_total}; false notes on docs agreeing with the code "
          f"{false_total}/{agreeing_total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
