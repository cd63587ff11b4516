"""Eval metrics (SPEC §7, issues 12 and 28) on answers the composer really writes: every metric can fail,
n/a is never 1.0, a label the composer builds from a heading or a symbol name is not the answer's word."""

from __future__ import annotations

import pytest

from evals.facts import fact_in_text, symbol_shaped
from evals.metrics import (
    abstention_scores,
    citations_removed_share,
    code_gold_recall_at_k,
    evidence_key_fact_recall,
    gold_identifiers,
    key_fact_coverage,
    latency_summary,
    lead_citation_in_gold,
    passage_precision,
    recall_at_k,
    reciprocal_rank,
)
from evals.scoring import composer_labels
from nodes.answer_composition import compose_extractive
from nodes.context_analysis import Analysis, FileEvidence, Span, analyze
from nodes.evidence import EvidenceRow
from nodes.intent_routing.models import RouteResult
from nodes.terms import key_terms

SUMMARY = RouteResult(user_query="q", intent="DOC_EXPLAIN", subintent="SUMMARY")
FIND = RouteResult(user_query="q", intent="DOC_EXPLAIN", subintent="FIND_FILES")
CORS = "docs/tutorial/cors.md"
MIDDLEWARE = "docs/advanced/middleware.md"
ROUTING = "fastapi/routing.py"

LEAD = Span(path=CORS, start_line=40, end_line=41, row_id="r1", kind="prose", section="Использование CORSMiddleware",
            text="Вы можете настроить его в приложении.\nСписок источников задаёт `allow_origins`.")
SUPPORT = Span(path=MIDDLEWARE, start_line=70, end_line=70, row_id="r2", kind="prose", section="Expose headers",
               text="Браузер видит только простые заголовки.")
# A definition quoted from its body: the symbol's name is only in the label the composer puts above it.
BODY = Span(path=ROUTING, start_line=120, end_line=121, row_id="r3", kind="source", code=True,
            section="APIRouter.include_router", text="    for route in router.routes:\n        self.add_route(route)\n")
FILES = [FileEvidence(path=CORS, best_rank=1, title="CORS (Cross-Origin Resource Sharing)",
                      reason="Список источников задаёт allow_origins.", start_line=41, end_line=41),
         FileEvidence(path=MIDDLEWARE, best_rank=2, title="Expose headers", reason="Expose headers",
                      start_line=70, end_line=70)]
PROSE = Analysis(files=FILES, spans=[LEAD, SUPPORT], passages=[LEAD, SUPPORT], sufficient=True, language="ru")
CODE = Analysis(files=FILES, spans=[BODY, LEAD], passages=[BODY, LEAD], sufficient=True, language="en")
NOTHING = Analysis(files=FILES, sufficient=False, language="ru")

# What the extractive composer writes today (nodes/answer_composition/extractive.py), not a hand-made format.
ANSWER = compose_extractive("q", PROSE, SUMMARY).text
CODE_ANSWER = compose_extractive("q", CODE, SUMMARY).text
FILES_ANSWER = compose_extractive("q", PROSE, FIND).text
NOT_FOUND = compose_extractive("q", NOTHING, SUMMARY)
KNOWN = [CORS, MIDDLEWARE, ROUTING]
LABELS = composer_labels(PROSE)


def coverage(facts: list[str], answer: str, **options: object) -> float | None:
    return key_fact_coverage(facts, answer, known_paths=KNOWN, labels=composer_labels(CODE) + LABELS,
                             **options)  # type: ignore[arg-type]


def test_the_answers_are_the_composers() -> None:
    assert ANSWER.startswith(f"Ответ — в `{CORS}`, раздел «Использование CORSMiddleware»:")
    assert f"`{MIDDLEWARE}` — «Expose headers»:" in ANSWER
    assert CODE_ANSWER.startswith(f"The answer is in `{ROUTING}`, definition `APIRouter.include_router`:")
    assert "CORS (Cross-Origin Resource Sharing): Список источников" in FILES_ANSWER
    assert NOT_FOUND.abstained


