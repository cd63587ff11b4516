"""Aliases and the endpoint map of a session's index: the `AliasIndex` protocol and its in-memory form."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from nodes.intent_routing.lexicon import COMMON_WORDS, STOP_WORDS
from nodes.tokens import stem, words_of

MIN_ALIAS_CHARS = 3
_COMMON_STEMS = frozenset(stem(w) for w in COMMON_WORDS)


@dataclass(frozen=True)
class AliasEntry:
    """One alias: a canonical term of the index and the documents it points at.

    Args:
        term: Canonical term, stored lower-case (`"cors"`, `"apirouter"`, `"фоновые задачи"`).
        docs: Document paths the term points at; they become `target_doc_hints`.
        domain: Process domain of those documents, if the catalog knows it.
        subdomain: Process subdomain, if known.
        forms: Other surface forms that mean the same term (`"Cross-Origin Resource Sharing"`).
    """

    term: str
    docs: tuple[str, ...] = ()
    domain: str | None = None
    subdomain: str | None = None
    forms: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        # Accept lists from JSON/DB rows while keeping the entry hashable and immutable.
        object.__setattr__(self, "term", " ".join(self.term.lower().split()))
        object.__setattr__(self, "docs", tuple(self.docs))
        object.__setattr__(self, "forms", tuple(self.forms))


@dataclass(frozen=True)
class AliasMatch:
    """An alias found in a query, with the span of query words it covers (`start` inclusive, `end` not)."""

    entry: AliasEntry
    start: int
    end: int


@runtime_checkable
class AliasIndex(Protocol):
    """What the router needs from a session's index: alias lookup over query words and the endpoint map."""

    def find_aliases(self, words: Sequence[str]) -> list[AliasMatch]:
        """Aliases occurring in `words` (lower-case query words), in query order, longest match first."""
        ...

    def endpoint_docs(self, path: str) -> list[str]:
        """Document paths that describe the HTTP path `path` (`/items/5` matches `/items/{item_id}`)."""
        ...


class InMemoryAliasIndex:
    """`AliasIndex` over plain lists, precomputed for fast lookup (a first-stem → aliases map).

    Args:
        aliases: Alias entries; entries with the same `term` are merged (docs and forms united).
        endpoints: `{"/path": ["docs/a.md", ...]}`; `{param}` segments match any one segment.

    Forms shorter than 3 characters, single common words («python», «документация») and forms made only of
    question, intent or filler words («как сделать») are never registered: they would match nearly any query.
    """

    def __init__(
        self, aliases: Iterable[AliasEntry] = (), endpoints: Mapping[str, Sequence[str]] | None = None
    ):
        self.entries: dict[str, AliasEntry] = {}
        for entry in aliases:
            self.entries[entry.term] = _merge(self.entries.get(entry.term), entry)
        self._by_first_stem: dict[str, list[tuple[tuple[str, ...], AliasEntry]]] = defaultdict(list)
        for entry in self.entries.values():
            for key in {k for k in map(_alias_key, (entry.term, *entry.forms)) if k}:
                self._by_first_stem[key[0]].append((key, entry))
        for bucket in self._by_first_stem.values():
            bucket.sort(key=lambda item: -len(item[0]))  # longest alias wins at a position
        self.endpoints: dict[str, list[str]] = {}
        for path, docs in (endpoints or {}).items():
            path_key = _endpoint_key(path)
            self.endpoints[path_key] = list(dict.fromkeys([*self.endpoints.get(path_key, []), *docs]))
        self._templates = [(_template_pattern(k), docs) for k, docs in self.endpoints.items() if "{" in k]

    @classmethod
    def from_entries(
        cls,
        aliases: Iterable[AliasEntry | Mapping[str, Any]] = (),
        endpoints: Mapping[str, Sequence[str]] | None = None,
    ) -> InMemoryAliasIndex:
        """Build from `AliasEntry` objects or dicts with the same keys (`{"term", "docs", "domain", ...}`)."""
        entries = [a if isinstance(a, AliasEntry) else AliasEntry(**a) for a in aliases]
        return cls(entries, endpoints)

    def find_aliases(self, words: Sequence[str]) -> list[AliasMatch]:
        stems = [stem(w) for w in words]
        found: list[AliasMatch] = []
        seen: set[str] = set()
        i = 0
        while i < len(stems):
            for key, entry in self._by_first_stem.get(stems[i], ()):
                if tuple(stems[i : i + len(key)]) == key:
                    if entry.term not in seen:
                        seen.add(entry.term)
                        found.append(AliasMatch(entry, i, i + len(key)))
                    i += len(key)
                    break
            else:
                i += 1
        return found

    def endpoint_docs(self, path: str) -> list[str]:
        key = _endpoint_key(path)
        if key in self.endpoints:
            return list(self.endpoints[key])
        return [doc for pattern, docs in self._templates if pattern.match(key) for doc in docs]


def _merge(old: AliasEntry | None, new: AliasEntry) -> AliasEntry:
    if old is None:
        return new
    return AliasEntry(
        term=old.term,
        docs=tuple(dict.fromkeys((*old.docs, *new.docs))),
        domain=old.domain or new.domain,
        subdomain=old.subdomain or new.subdomain,
        forms=tuple(dict.fromkeys((*old.forms, *new.forms))),
    )


def _alias_key(surface: str) -> tuple[str, ...] | None:
    words = words_of(surface)
    if len("".join(words)) < MIN_ALIAS_CHARS or all(w.isdigit() for w in words):
        return None
    stems = tuple(stem(w) for w in words)
    if all(any(w in ws for ws in STOP_WORDS) for w in words):
        return None  # «как сделать», «what is»: no subject at all
    # A lone common word («python») matches nearly every query; a phrase of them («python types») is a title.
    return None if len(stems) == 1 and stems[0] in _COMMON_STEMS else stems


def _endpoint_key(path: str) -> str:
    path = path.split("?", 1)[0].strip().lower()
    return path.rstrip("/") if len(path) > 1 else path


def _template_pattern(key: str) -> re.Pattern[str]:
    parts = (
        r"[^/]+" if seg.startswith("{") and seg.endswith("}") else re.escape(seg) for seg in key.split("/")
    )
    return re.compile("^" + "/".join(parts) + "$")
