"""Where a repository keeps its documentation and its front doors, discovered from its own paths.

Seed 000's prefixes (`docs/`, `docs/api/`, ...) describe one house layout. Real repositories keep their
markdown at the root (README, CHANGELOG, design notes), under `doc/`, `specs/` or next to the code, or
have none at all. Prefixes are therefore translated to the session's layout before they reach SQL, and
overview questions get the landing pages (root README/index, top-level package `__init__`) as evidence.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

DOC_SUFFIXES = (".md", ".markdown")
LANDING_DOC_NAMES = ("readme", "index", "overview", "introduction", "intro")
MAX_LANDING = 4
MAX_OVERVIEW_TOPICS = 2


@dataclass(frozen=True)
class RepoLayout:
    """The session's documentation roots and landing pages."""

    paths: frozenset[str] = frozenset()
    """Every indexed path."""
    doc_roots: tuple[str, ...] = ()
    """Top-level folders holding markdown (`docs/`), `""` when markdown sits at the root too."""
    landing: tuple[str, ...] = field(default=())
    """Front doors, best first: shallowest README/index pages, then top-level package `__init__.py`."""
    packages: tuple[str, ...] = ()
    """Names of the top-level packages (`fastapi`, `click`): every page mentions them, so they point nowhere."""


def _depth(path: str) -> int:
    return path.count("/")


def _stem(path: str) -> str:
    return posixpath.splitext(posixpath.basename(path))[0].lower()


def discover_layout(paths: Iterable[str]) -> RepoLayout:
    """Doc roots and landing pages of a repository from its indexed paths (pure)."""
    all_paths = frozenset(paths)
    docs = sorted(p for p in all_paths if p.lower().endswith(DOC_SUFFIXES))
    roots = dict.fromkeys(p.split("/", 1)[0] + "/" if "/" in p else "" for p in docs)
    pages = sorted((p for p in docs if _stem(p) in LANDING_DOC_NAMES),
                   key=lambda p: (_depth(p), LANDING_DOC_NAMES.index(_stem(p)), p))
    inits = sorted((p for p in all_paths if posixpath.basename(p) == "__init__.py" and _depth(p) <= 2),
                   key=lambda p: (_depth(p), p))
    shallowest = _depth(inits[0]) if inits else 0
    packages = [p for p in inits if _depth(p) == shallowest]
    landing = [*pages[:2], *packages[:2]]
    names = tuple(sorted({posixpath.basename(posixpath.dirname(p)).lower() for p in packages}))
    return RepoLayout(paths=all_paths, doc_roots=tuple(sorted(roots)), landing=tuple(landing[:MAX_LANDING]),
                      packages=names)


def translate_prefixes(prefixes: Sequence[str], layout: RepoLayout | None) -> list[str]:
    """Seed prefixes that exist in the repository; when none does, its documentation roots instead.

    An empty result means "no prefix filter" (the repository's markdown sits at the root).
    """
    if layout is None or not layout.paths or not prefixes:
        return list(prefixes)
    present = [p for p in prefixes if any(path.startswith(p) for path in layout.paths)]
    if present:
        return present
    return [] if "" in layout.doc_roots else list(layout.doc_roots)


_SELF_REFERENCE = re.compile(
    r"\b(?:this|the)\s+(?:library|package|project|tool|framework|repo(?:sitory)?|codebase)\b"
    r"|\bэт(?:от|а|о|ой|ого|ом|у|им)\s+(?:библиотек|пакет|проект|инструмент|фреймворк|репозитори)\w*"
    r"|\bчто\s+(?:это\s+)?за\s+(?:библиотек|пакет|проект|инструмент|фреймворк)\w*",
    re.IGNORECASE,
)


def overview_request(query: str, topic_terms: Sequence[str], layout: RepoLayout | None) -> bool:
    """An overview question: about the repository itself and about nothing narrower (at most two topic
    words besides the package's name) — "What is atlas and who is it for?", not "What exit code does a
    click program return on a usage error?"."""
    packages = set(layout.packages) if layout else set()
    narrower = [t for t in topic_terms if t.lower() not in packages]
    return about_the_project(query, layout) and len(narrower) <= MAX_OVERVIEW_TOPICS


def without_self_reference(text: str) -> str:
    """`text` with "this library" / «этот проект» taken out (they point at the repository, not at an
    earlier turn)."""
    return _SELF_REFERENCE.sub(" ", text)


def about_the_project(query: str, layout: RepoLayout | None) -> bool:
    """The request asks about the repository itself: it names a top-level package or says "this library",
    «этот проект», «что это за библиотека» — the landing pages answer it."""
    if says_this_project(query):
        return True
    words = {w.lower() for w in re.findall(r"[\w-]+", query)}
    words |= {part for w in words for part in w.split("-")}  # "atlas-pm" names the package "atlas"
    return bool(layout and words & set(layout.packages))


def says_this_project(query: str) -> bool:
    """The request says "this library", «этот проект», «что это за пакет» in so many words."""
    return bool(_SELF_REFERENCE.search(query))
