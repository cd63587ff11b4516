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
from evals.facts import fact_in_text

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


def code_gold(gold: Sequence[str]) -> list[str]:
    """The Python files among a case's gold files: a case with any counts for code-gold recall@5."""
    return [g for g in gold if g.endswith(".py")]


def code_gold_recall_at_k(retrieved: Sequence[str], gold: Sequence[str], k: int) -> float | None:
    """Recall@k of the case's `.py` gold files only (a mixed case's docs gold does not count); None without."""
    code = code_gold(gold)
    return recall_at_k(retrieved, code, k) if code else None


# --- answers ---------------------------------------------------------------------------------------
def fact_covered(fact: str, answer: str, *, listed: Sequence[str] = ()) -> bool:
    """A key fact is covered when the answer's own text states it (`evals.facts.fact_in_text`).

    `answer` must already be the answer's own text (`evals.answer_text.own_text`). A fact that is itself a
    path may instead match one of `listed` (the files of a FIND_FILES answer), whole or as a path suffix.
    """
    if _PATH_FACT.match(fact.strip()) and any(p == fact.strip() or p.endswith("/" + fact.strip().lstrip("/"))
                                              for p in listed):
        return True
    return fact_in_text(fact, answer)


def key_fact_coverage(facts: Sequence[str], answer: str, *, abstained: bool = False, find_files: bool = False,
                      known_paths: Iterable[str] = (), labels: Iterable[str] = ()) -> float | None:
    """Share of key facts the answer states in its own text; 0 when it abstains, None with no facts.

    Citations, file paths of retrieved files, the sources / nearest-files lists and the labels the composer
    builds from headings and symbol names (`labels`: the titles and sections it may print) give no credit;
    a path-shaped fact may match the listed files of a FIND_FILES answer (`find_files=True`).
    """
    if not facts:
        return None
    if abstained:
        return 0.0
    paths = list(known_paths)
    text = own_text(answer, paths, file_answer=find_files, labels=labels)
    listed = listed_files(answer, paths) if find_files else []
    return sum(1 for f in facts if fact_covered(f, text, listed=listed)) / len(facts)


def evidence_key_fact_recall(facts: Sequence[str], evidence_texts: Sequence[str] | None) -> float | None:
    """Share of key facts stated in some evidence row's text: the ceiling of an LLM answer (SPEC §7).

    None with no facts or when the rows' text is not at hand (LangSmith outputs carry locations only).
    """
    if not facts or evidence_texts is None:
        return None
    return sum(1 for f in facts if any(fact_in_text(f, t) for t in evidence_texts)) / len(facts)


def lead_citation_in_gold(citations: Sequence[dict[str, Any]], answer: str, gold: Sequence[str], *,
                          abstained: bool = False) -> float:
    """1.0 when the answer's first cited file is a gold file; 0.0 when it is not, when nothing is cited and
    when the answer abstains (a refusal earns no citation credit)."""
    if abstained:
        return 0.0
    first = citations[0]["path"] if citations else next(iter(cited_paths(answer)), None)
    return 1.0 if first is not None and first in set(gold) else 0.0


def citations_removed_share(removed: int | None, kept: int) -> float | None:
    """Share of the composer's citations that the verifier removed; None when unknown or none were made."""
    if removed is None or removed + kept == 0:
        return None
    return removed / (removed + kept)


# A token of a key fact: `--flag`, `Content-Type`, `dotted.name()`, `snake_case` (hyphens inside a word stay).
_TOKEN = re.compile(r"-{0,2}\w[\w-]*(?:\.\w[\w-]*)*(?:\(\))?")


def _identifier_shaped(token: str) -> bool:
    # snake_case, CamelCase / APIRouter / Content-Type, dotted.names, --flags, calls(): words no prose would use.
    word = token.strip("-_.()")
    return len(word) >= 3 and (token.startswith("-") or "_" in word or "." in word or token.endswith("()")
                               or (any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)))


def gold_identifiers(facts: Sequence[str]) -> list[str]:
    """Identifier-shaped tokens named in the key facts (`allow_origins` of `allow_origins=["*"]`).

    A hyphenated word is one token: `Content-Type` names the header, never the stray word `type`."""
    found = [m.group(0).removesuffix("()") for f in facts for m in _TOKEN.finditer(f)
             if _identifier_shaped(m.group(0))]
    return list(dict.fromkeys(found))


def passage_precision(answer: str, facts: Sequence[str], known_paths: Iterable[str] = (), *,
                      abstained: bool = False, labels: Iterable[str] = ()) -> float:
    """Share of the answer's quoted passages that state a key fact or a gold identifier.

    0 when the answer abstains or quotes nothing: the figure over all answerable cases must not rise
    because hard questions were refused (issue 28); the caller reports the answered-only figure apart.
    """
    if abstained:
        return 0.0
    quoted = passages(answer, list(known_paths), labels=labels)
    if not quoted:
        return 0.0
    needles = list(facts) + gold_identifiers(facts)
    return sum(1 for q in quoted if any(fact_in_text(n, q) for n in needles)) / len(quoted)


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


UNANSWERABLE_KINDS = ("absent_topic", "near_miss")
"""The kinds an unanswerable case is tagged with (`evals/datasets/check_dataset.py`): no word of the topic in
the repository, or the asked setting or behaviour does not exist though its words do."""


def abstention_recall_by_kind(cases: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """Abstention recall over the unanswerable cases of each kind (by their tags); None for a kind with no
    case. Precision has no per-kind form: an abstention on an answerable case belongs to no kind."""
    out: dict[str, float | None] = {}
    for kind in UNANSWERABLE_KINDS:
        of_kind = [c for c in cases if not c["answerable"] and kind in (c.get("tags") or ())]
        out[kind] = sum(1 for c in of_kind if c["abstained"]) / len(of_kind) if of_kind else None
    return out


def percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    idx = (len(ordered) - 1) * pct / 100
    lo, hi = int(idx), min(int(idx) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (idx - lo)


def latency_summary(per_case: Sequence[dict[str, float]], wall_ms: Sequence[float] = ()) -> dict[str, dict[str, float]]:
    """Per node p50/p95 in ms, plus `case wall`: each case's wall-clock time around the whole graph run.

    The wall time is measured, not the sum of the node timings, so it includes the graph's own overhead
    (checkpointing, scheduling) that no node reports.
    """
    nodes: dict[str, list[float]] = {}
    for timings in per_case:
        for node, ms in timings.items():
            nodes.setdefault(node, []).append(ms)
    if wall_ms:
        nodes["case wall"] = list(wall_ms)
    return {n: {"p50": round(percentile(v, 50), 2), "p95": round(percentile(v, 95), 2)} for n, v in nodes.items()}
