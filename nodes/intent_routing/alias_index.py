"""The router's `AliasIndex` built from a session's own index (catalog ids/titles/tags, entities,
endpoints, file basenames) — never from hard-coded lists."""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from nodes.intent_routing.aliases import AliasEntry, InMemoryAliasIndex
from stores.artifacts import ALIAS_CATALOG_LAYERS
from stores.layers import Layer
from stores.repository import RagRepository
from stores.sessions import RagSession

MAX_DOCS_PER_ALIAS = 3
"""An alias naming more documents than this is too generic to pin retrieval to files: it still counts as
a matched alias, but points at no documents."""

TITLE_WORD_MAX_DF = 0.08
"""A title/heading word in more than this share of documents (e.g. «fastapi», «параметры») says nothing."""

_TITLE_WORD = re.compile(r"[^\W\d_]{4,}", re.UNICODE)

_ENDPOINT = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS|WEBSOCKET)\s+(/[^\s`'\"),]*)", re.I)


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable):
        return [str(v) for v in value if v]
    return []


def alias_entries(rows: Iterable[Mapping[str, Any]], unpinned: Collection[str] = ()
                  ) -> tuple[list[AliasEntry], dict[str, list[str]]]:
    """Alias entries and the endpoint map from catalog-like rows (`path`, `layer`, `title`, `metadata`).

    Pure, so the mapping is unit-tested without a database.

    Args:
        rows: catalog-like rows of the session.
        unpinned: terms that stay aliases but point at no documents and carry no domain — the repository's
            own package names: every question mentions them, so a page titled with one (a skill card, an
            overview) would otherwise be pinned as the answer to every question.
    """
    docs_of: dict[str, dict[str, None]] = defaultdict(dict)
    domains_of: dict[str, set[tuple[str | None, str | None]]] = defaultdict(set)
    endpoints: dict[str, dict[str, None]] = defaultdict(dict)

    def add(term: str, path: str, meta: Mapping[str, Any]) -> None:
        term = " ".join(str(term).lower().split())
        if len(term) < 3 or len(term) > 80:
            return
        docs_of[term][path] = None
        # Only a domain the author declared (frontmatter) may narrow retrieval; a domain guessed from the
        # path ("tutorial") would hard-filter away every other part of the tree.
        declared = meta.get("domain") or None if meta.get("has_frontmatter") else None
        domains_of[term].add((declared, (meta.get("subdomain") or None) if declared else None))

    for row in rows:
        path, layer, meta = row["path"], row["layer"], row.get("metadata") or {}
        if layer == Layer.D1_DOCUMENT_CATALOG:
            for term in [meta.get("id"), row.get("title"), *_as_list(meta.get("tags")),
                         *_as_list(meta.get("entities"))]:
                if term:
                    add(term, path, meta)
            for ep in _as_list(meta.get("endpoints")):
                for _method, ep_path in _ENDPOINT.findall(ep) or [("", ep)]:
                    if ep_path.startswith("/"):
                        endpoints[ep_path][path] = None
            stem = posixpath.splitext(posixpath.basename(path))[0]
            if stem.lower() not in ("index", "readme"):
                add(stem.replace("-", " ").replace("_", " "), path, meta)
        elif layer == Layer.D3_ENTITY_CATALOG:
            # Measured on the fastapi-ru dev set, entity aliases help more (recall@5 0.913 vs 0.901 without
            # them) than the everyday words they sometimes pin ("image") cost.
            add(meta.get("name") or row.get("title") or "", path, meta)
        elif layer in (Layer.C3_ENTRYPOINTS, Layer.D2_FACT_INDEX):
            text = " ".join(str(meta.get(k, "")) for k in ("route_or_command", "object", "route")) + " " + (
                row.get("title") or "")
            for _method, ep_path in _ENDPOINT.findall(text):
                endpoints[ep_path][path] = None
            route = meta.get("route_or_command")
            if layer == Layer.C3_ENTRYPOINTS and isinstance(route, str) and route.startswith("/"):
                endpoints[route][path] = None
    entries = [AliasEntry(term=word) for word in title_words(rows) if word not in docs_of]
    unpinned = {u.lower() for u in unpinned}
    for term, docs in docs_of.items():
        # The term's domain only when every document it points at declares that one: the first document's
        # became a hard retrieval filter that kept the term's other documents out (a test fixture's `rag`
        # kept out the policy page that answers how a profile is chosen).
        declared_domains = domains_of.get(term, set())
        domain, subdomain = next(iter(declared_domains)) if len(declared_domains) == 1 else (None, None)
        if term in unpinned or len(docs) > MAX_DOCS_PER_ALIAS:
            entries.append(AliasEntry(term=term))
        else:
            entries.append(AliasEntry(term=term, docs=tuple(docs), domain=domain, subdomain=subdomain))
    return entries, {k: list(v)[:MAX_DOCS_PER_ALIAS] for k, v in endpoints.items()}


def title_words(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Distinctive words of document titles and headings: they tell the router a request is about the
    documented project, but point at no file (too loose for exact-path seeding)."""
    df: dict[str, int] = defaultdict(int)
    n_docs = 0
    for row in rows:
        if row["layer"] != Layer.D1_DOCUMENT_CATALOG:
            continue
        n_docs += 1
        meta = row.get("metadata") or {}
        text = " ".join([row.get("title") or "", *_as_list(meta.get("headings"))])
        for word in {w.lower() for w in _TITLE_WORD.findall(text)}:
            df[word] += 1
    limit = int(TITLE_WORD_MAX_DF * n_docs) if TITLE_WORD_MAX_DF >= 0 else -1
    limit = max(2, limit) if limit >= 0 else -1
    return sorted(w for w, n in df.items() if n <= limit)


ALIAS_LAYERS = ALIAS_CATALOG_LAYERS
"""The layers the alias index is built from (their rows are stored with each generation: `stores.artifacts`)."""


def alias_index(rows: Iterable[Mapping[str, Any]], packages: Collection[str] = ()) -> InMemoryAliasIndex:
    """The session's alias index from its catalog-like rows (pure; the caller caches it per generation)."""
    entries, endpoints = alias_entries(list(rows), unpinned=packages)
    return InMemoryAliasIndex(entries, endpoints)


def load_alias_index(repository: RagRepository, session: RagSession, packages: Collection[str] = ()
                     ) -> InMemoryAliasIndex:
    """Build the session's alias index from its rows in Postgres (a full read of the catalog layers; the
    graph reads the same rows from the generation's stored artifacts instead)."""
    return alias_index(repository.catalog_rows(session, ALIAS_LAYERS), packages)
