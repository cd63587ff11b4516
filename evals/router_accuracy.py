"""Fallback-router accuracy on a labelled set: `python -m evals.router_accuracy [--dataset P] [--corpus P]`.

Routes every query with `IntentRouter(llm=None)` twice: with no aliases, and with aliases drawn from the
fastapi-ru docs (titles, heading ids, file names, backticked class names: what a session's catalog would
hold). Prints both accuracies and the misses.

`--report RUN.json [RUN.json ...]` prints instead the route accuracy per corpus of eval runs (`python -m
evals ... --out RUN.json`), each case scored against the `expected_route` of the dataset files as they are
now (`--labels DIR`, default `evals/datasets`), so one run can be read before and after a relabelling.

`seed_002_route` is what seed 002's fallback decides from a request's features (§4 step 10): file markers →
`DOC_EXPLAIN/FIND_FILES`; docs signals (endpoint paths, doc hints, aliases, entities, files, identifiers, any
marker group) → `DOC_EXPLAIN/SUMMARY`; otherwise `GENERAL_QA`. A dev case's `expected_route` is that
decision for the request the graph routes (a follow-up's standalone request), with the session's aliases.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nodes.intent_routing import AliasEntry, InMemoryAliasIndex, IntentRouter
from nodes.intent_routing.features import QueryFeatures

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = ROOT / "evals" / "datasets" / "router_labelled.jsonl"
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpora" / "fastapi-ru"
_TITLE_RE = re.compile(r"^#\s+(.+?)\s*(?:\{\s*#([\w-]+)\s*\})?\s*$", re.M)
_CLASS_RE = re.compile(r"`([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)`")
_TITLE_SPLIT_RE = re.compile(r"\s+[—–-]\s+|[(),:«»]")
MAX_DOCS_PER_ENTITY = 3  # an entity points at the few docs that talk about it most


def load_cases(path: Path) -> list[dict[str, str]]:
    """Read `{"query", "expected_route"}` lines."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def aliases_from_markdown(corpus: Path) -> InMemoryAliasIndex:
    """Build an alias index from markdown docs, approximating what indexing puts in the catalog."""
    entries: list[AliasEntry] = []
    mentions: dict[str, Counter[str]] = defaultdict(Counter)
    for path in sorted(corpus.rglob("*.md")):
        rel = path.relative_to(corpus).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        slug = (path.parent.name if path.stem == "index" else path.stem).replace("-", " ")
        title_parts: list[str] = []
        forms = [slug]
        if match := _TITLE_RE.search(text):
            parts = [p.strip() for p in _TITLE_SPLIT_RE.split(match.group(1)) if p.strip()]
            title_parts = [p for p in parts if len(p.split()) <= 4]  # long titles never occur in a question
            forms += [match.group(2).replace("-", " ")] if match.group(2) else []
        # The title's first short part is the canonical term, as a catalog title would be.
        term = title_parts[0] if title_parts else slug
        entries.append(AliasEntry(term, (rel,), forms=(*title_parts, *forms)))
        for name in _CLASS_RE.findall(text):
            mentions[name][rel] += 1
    for name, docs in mentions.items():
        entries.append(AliasEntry(name, tuple(d for d, _ in docs.most_common(MAX_DOCS_PER_ENTITY))))
    return InMemoryAliasIndex(entries)


def accuracy(router: IntentRouter, cases: list[dict[str, str]]) -> tuple[float, list[tuple[str, str, str]]]:
    """Share of cases routed to `expected_route`, and the misses as (query, expected, got)."""
    misses = []
    for case in cases:
        got = router.route(case["query"]).route_label
        if got != case["expected_route"]:
            misses.append((case["query"], case["expected_route"], got))
    return 1 - len(misses) / len(cases), misses


def seed_002_route(features: QueryFeatures) -> str:
    """Seed 002's fallback decision (§4 step 10, §5 routers/fallback.py) as a dataset label.

    Our fallback adds two rules in front of it (a relation phrase with a named target → SUMMARY even with
    file markers; an explicit "in general" phrase → GENERAL_QA despite incidental aliases): where they fire,
    the router and the label may disagree, and route accuracy counts it.
    """
    if not features.normalized_query:
        return "GENERAL_QA"
    if features.markers.file_markers:
        return "DOC_EXPLAIN/FIND_FILES"
    if features.has_docs_signals:
        return "DOC_EXPLAIN/SUMMARY"
    return "GENERAL_QA"


def report_route_accuracy(report: dict[str, Any], labels: Mapping[str, str] | None = None) -> dict[str, float]:
    """Route accuracy per corpus of one eval run (`{"corpora": {name: {"results": [...]}}}`), each case's
    route against `labels[id]` when given, else against the label the run recorded."""
    out: dict[str, float] = {}
    for corpus, run in report["corpora"].items():
        results = run["results"]
        if results:
            hits = [r["route"] == (labels or {}).get(r["id"], r["expected_route"]) for r in results]
            out[corpus] = sum(hits) / len(hits)
    return out


def dataset_labels(folder: Path) -> dict[str, str]:
    """`expected_route` by case id over the dev datasets of a folder (held-out files are not read)."""
    labels: dict[str, str] = {}
    for path in sorted(folder.glob("*.jsonl")):
        if path.stem.endswith("_holdout") or path.name == DEFAULT_DATASET.name:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                if "id" in case and "expected_route" in case:
                    labels[case["id"]] = case["expected_route"]
    return labels


def main(argv: list[str] | None = None) -> int:
    """Print fallback-router accuracy on the labelled set."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="fastapi-ru corpus root")
    parser.add_argument("--report", type=Path, nargs="+", help="eval runs: route accuracy per corpus")
    parser.add_argument("--labels", type=Path, default=ROOT / "evals" / "datasets",
                        help="folder of the dev datasets whose expected_route --report scores against")
    args = parser.parse_args(argv)
    if args.report:
        labels = dataset_labels(args.labels)
        for path in args.report:
            try:
                report = json.loads(path.read_text(encoding="utf-8"))
                recorded, now = report_route_accuracy(report), report_route_accuracy(report, labels)
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                print(f"error: {path}: not an eval run's JSON ({type(exc).__name__}: {exc})"[:300], file=sys.stderr)
                return 2
            print(path.name)
            for corpus in recorded:
                print(f"  {corpus:14s} route accuracy {recorded[corpus]:.3f} (labels of the run) "
                      f"{now[corpus]:.3f} (labels now)")
        return 0
    cases = load_cases(args.dataset)
    runs = [("no aliases", IntentRouter())]
    docs = args.corpus / "docs"
    if docs.is_dir():
        index = aliases_from_markdown(docs)
        runs.append((f"corpus aliases ({len(index.entries)} terms)", IntentRouter(aliases=index)))
    else:
        print(f"corpus not found at {args.corpus}: pass --corpus to add the alias run")
    print(f"{len(cases)} cases from {args.dataset.name}")
    for name, router in runs:
        score, misses = accuracy(router, cases)
        print(f"fallback router, {name}: accuracy {score:.3f} ({len(cases) - len(misses)}/{len(cases)})")
        for query, expected, got in misses:
            print(f"  miss: {query!r} expected {expected}, got {got}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
