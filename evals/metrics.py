"""Eval metrics (SPEC §7, made honest by issue 12) as pure functions over per-case results.

A metric that has nothing to measure on a set — abstention precision when nothing was abstained, a
citation metric when nothing was cited — is None ("n/a"), never 1.0, and averages skip it.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from evals.answer_text import cited_paths, listed_files, own_text, passages

_PUNCT = re.compile(r"[^\w]+", re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r"--?[\w-]+|\w+(?:\.\w+)*(?:\(\))?")
_PATH_FACT = re.compile(r"^[\w.-]+(?:/[\w.-]+)*\.\w+$|^[\w.-]+(?:/[\w.-]+)+/?$")


# --- retrieval -------------------------------------------------------------------------------------
def distinct_files(paths: Iterable[str]) -> list[str]:
    """Retrieved files in rank order, each once."""
    return list(dict.fromkeys(paths))


def recall_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of gold files among the first k distinct retrieved files."""
    if not gold:
        return 0.0
    top = set(distinct_files(retrieved)[:k])
    return sum(1 for g in set(gold) if g in top) / len(set(gold))


def reciprocal_rank(retrieved: Sequence[str], gold: Sequence[str]) -> float:
    """1/rank of the first gold file among distinct retrieved files (0 when none)."""
    gold_set = set(gold)
    for rank, path in enumerate(distinct_files(retrieved), 1):
        if path in gold_set:
            return 1.0 / rank
    return 0.0


def has_code_gold(gold: Sequence[str]) -> bool:
    """The case counts for code-gold recall@5: one of its gold files is Python."""
    return any(g.endswith(".py") for g in gold)


# --- answers ---------------------------------------------------------------------------------------
def fold(text: str) -> str:
    """Lower-case, punctuation and whitespace folded to single spaces."""
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def contains_words(text: str, phrase: str) -> bool:
    """The folded phrase occurs in the folded text as whole words (`422` is not in `4220`)."""
    p = fold(phrase)
    return bool(p) and f" {p} " in f" {fold(text)} "


def fact_covered(fact: str, answer: str, *, listed: Sequence[str] = ()) -> bool:
    """A key fact is covered when its words occur, whole and in order, in the answer's own text.

    `answer` must already be the answer's own text (`evals.answer_text.own_text`). A fact that is itself a
    path may instead match one of `listed` (the files of a FIND_FILES answer), whole or as a path suffix.
    """
    if _PATH_FACT.match(fact.strip()) and any(p == fact.strip() or p.endswith("/" + fact.strip().lstrip("/"))
                                              for p in listed):
        return True
    return contains_words(answer, fact)


def key_fact_coverage(facts: Sequence[str], answer: str, *, abstained: bool = False, find_files: bool = False,
                      known_paths: Iterable[str] = ()) -> float | None:
    """Share of key facts the answer states in its own text; 0 when it abstains, None with no facts.

    Citations, file paths of retrieved files, and the sources / nearest-files lists give no credit; a
    path-shaped fact may match the listed files of a FIND_FILES answer (`find_files=True`).
    """
    if not facts:
        return None
    if abstained:
        return 0.0
    paths = list(known_paths)
    text = own_text(answer, paths, file_answer=find_files)
    listed = listed_files(answer, paths) if find_files else []
    return sum(1 for f in facts if fact_covered(f, text, listed=listed)) / len(facts)


def fact_covered_legacy(fact: str, answer: str) -> bool:
    """The SPEC §7 rule before issue 12: the folded fact is a substring of the whole answer (citations
    and file lists included), or ≥ 60% of its words (3+ letters, compared by their first 5 letters) occur."""
    f, a = fold(fact), fold(answer)
    if f and f in a:
        return True
    words = [w for w in _WORD.findall(f) if len(w) >= 3]
    if not words:
        return False
    answer_stems = {w[:5] for w in _WORD.findall(a)}
    return sum(1 for w in words if w[:5] in answer_stems) / len(words) >= 0.6


def key_fact_coverage_legacy(facts: Sequence[str], answer: str) -> float:
    """Kept only to show old and new numbers side by side once."""
    if not facts:
        return 1.0
    return sum(1 for f in facts if fact_covered_legacy(f, answer)) / len(facts)


def lead_citation_in_gold(citations: Sequence[dict[str, Any]], answer: str, gold: Sequence[str]) -> float | None:
    """1.0 when the answer's first cited file is a gold file, 0.0 when not, None when nothing is cited."""
    first = citations[0]["path"] if citations else next(iter(cited_paths(answer)), None)
    if first is None:
        return None
    return 1.0 if first in set(gold) else 0.0


def citations_removed_share(removed: int | None, kept: int) -> float | None:
    """Share of the composer's citations that the verifier removed; None when unknown or none were made."""
    if removed is None or removed + kept == 0:
        return None
    return removed / (removed + kept)


def _identifier_shaped(token: str) -> bool:
    # snake_case, CamelCase / APIRouter, dotted.names, --flags, calls(): words no prose would use.
    word = token.strip("-_.()")
    return len(word) >= 3 and (token.startswith("-") or "_" in word or "." in word or token.endswith("()")
                               or (any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)))


def gold_identifiers(facts: Sequence[str]) -> list[str]:
    """Identifier-shaped tokens named in the key facts (`allow_origins` of `allow_origins=["*"]`)."""
    found = [m.group(0).removesuffix("()") for f in facts for m in _TOKEN.finditer(f)
             if _identifier_shaped(m.group(0))]
    return list(dict.fromkeys(found))


def passage_precision(answer: str, facts: Sequence[str], known_paths: Iterable[str] = ()) -> float | None:
    """Share of the answer's quoted passages that contain a key fact or a gold identifier (None: no quote)."""
    quoted = passages(answer, list(known_paths))
    if not quoted:
        return None
    needles = list(facts) + gold_identifiers(facts)
    return sum(1 for q in quoted if any(contains_words(q, n) for n in needles)) / len(quoted)


# --- set level -------------------------------------------------------------------------------------
def mean_or_none(values: Iterable[float | None]) -> float | None:
    """Mean of the defined values; None when there is none."""
    defined = [v for v in values if v is not None]
    return statistics.fmean(defined) if defined else None


def abstention_scores(cases: Sequence[dict[str, Any]]) -> tuple[float | None, float | None]:
    """(precision, recall) of abstaining, unanswerable cases being the positive class.

    Precision is None when nothing was abstained; recall is None when there is no unanswerable case.
    """
    abstained = [c for c in cases if c["abstained"]]
    unanswerable = [c for c in cases if not c["answerable"]]
    tp = sum(1 for c in abstained if not c["answerable"])
    return (tp / len(abstained) if abstained else None, tp / len(unanswerable) if unanswerable else None)


def percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    idx = (len(ordered) - 1) * pct / 100
    lo, hi = int(idx), min(int(idx) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (idx - lo)


def latency_summary(per_case: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per node p50/p95 in ms (plus `total`)."""
    nodes: dict[str, list[float]] = {}
    for timings in per_case:
        for node, ms in timings.items():
            nodes.setdefault(node, []).append(ms)
        nodes.setdefault("total", []).append(sum(timings.values()))
    return {n: {"p50": round(percentile(v, 50), 2), "p95": round(percentile(v, 95), 2)} for n, v in nodes.items()}