# --- key facts: only what the answer states (issue 28 item 2) -----------------------------------------
@pytest.mark.parametrize(
    ("facts", "answer", "options", "expected"),
    [
        (["Вы можете настроить"], ANSWER, {}, 1.0),  # in the lead quote
        (["простые заголовки"], ANSWER, {}, 1.0),  # in a supporting quote
        (["allow_origins"], ANSWER, {}, 1.0),  # inline code inside a quote
        (["add_route"], CODE_ANSWER, {}, 1.0),  # inside the fenced definition
        (["Использование CORSMiddleware"], ANSWER, {}, 0.0),  # only the lead line's section label
        (["Expose headers"], ANSWER, {}, 0.0),  # only a supporting passage's label
        (["APIRouter.include_router"], CODE_ANSWER, {}, 0.0),  # only the lead line's definition label
        (["Использование CORSMiddleware", "Expose headers", "APIRouter.include_router"],
         ANSWER + "\n\n" + CODE_ANSWER, {}, 0.0),  # the case: three label facts, none quoted
        (["tutorial/cors.md"], ANSWER, {}, 0.0),  # a path in the lead line and citations
        (["Cross-Origin Resource Sharing"], FILES_ANSWER, {"find_files": True}, 0.0),  # a FIND_FILES title
        (["Expose headers"], FILES_ANSWER, {"find_files": True}, 0.0),  # a title standing in for the reason
        (["allow_origins"], FILES_ANSWER, {"find_files": True}, 1.0),  # the line that justifies the file
        (["tutorial/cors.md"], FILES_ANSWER, {"find_files": True}, 1.0),  # a path fact matches a listed file
        (["tutorial/cors.md"], FILES_ANSWER, {}, 0.0),  # ... only in a FIND_FILES answer
        (["docs/other.md"], FILES_ANSWER, {"find_files": True}, 0.0),
        (["Cross-Origin Resource Sharing"], NOT_FOUND.text, {"abstained": True}, 0.0),  # nearest-files list
        # the note the graph appends when the request ran without the LLM is about the run
        (["модель не ответила"], ANSWER + "\n\n(ответ собран без LLM: модель не ответила вовремя)", {}, 0.0),
    ],
)
def test_key_facts_count_only_quotes_and_prose_not_labels(facts, answer, options, expected) -> None:
    assert coverage(facts, answer, **options) == expected


def test_labels_come_from_the_analysis_the_composer_used() -> None:
    assert set(LABELS) == {"CORS (Cross-Origin Resource Sharing)", "Expose headers", "Использование CORSMiddleware"}


def test_an_answer_from_real_evidence_rows_scores_its_quote_not_its_heading() -> None:
    rows = [EvidenceRow(id="c", path=CORS, layer="D0_DOC_CHUNKS", span_start=40, span_end=43,
                        content="## Разрешённые источники\n\nСписок задаёт параметр `allow_origins`.\n"
                                "По умолчанию `max_age` равен 600.", metadata={"title": "CORS"})]
    question = "Какое значение по умолчанию у max_age?"
    analysis = analyze(question, key_terms(question), rows, True, SUMMARY)
    answer = compose_extractive(question, analysis, SUMMARY).text
    assert "«Разрешённые источники»" in answer  # the lead line names the section...
    facts = ["Разрешённые источники", "600"]
    assert key_fact_coverage(facts, answer, known_paths=[CORS], labels=composer_labels(analysis)) == 0.5  # ...no credit


# --- the matcher: identifiers raw and case-sensitive, other facts folded (issue 28 item 3) --------------
@pytest.mark.parametrize(
    ("fact", "quoted", "expected"),
    [
        ("--all", "Передайте все задачи сразу, all of them.", 0.0),  # was "all"
        ("--all", "Передайте `--all`, чтобы увидеть все.", 1.0),
        ("--all", "Флаг `--all-tags` показывает теги.", 0.0),  # another flag
        (".types", "The types are checked at runtime.", 0.0),  # was "types"
        (".types", "from .types import Path", 1.0),
        ("~/.config", "Read the config file first.", 0.0),  # was "config"
        ("~/.config", "Stored under ~/.config/app on Linux.", 1.0),
        ("True", "Set it to true in the settings.", 0.0),  # any mention of the word
        ("True", "Pass `is_flag=True` to the option.", 1.0),
        ("Path", "Give the path to the file.", 0.0),
        ("Path", "Use `click.Path(exists=True)`.", 1.0),
        ("Path", "A PathLike object works too.", 0.0),
        ("HTTP 422", "returns HTTP 4220", 0.0),  # whole words
        ("по умолчанию", "значение ПО-УМОЛЧАНИЮ.", 1.0),  # a phrase: case and punctuation folded
        ("Значение по умолчанию", "значения по-умолчанию!", 0.0),  # no stems
    ],
)
def test_identifier_facts_match_raw_and_case_sensitively(fact: str, quoted: str, expected: float) -> None:
    span = Span(path=CORS, start_line=5, end_line=5, row_id="x", kind="prose", section="Пример", text=quoted)
    answer = compose_extractive("q", Analysis(files=FILES, spans=[span], sufficient=True), SUMMARY).text
    assert coverage([fact], answer) == expected


