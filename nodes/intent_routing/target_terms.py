"""Retrieval-oriented `target_terms` of a query (seed 002 §5 modules/target_terms.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nodes.intent_routing.aliases import AliasIndex, AliasMatch
from nodes.intent_routing.lexicon import HTTP_METHODS, MARKER_WORD_SETS, STOP_WORDS
from nodes.tokens import (
    clean_token,
    is_endpoint_path,
    is_file_name,
    is_identifier,
    is_path_like,
    words_of,
)

MAX_TARGET_TERMS = 7
MIN_TERM_CHARS = 3


@dataclass(frozen=True)
class TargetTermsAnalysis:
    """Output of `extract_target_terms`."""

    target_terms: tuple[str, ...] = ()
    """At most 7 lower-case terms: endpoints → identifiers → aliases → domain terms."""
    endpoint_paths: tuple[str, ...] = ()
    """HTTP paths as written (`/health`), never file names."""
    matched_aliases: tuple[str, ...] = ()
    """Canonical terms of the aliases found in the query."""
    alias_docs: tuple[str, ...] = ()
    """Documents those aliases point at, in match order."""
    identifiers: tuple[str, ...] = ()
    """Identifier-like tokens, lower-case (`apirouter`, `get_db`, `fastapi.routing`)."""
    alias_matches: tuple[AliasMatch, ...] = ()
    """The matches themselves (domain/subdomain for the anchors)."""


def classify_token(raw: str) -> tuple[str, str]:
    """Return `(kind, cleaned)`, kind one of endpoint, file, broken_path, http_method, identifier, text."""
    token = clean_token(raw)
    if token in HTTP_METHODS:
        return "http_method", token
    if is_endpoint_path(token):
        return "endpoint", token
    if is_file_name(token):
        return "file", token
    if is_path_like(token):
        return "broken_path", token
    call_like = raw.rstrip(".,;:!?»\"'").endswith("()")
    if is_identifier(f"{token}()" if call_like else token):
        return "identifier", token
    return "text", token


def is_domain_term(word: str) -> bool:
    """A content word worth retrieving on: long enough, alphabetic, not a stop or marker word."""
    if len(word) < MIN_TERM_CHARS or not word.isalpha():
        return False
    return not any(word in ws for ws in STOP_WORDS) and not any(word in ws for ws in MARKER_WORD_SETS)


def extract_target_terms(normalized_query: str, aliases: AliasIndex | None = None) -> TargetTermsAnalysis:
    """Extract target terms, endpoint paths and alias matches from a normalized query.

    Positive selection: only endpoint paths, identifier-like tokens, alias canonical terms and domain terms
    get in; question, intent, filler and marker words, short tokens and broken path-like tokens stay out.

    Args:
        normalized_query: Output of `normalize_query`.
        aliases: The session's alias index; `None` means no aliases are known.

    Returns:
        The analysis; `target_terms` holds at most `MAX_TARGET_TERMS` deduplicated lower-case terms.
    """
    endpoints: list[str] = []
    identifiers: list[str] = []
    words: list[str] = []
    plain: list[bool] = []  # per word: may it become a domain term (only words of plain text may)
    for raw in normalized_query.split():
        kind, token = classify_token(raw)
        if not token:
            continue
        if kind == "endpoint":
            endpoints.append(token)
        elif kind == "identifier":
            identifiers.append(token.lower())
        # Aliases are looked up in prose and identifiers, and in a file's base name (`cors.md`); an
        # endpoint's segments are left to the endpoint map, so `/users/me` never matches alias `users`.
        if kind == "file":
            token_words = words_of(token.rsplit("/", 1)[-1])[-1:]
        elif kind in ("text", "identifier"):
            token_words = words_of(token)
        else:
            continue
        words.extend(token_words)
        plain.extend([kind == "text"] * len(token_words))
    matches = aliases.find_aliases(words) if aliases is not None and words else []
    covered = {i for m in matches for i in range(m.start, m.end)}
    domain_terms = [w for i, w in enumerate(words) if plain[i] and i not in covered and is_domain_term(w)]
    alias_terms = [m.entry.term for m in matches]
    ordered = [*(e.lower() for e in endpoints), *identifiers, *alias_terms, *domain_terms]
    return TargetTermsAnalysis(
        target_terms=_dedupe(ordered)[:MAX_TARGET_TERMS],
        endpoint_paths=_dedupe(endpoints),
        matched_aliases=_dedupe(alias_terms),
        alias_docs=_dedupe(doc for m in matches for doc in m.entry.docs),
        identifiers=_dedupe(identifiers),
        alias_matches=tuple(matches),
    )


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
