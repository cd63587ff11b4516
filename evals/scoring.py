"""One case scored from the graph's final state: the per-case row of the eval report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evals.answer_text import blocks, label_block, passages
from evals.cases import route_label
from evals.metrics import (
    citations_removed_share,
    code_gold,
    code_gold_recall_at_k,
    distinct_files,
    evidence_key_fact_recall,
    key_fact_coverage,
    lead_citation_in_gold,
    passage_precision,
    recall_at_k,
    reciprocal_rank,
)
from graph.context import Context
from nodes.context_analysis.llm import reading_pool
from nodes.context_analysis.models import Analysis
from nodes.evidence import EvidenceRow

OUTPUT_FIELDS = ("answer", "citations", "citations_removed", "route", "abstained", "evidence", "retrieval",
                 "timings_ms", "analysis", "answer_mode", "offline_reason")
"""The state fields scoring reads (LangSmith's target returns these; `analysis` reduced to its labels)."""

FALLBACK = "extractive fallback"
"""Answer mode of an `--llm` case answered by the extractive composer although the evidence sufficed."""


def plain(value: Any) -> Any:
    """A state value as JSON-shaped data: stage models (`EvidenceRow`, `RetrievalReport`) become dicts."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _removed_count(state: dict[str, Any]) -> int | None:
    # `citations_removed` lists what the verifier took out of an LLM answer ([] for extractive answers).
    removed = plain(state.get("citations_removed"))
    if removed is None:
        return None
    return removed if isinstance(removed, int) else len(removed)


def composer_labels(analysis: Any) -> list[str]:
    """Titles and sections the composer may print as labels: the files' titles, the passages' headings
    and definition names (what `own_text` must not credit as the answer's words)."""
    data = plain(analysis) or {}
    names = [f.get("title") or "" for f in data.get("files") or []]
    names += [s.get("section") or "" for key in ("spans", "passages") for s in data.get(key) or []]
    return list(dict.fromkeys(n for n in names if n.strip()))


def labels_of(analysis: Any) -> dict[str, Any]:
    """The analysis reduced to what scoring reads (LangSmith outputs carry this, not the passages' text)."""
    data = plain(analysis) or {}
    return {"files": [{"title": f.get("title", "")} for f in data.get("files") or []],
            "spans": [{"section": s.get("section", "")} for s in data.get("spans") or []],
            "passages": [{"section": s.get("section", "")} for s in data.get("passages") or []]}


def answer_mode(state: dict[str, Any], *, llm: bool) -> tuple[str, str]:
    """(mode, reason) of a case's answer: `llm`, `extractive fallback`, `find_files`, `not_found`, or
    `extractive` in an offline run (reason `offline`).

    In an `--llm` run an answer in the extractive composer's shape (its lead line first) is a fallback.
    The reason is the graph's `offline_reason` when the request went offline (`answer_mode: offline`);
    when the graph says `llm` the model was there but its reply was unusable (no citation survived
    verification, empty text); a graph without these outputs leaves the reason unrecorded.
    """
    if state.get("abstained"):
        return "not_found", ""
    if not llm:
        return "extractive", "offline"
    parts = blocks(state.get("answer") or "")
    extractive = bool(parts) and label_block(parts[0])
    if extractive and (plain(state.get("route")) or {}).get("subintent") == "FIND_FILES":
        return "find_files", ""  # the ranked list is deterministic by design, never the model's
    graph_mode, reason = state.get("answer_mode"), str(state.get("offline_reason") or "")
    if graph_mode == "offline":
        return FALLBACK, reason or "offline, no reason given"
    if extractive:
        return FALLBACK, ("model reply unusable (no verified citation or empty text)" if graph_mode == "llm"
                          else "not recorded (the graph output has no answer_mode)")
    return "llm", ""


def _citations_removed(mode: str, removed: int | None, kept: int) -> float | None:
    """Share of the model's citations the verifier removed: of an LLM answer, or 1.0 for a fallback whose
    model answer lost every citation (when the graph reports them); n/a for answers no model wrote."""
    if mode == "llm":
        return citations_removed_share(removed, kept)
    if mode == FALLBACK and removed:
        return 1.0  # the extractive citations are not the model's: it kept none
    return None


def handed_over(state: dict[str, Any], evidence: list[Any]) -> list[Any]:
    """The rows context_retrieval handed to context_analysis (the pack within the token cap): the first
    `len(retrieval.provenance)` of the state's evidence. The rows analysis read from the index for itself
    (a chosen card's sections) come after them and are not what the cap bounds (SPEC §7)."""
    provenance = (plain(state.get("retrieval") or {}) or {}).get("provenance")
    return evidence if provenance is None else evidence[: len(provenance)]


DEFAULT_TOKEN_CAP: int = Context.model_fields["token_cap"].default


def reader_texts(state: dict[str, Any], token_cap: int = DEFAULT_TOKEN_CAP) -> list[str] | None:
    """What GigaChat reads in the graph's context_analysis and answer_composition (`reading_pool`: the
    analysis's passages, then the pack's rows they do not already hold), or None when the state does not
    carry the analysis and evidence objects (LangSmith outputs)."""
    analysis, evidence = state.get("analysis"), handed_over(state, state.get("evidence") or [])
    if not isinstance(analysis, Analysis) or not all(isinstance(r, EvidenceRow) for r in evidence):
        return None
    return [span.text for span in reading_pool(analysis.passages, evidence, token_cap)]


def fact_trace(facts: list[str], evidence: list[str] | None, reader: list[str] | None,
               in_answer: Callable[[list[str]], float | None]) -> list[dict[str, Any]]:
    """Per key fact: is it in the evidence pack, in what GigaChat reads, in the answer (None: not measurable
    here). The same functions as the shares, one fact at a time, so the HTML report's fact budget and its
    "lost at" column add up to `evidence_key_fact_recall`, `reader_key_fact_recall`, `key_fact_coverage`."""
    def hit(share: float | None) -> bool | None:
        return None if share is None else share == 1.0

    return [{"fact": f, "evidence": hit(evidence_key_fact_recall([f], evidence)),
             "reader": hit(evidence_key_fact_recall([f], reader)), "answer": hit(in_answer([f]))} for f in facts]


def score_case(case: dict[str, Any], state: dict[str, Any], *, llm: bool = False,
               token_cap: int = DEFAULT_TOKEN_CAP) -> dict[str, Any]:
    """Per-case metrics and diagnostics; answer metrics of unanswerable cases are None.

    `llm`: the run answers with the chat model (`--llm`), so citations can be removed and an extractive
    answer is a fallback; offline, "citations removed" is n/a by construction. `token_cap`: the run's cap
    (`Context.token_cap`), which bounds what the reader reads (`reader_texts`). When the relevance gate
    refused the request nothing was handed on to be read: evidence and reader key-fact recall score 0 (and
    the fact trace says no), whatever rows retrieval found.
    """
    evidence = plain(state.get("evidence") or [])
    evidence_paths = [e["path"] for e in evidence]
    retrieved = distinct_files(evidence_paths)
    gold = list(case["gold_paths"])
    facts = list(case.get("key_facts") or [])
    answer = state.get("answer") or ""
    citations = plain(state.get("citations") or [])
    abstained = bool(state.get("abstained"))
    answerable = bool(case["answerable"])
    route = route_label(plain(state.get("route") or {}))
    known = list(dict.fromkeys([*evidence_paths, *(c["path"] for c in citations)]))
    retrieval = plain(state.get("retrieval") or {})
    labels = composer_labels(state.get("analysis"))
    # LangSmith outputs carry the rows' locations only (`evidence_reduced`): the ceiling is n/a there.
    # Refused by the gate: nothing was read (0), where the surface can tell; LangSmith's reduced outputs
    # cannot measure either recall for any case, so there both stay n/a rather than mix 0s into an n/a mean.
    refused = retrieval.get("relevant") is False and not state.get("evidence_reduced")
    texts = ([] if refused else None if state.get("evidence_reduced")
             else [e.get("content") or "" for e in handed_over(state, evidence)])
    mode, reason = answer_mode(state, llm=llm)
    removed = _citations_removed(mode, _removed_count(state), len(citations))
    reader = [] if refused else reader_texts(state, token_cap)

    def coverage(of: list[str]) -> float | None:
        return key_fact_coverage(of, answer, abstained=abstained, known_paths=known,
                                 find_files=route == "DOC_EXPLAIN/FIND_FILES", labels=labels)

    def ans(value: Any) -> Any:
        return value if answerable else None

    return {
        "id": case["id"],
        "question": case["question"],
        "tags": case.get("tags", []),
        "answerable": answerable,
        "expected_route": case["expected_route"],
        "route": route,
        "route_correct": route == case["expected_route"],
        "gold_paths": gold,
        "key_facts": facts,
        "retrieved_files": retrieved[:10],
        "evidence_paths": evidence_paths,
        "evidence_rows": len(evidence),
        "empty_candidates": answerable and not evidence,
        "gate": {"relevant": retrieval.get("relevant"), "reason": retrieval.get("gate")},
        "retrieval": {k: retrieval.get(k) for k in ("relaxation", "lane_sizes", "signals")},
        "recall_at_5": ans(recall_at_k(retrieved, gold, 5)),
        "recall_at_10": ans(recall_at_k(retrieved, gold, 10)),
        "mrr": ans(reciprocal_rank(retrieved, gold)),
        "code_gold": answerable and bool(code_gold(gold)),
        "code_gold_recall_at_5": ans(code_gold_recall_at_k(retrieved, gold, 5)),
        "evidence_key_fact_recall": ans(evidence_key_fact_recall(facts, texts)),
        "reader_key_fact_recall": ans(evidence_key_fact_recall(facts, reader)),
        "key_fact_coverage": ans(coverage(facts)),
        "fact_trace": ans(fact_trace(facts, texts, reader, coverage)),
        # Over all answerable cases an abstention scores 0; the `_answered` twins leave abstentions out.
        "lead_citation_in_gold": ans(lead_citation_in_gold(citations, answer, gold, abstained=abstained)),
        "lead_citation_in_gold_answered": ans(None if abstained else lead_citation_in_gold(citations, answer, gold)),
        "passage_precision": ans(passage_precision(answer, facts, known, abstained=abstained, labels=labels)),
        "passage_precision_answered": ans(None if abstained else passage_precision(answer, facts, known,
                                                                                    labels=labels)),
        "citations": len(citations),
        "citations_removed_share": removed,
        "answer_mode": mode,
        "answer_mode_reason": reason,
        "passages": len(passages(answer, known, labels=labels)),
        "answer_chars": len(answer),
        "abstained": abstained,
        "timings_ms": state.get("timings_ms") or {},
        "answer": answer,
    }