@pytest.mark.parametrize(
    ("fact", "shaped"),
    [("--all", True), (".types", True), ("~/.config", True), ("True", True), ("Content-Type", True),
     ("allow_origins", True), ("миграции Alembic", True), ("≥3 мес.", True), ("по умолчанию", False),
     ("Pick three", False), ("ОДНОРАЗОВО", False), ("201", False)],
)
def test_which_facts_are_symbol_shaped(fact: str, shaped: bool) -> None:
    assert symbol_shaped(fact) is shaped


@pytest.mark.parametrize("fact", ["'*'", "'***'", "``'*'``", "зависимост"])
def test_facts_that_can_never_match(fact: str) -> None:
    text = "allow_origins=['*'] и пароль '***'; ``'*'``; зависимости и зависимость"
    assert not fact_in_text(fact, text)


def test_gold_identifiers_keep_hyphenated_words_whole() -> None:
    assert gold_identifiers(['allow_origins=["*"]', "get_openapi()", "APIRouter", "по умолчанию",
                             "--forwarded-allow-ips", "fastapi.routing"]) == [
        "allow_origins", "get_openapi", "APIRouter", "--forwarded-allow-ips", "fastapi.routing"]
    assert gold_identifiers(["Content-Type"]) == ["Content-Type"]  # was "-Type", which folded to "type"
    assert gold_identifiers(["ASCII-only"]) == ["ASCII-only"]  # was "-only"


def test_a_stray_word_is_not_a_gold_identifier_in_a_passage() -> None:
    # Before: "Content-Type" gave the identifier "-Type", and any passage with the word "type" counted.
    span = Span(path=CORS, start_line=5, end_line=5, row_id="x", kind="prose", section="Пример",
                text="Each field has a type annotation.")
    answer = compose_extractive("q", Analysis(files=FILES, spans=[span], sufficient=True), SUMMARY).text
    assert passage_precision(answer, ["Content-Type"], KNOWN) == 0.0


# --- citations and passages: abstentions count (issue 28 item 4) ----------------------------------------
def cite(path: str) -> dict:
    return {"path": path, "start_line": 1, "end_line": 2}


@pytest.mark.parametrize(
    ("citations", "answer", "gold", "abstained", "expected"),
    [
        ([cite("docs/a.md"), cite("docs/b.md")], "", ["docs/a.md"], False, 1.0),
        ([cite("docs/b.md"), cite("docs/a.md")], "", ["docs/a.md"], False, 0.0),  # gold, but not first
        ([], "no citation at all", ["docs/a.md"], False, 0.0),
        ([], NOT_FOUND.text, ["docs/a.md"], True, 0.0),  # an abstention earns nothing (was n/a)
        ([], "see [docs/b.md:1-2] and [docs/a.md:3-4]", ["docs/a.md"], False, 0.0),  # read from the text
        ([], "`fastapi/routing.py:10-20` is where", ["fastapi/routing.py"], False, 1.0),
    ],
)
def test_lead_citation_in_gold(citations, answer, gold, abstained, expected) -> None:
    assert lead_citation_in_gold(citations, answer, gold, abstained=abstained) == expected


@pytest.mark.parametrize(("removed", "kept", "expected"), [(None, 3, None), (0, 0, None), (1, 3, 0.25), (0, 2, 0.0)])
def test_citations_removed_share(removed, kept, expected) -> None:
    assert citations_removed_share(removed, kept) == expected


