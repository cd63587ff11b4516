"""The relevance gate's verdict (`decide`, `relevance_gate`) and its calibration (`evals.gate_calibration`).

The gate refuses only on evidence that the index does not hold the topic; weak coverage of the top rows and
low similarity are answered (issue 29, item 5: on dev they refused 17 answerable questions for 5
unanswerable ones).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals import gate_calibration
from nodes.context_retrieval.gate import (
    GATE_TOP_N,
    GateSignals,
    GateThresholds,
    decide,
    gate_signals,
    relevance_gate,
)
from nodes.evidence import EvidenceRow

T = GateThresholds()


def signals(**kw: object) -> GateSignals:
    base: dict[str, object] = {"rows": 40, "has_terms": True, "coverage": 0.5, "candidate_coverage": 0.8,
                               "best_similarity": 0.4}
    return GateSignals(**(base | kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(("case", "s", "passed", "reason"), [
    # refusals: evidence that the index does not hold the topic
    ("nothing was found", GateSignals(), False, "no rows"),
    ("a name the index never mentions", signals(absent_names=("Kafka",)), False, "not in the index: Kafka"),
    ("no key term anywhere among the candidates", signals(coverage=0.0, candidate_coverage=0.0,
                                                         best_similarity=0.22), False, "key terms not covered"),
    ("an off-topic Russian question over English code", signals(cross_lingual=True, coverage=0.0,
                                                              candidate_coverage=0.0, best_similarity=0.05),
     False, "cross-lingual:"),
    ("no key terms and nothing similar", signals(has_terms=False, best_similarity=0.3), False, "no key terms"),
    # a question with no key terms ("How do I use it?") passes on similarity 0.50 as before: no dev question
    # has zero key terms, so the data never chose a stricter threshold for it
    ("no key terms, similarity 0.60", GateSignals(rows=5, best_similarity=0.6, has_terms=False), True,
     "no key terms, similarity 0.60"),
    ("no key terms, similarity just at 0.50", signals(has_terms=False, best_similarity=0.5), True, "no key terms"),
    ("no key terms, similarity just under 0.50", signals(has_terms=False, best_similarity=0.49), False,
     "no key terms and similarity"),
    # answered: weak signals are not evidence of absence (each was refused before)
    ("a paraphrase: the top rows lack the key terms, the candidates hold them (click 'grab one keystroke')",
     signals(coverage=0.33, candidate_coverage=0.5, best_similarity=0.33), True, "key terms covered (0.33)"),
    ("an identifier found, the question's other words are everyday ones (RagSession 'и какие у неё поля')",
     signals(coverage=0.33, candidate_coverage=1.0, best_similarity=0.34), True, "key terms covered"),
    ("a Russian question over English code with a modest similarity (click 'ширина справки')",
     signals(cross_lingual=True, coverage=0.0, candidate_coverage=0.0, best_similarity=0.28), True,
     "cross-lingual, similarity 0.28"),
    ("a Russian question over English code whose names match", signals(cross_lingual=True, coverage=0.25,
                                                                      candidate_coverage=0.25,
                                                                      best_similarity=0.05),
     True, "cross-lingual, key terms covered"),
    # hard passes come before any refusal but an absent name
    ("a near-verbatim paraphrase sharing no key term", signals(coverage=0.0, candidate_coverage=0.0,
                                                              best_similarity=0.8), True, "high similarity"),
    ("the file the user named", signals(named_file_found=True, absent_names=("Kafka",), candidate_coverage=0.0),
     True, "the file the user named"),
    ("the repository itself", signals(overview=True, coverage=0.0, candidate_coverage=0.0, best_similarity=0.1),
     True, "about the repository itself"),
])
def test_decide(case: str, s: GateSignals, passed: bool, reason: str) -> None:
    verdict = decide(s, T)
    assert (verdict.passed, verdict.reason.startswith(reason)) == (passed, True), (case, verdict.reason)


def ev(i: int, content: str, distance: float = 0.6) -> EvidenceRow:
    return EvidenceRow(id=str(i), path=f"docs/{i}.md", layer="D0_DOC_CHUNKS", content=content,
                       scores={"distance": distance})


def test_a_question_whose_terms_sit_below_the_top_rows_is_answered() -> None:
    """Coverage of the top rows is the answer's confidence, not a refusal: the key terms found among the
    other candidates show the index holds the topic."""
    rows = [ev(i, "unrelated words about something else") for i in range(GATE_TOP_N)]
    rows.append(ev(GATE_TOP_N, "getchar reads a single keystroke without waiting for enter"))
    verdict = relevance_gate(rows, ["grab", "keystroke", "waiting", "enter"], query="How do I grab one keystroke?")
    assert verdict.passed and verdict.coverage == 0.0
    assert verdict.signals is not None and verdict.signals.candidate_coverage == 0.75


def test_an_off_topic_question_is_refused() -> None:
    rows = [ev(i, "click options and arguments for command line interfaces") for i in range(10)]
    verdict = relevance_gate(rows, ["bake", "sourdough", "bread"], query="How do I bake sourdough bread?")
    assert not verdict.passed and verdict.reason.startswith("key terms not covered: 0.00")


def test_signals_count_key_terms_among_every_candidate() -> None:
    rows = [ev(i, "alpha") for i in range(GATE_TOP_N)] + [ev(99, "beta")]
    s = gate_signals(rows, ["alpha", "beta", "gamma", "delta"], query="alpha beta gamma delta")
    assert (s.coverage, s.candidate_coverage) == (0.25, 0.5)


# ---- calibration ----

def case(answerable: bool, **kw: object) -> tuple[bool, GateSignals]:
    return answerable, signals(**kw)


def test_worth_weighs_a_refused_answerable_case_by_the_cost() -> None:
    scores = gate_calibration.score([case(False, candidate_coverage=0.0), case(False), case(True),
                                     case(True, candidate_coverage=0.1)], T)
    assert (scores["refused_unanswerable"], scores["refused_answerable"]) == (1.0, 1.0)
    assert gate_calibration.worth(scores, cost=2.0) == pytest.approx((1 - 2) / 2)


def test_the_chosen_floor_sits_in_the_middle_of_the_gap_the_data_leaves() -> None:
    answerable = [case(True, candidate_coverage=c) for c in (0.5, 0.6, 0.8, 1.0)]
    corpora = {"a": answerable + [case(False, candidate_coverage=0.0)],
               "b": answerable + [case(False, candidate_coverage=0.0, coverage=0.0)]}
    assert gate_calibration.choose(corpora).candidate_coverage_pass == 0.3


def test_a_floor_that_refuses_two_answerable_cases_to_catch_one_is_not_chosen() -> None:
    cross = {"cross_lingual": True, "coverage": 0.0, "candidate_coverage": 0.0}
    corpus = [case(False, best_similarity=0.22, **cross), case(True, best_similarity=0.24, **cross),
              case(True, best_similarity=0.24, **cross), case(True, best_similarity=0.5, **cross)]
    chosen = gate_calibration.choose({"a": corpus, "b": corpus})
    assert all(decide(s, chosen).passed for answerable, s in corpus if answerable)


def test_a_report_without_candidate_coverage_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = {"results": [{"answerable": True, "retrieval": {"signals": {"rows": 3, "coverage": 0.5}}}]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    assert gate_calibration.main([str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: old: the report's gate signals have no candidate_coverage") and "\n" not in err


@pytest.mark.parametrize(("case", "content", "says"), [
    ("a missing report", None, "missing.json"),
    ("a report that is not JSON", "{truncated", "not JSON"),
    ("JSON that is not an eval report", '{"corpus": "x"}', "not an eval report"),
    ("a report that is not an object", "[1, 2]", "not an eval report"),
])
def test_a_bad_report_file_is_one_error_line(case: str, content: str | None, says: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "missing.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert gate_calibration.main([str(path)]) == 2, case
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and says in err and "\n" not in err and "Traceback" not in err, (case, err)
