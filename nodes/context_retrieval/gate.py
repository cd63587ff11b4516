"""Relevance gate and token cap (pure; seed 004 "Safety Guards").

The top-1 similarity alone cannot tell an unanswerable question from an answerable one (their ranges
overlap on real corpora), so the gate also asks whether the request's key terms are covered by the
evidence: an answerable question's distinctive words (identifiers, topic nouns) occur in what was found.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from nodes.evidence import EvidenceRow
from nodes.terms import STOPWORDS, WORD, stem

SIMILARITY_PASS = 0.80
"""Best cosine similarity that passes on its own (a near-paraphrase)."""
COVERAGE_PASS = 0.15
"""Share of key terms that must occur in the top evidence (low: English questions over Russian docs
share few words with them; names absent from the index are the sharper test)."""
GATE_TOP_N = 6
CHARS_PER_TOKEN = 3.0
"""Conservative for Cyrillic text and code (real tokenizers give 3–4 chars per token)."""

_WORD = WORD


_NAMED = re.compile(r"(?<![\w/.-])(?:[A-Za-z][A-Za-z0-9_+#]*(?:[.-][A-Za-z0-9_]+)*|[А-ЯЁ][а-яё]+)")
_CYRILLIC = re.compile(r"[А-ЯЁа-яё]")


def named_terms(text: str) -> list[str]:
    """Names in a request: Latin words with a capital after the first letter or a digit (`gRPC`, `OAuth2`,
    `AWS`), capitalised Latin words that are not stop words (`Kafka`), identifiers with an underscore, and
    capitalised Cyrillic words inside a sentence (proper names).

    A name the corpus never mentions is the strongest sign a question is about something else; plain
    words are not checked, since English questions over Russian docs share few plain words with them.
    """
    out: dict[str, None] = {}
    for m in _NAMED.finditer(text):
        word = m.group(0)
        if word.lower() in STOPWORDS or len(word) < 3:
            continue
        before = text[: m.start()].rstrip()
        sentence_start = not before or before[-1] in ".!?:«\"("
        if _CYRILLIC.search(word):
            if word[0].isupper() and not sentence_start:
                out.setdefault(word, None)
            continue
        if ("_" in word.strip("_") or any(ch.isupper() for ch in word[1:]) or any(ch.isdigit() for ch in word)
                or word[0].isupper()):
            out.setdefault(word, None)
    return list(out)


def term_coverage(terms: Sequence[str], rows: Sequence[EvidenceRow]) -> float:
    """Share of `terms` whose stem occurs among the words of the rows' path, title and content."""
    if not terms:
        return 1.0
    vocab: set[str] = set()
    for r in rows:
        for w in _WORD.findall(f"{r.path} {r.title} {r.content}".lower()):
            vocab.add(stem(w))
            for part in w.split("_"):
                vocab.add(stem(part))
    hits = sum(1 for t in terms if stem(t) in vocab)
    return hits / len(terms)


@dataclass(frozen=True)
class GateDecision:
    """Whether retrieval found something relevant, and why."""

    passed: bool
    reason: str
    coverage: float
    best_similarity: float


def relevance_gate(rows: Sequence[EvidenceRow], terms: Sequence[str], *, similarity_pass: float = SIMILARITY_PASS,
                   coverage_pass: float = COVERAGE_PASS, absent_names: Sequence[str] = (),
                   named_files: Sequence[str] = ()) -> GateDecision:
    """Decide whether the fused rows answer anything: an explicit "nothing relevant" beats noise.

    Args:
        rows: fused evidence, best first.
        terms: the request's key terms.
        absent_names: names from the request (`named_terms`) that occur nowhere in the index.
        named_files: file names the user wrote; finding one passes the gate (hints derived from aliases
            do not: an alias match alone says little about whether the question is answerable).
    """
    if not rows:
        return GateDecision(False, "no rows", 0.0, 0.0)
    distances = [r.scores["distance"] for r in rows if "distance" in r.scores]
    best = 1.0 - min(distances) if distances else 0.0
    top = list(rows[:GATE_TOP_N])
    coverage = term_coverage(terms, top)
    wanted = [f.lower().lstrip("./") for f in named_files if f.strip()]
    if wanted and any(r.path.lower().endswith(f) for r in rows[:GATE_TOP_N] for f in wanted):
        return GateDecision(True, "the file the user named", coverage, best)
    if absent_names:
        return GateDecision(False, f"not in the index: {', '.join(absent_names)}", coverage, best)
    if terms and coverage >= coverage_pass:  # no key terms at all ("how does it work?") proves nothing
        return GateDecision(True, f"key terms covered ({coverage:.2f})", coverage, best)
    if best >= similarity_pass:
        return GateDecision(True, f"high similarity ({best:.2f})", coverage, best)
    return GateDecision(False, f"key terms not covered ({coverage:.2f}) and similarity {best:.2f}", coverage, best)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def apply_token_cap(rows: Sequence[EvidenceRow], cap: int) -> list[EvidenceRow]:
    """Keep rows in fused order while their content fits `cap` tokens; the first row is always kept
    (cut to fit)."""
    kept: list[EvidenceRow] = []
    used = 0
    for row in rows:
        cost = estimate_tokens(row.content) + estimate_tokens(row.path) + 8
        if used + cost > cap:
            if not kept:
                room = max(0, int((cap - 8) * CHARS_PER_TOKEN) - len(row.path))
                kept.append(row.model_copy(update={"content": row.content[:room]}))
            continue
        kept.append(row)
        used += cost
    return kept