@pytest.mark.parametrize(
    ("answer", "facts", "options", "expected"),
    [
        (ANSWER, ["allow_origins"], {}, 0.5),  # the lead quote holds it, the supporting one does not
        (ANSWER, ["allow_origins", "простые заголовки"], {}, 1.0),
        (ANSWER, ["Expose headers"], {}, 0.0),  # only in a label
        (FILES_ANSWER, ["Cross-Origin Resource Sharing"], {}, 0.0),  # only in a FIND_FILES title
        (FILES_ANSWER, ["allow_origins"], {}, 0.5),
        (NOT_FOUND.text, ["CORS"], {"abstained": True}, 0.0),  # abstained: 0 (was n/a)
        ("Просто текст без цитат.", ["текст"], {}, 0.0),  # answered, quoting nothing
    ],
)
def test_passage_precision(answer, facts, options, expected) -> None:
    assert passage_precision(answer, facts, KNOWN, labels=LABELS, **options) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("facts", "texts", "expected"),
    [
        (["allow_origins", "max_age"], ["Список задаёт `allow_origins`.", "## CORS"], 0.5),
        (["--all"], ["Show all of them."], 0.0),  # the same matcher as key-fact coverage
        (["x"], [], 0.0),  # nothing retrieved
        (["x"], None, None),  # the rows' text is not at hand (LangSmith outputs)
        ([], ["x"], None),
    ],
)
def test_evidence_key_fact_recall_is_the_ceiling_of_an_answer(facts, texts, expected) -> None:
    assert evidence_key_fact_recall(facts, texts) == expected


# --- retrieval --------------------------------------------------------------------------------------
def test_empty_retrieval_scores_zero() -> None:
    assert recall_at_k([], ["a.md"], 5) == 0.0
    assert reciprocal_rank([], ["a.md"]) == 0.0


@pytest.mark.parametrize(
    ("retrieved", "gold", "k", "expected"),
    [
        (["a", "a", "b", "c"], ["c"], 3, 1.0),  # distinct files: a, b, c
        (["a", "b", "c", "d", "e", "f"], ["f"], 5, 0.0),
        (["x", "g1", "y", "g2"], ["g1", "g2"], 2, 0.5),
    ],
)
def test_recall_counts_distinct_files_in_rank_order(retrieved, gold, k, expected) -> None:
    assert recall_at_k(retrieved, gold, k) == expected


def test_mrr_is_inverse_rank_of_first_gold_distinct_file() -> None:
    assert reciprocal_rank(["a", "a", "b", "g"], ["g"]) == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("retrieved", "gold", "expected"),
    [
        (["docs/a.md"], ["docs/a.md", "pkg/m.py"], 0.0),  # the docs gold found, the code gold not (was 0.5)
        (["pkg/m.py"], ["docs/a.md", "pkg/m.py"], 1.0),
        (["pkg/m.py"], ["docs/a.md"], None),  # no code gold: not a code case
    ],
)
def test_code_gold_recall_counts_code_gold_only(retrieved, gold, expected) -> None:
    assert code_gold_recall_at_k(retrieved, gold, 5) == expected


# --- set level --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([(False, True), (False, False), (True, True), (True, False)], (0.5, 0.5)),  # (answerable, abstained)
        ([(True, False), (True, False)], (None, None)),  # nothing abstained, nothing unanswerable: n/a, not 1.0
        ([(True, True), (True, False)], (0.0, None)),
        ([(False, False), (True, False)], (None, 0.0)),
    ],
)
def test_abstention_precision_and_recall(flags, expected) -> None:
    assert abstention_scores([{"answerable": a, "abstained": b} for a, b in flags]) == expected


def test_latency_summary_has_nodes_and_the_measured_wall_time() -> None:
    lat = latency_summary([{"a": 10.0, "b": 20.0}, {"a": 30.0, "b": 40.0}], [50.0, 90.0])
    assert lat["a"] == {"p50": 20.0, "p95": 29.0}
    assert lat["case wall"] == {"p50": 70.0, "p95": 88.0}  # measured, graph overhead included
    assert "total" not in lat  # the sum of the nodes left the graph's own time out
