"""Fusion, relevance gate and token cap (seed 004 §2–3): pure, table-driven."""

from __future__ import annotations

import pytest

from nodes.context_retrieval.fusion import distinct_files, diversify, fuse
from nodes.context_retrieval.gate import relevance_gate, row_tokens, term_coverage
from nodes.context_retrieval.pack import apply_token_cap
from nodes.evidence import EvidenceRow
from nodes.terms import key_terms


def row(rid: str, path: str, content: str = "text", **extra) -> dict:
    return {"id": rid, "path": path, "layer": "D0_DOC_CHUNKS", "content": content, "span_start": 1,
            "span_end": 5, **extra}


def ev(path: str, content: str, distance: float | None = None, lanes: dict | None = None) -> EvidenceRow:
    scores = {"distance": distance} if distance is not None else {}
    return EvidenceRow(id=path + content[:5], path=path, layer="D0_DOC_CHUNKS", content=content,
                       scores=scores, lanes=lanes or {"semantic": 1})


def test_fuse_dedupes_and_records_every_lane_rank() -> None:
    fused = fuse({"semantic": [row("a", "x.md"), row("b", "y.md")], "lexical": [row("b", "y.md")]})
    assert [r.id for r in fused] == ["b", "a"]
    assert fused[0].lanes == {"semantic": 2, "lexical": 1}
    assert fused[1].lanes == {"semantic": 1}


def test_fuse_weights_lanes() -> None:
    fused = fuse({"semantic": [row("a", "a.md")], "exact": [row("b", "b.md")]})
    assert fused[0].id == "b"  # exact outweighs semantic at the same rank


def test_fuse_keeps_raw_scores_as_provenance() -> None:
    fused = fuse({"ranked": [row("a", "a.md", distance=0.25, lexical_score=0.5, prefer_bonus=1)]})
    assert fused[0].scores == {"distance": 0.25, "lexical_score": 0.5, "prefer_bonus": 1.0}


def test_empty_lanes_give_nothing() -> None:
    assert fuse({}) == [] and fuse({"semantic": []}) == []


def test_diversify_lifts_a_second_file_over_a_third_chunk_of_the_first() -> None:
    rows = fuse({"semantic": [row("1", "a.md"), row("2", "a.md"), row("3", "a.md"), row("4", "b.md")]})
    assert distinct_files(diversify(rows))[:2] == ["a.md", "b.md"]
    assert [r.path for r in diversify(rows)][:2] == ["a.md", "b.md"]


@pytest.mark.parametrize(
    ("query", "extra", "expected"),
    [
        ("Как настроить CORS в FastAPI?", [], ["настроить", "cors", "fastapi"]),
        ("What is the default openapi_url?", [], ["default", "openapi_url"]),
        ("где описано?", [], []),
        ("Explain it", ["/items/{id}"], ["items"]),
    ],
)
def test_key_terms_drop_question_words(query: str, extra: list[str], expected: list[str]) -> None:
    assert key_terms(query, extra) == expected


def test_coverage_folds_russian_inflection_by_stem() -> None:
    rows = [ev("docs/a.md", "Настройка зависимостей с yield")]
    assert term_coverage(["зависимости", "yield"], rows) == 1.0
    assert term_coverage(["kafka", "consumer"], rows) == 0.0


@pytest.mark.parametrize(
    ("rows", "terms", "passed"),
    [
        ([], ["cors"], False),
        ([ev("a.md", "CORSMiddleware allow_origins", 0.5)], ["corsmiddleware"], True),
        ([ev("a.md", "about databases", 0.6)], ["kafka", "consumer"], False),
        ([ev("a.md", "about databases", 0.1)], ["kafka", "consumer"], True),  # near-paraphrase
        ([ev("docs/a.md", "anything", 0.9, lanes={"exact": 1})], ["zzz"], True),
    ],
)
def test_relevance_gate(rows: list[EvidenceRow], terms: list[str], passed: bool) -> None:
    assert relevance_gate(rows, terms, named_files=["docs/a.md"]).passed is passed


@pytest.mark.parametrize(("named", "indexed", "found"), [
    ("docs/a.md", "docs/a.md", True),
    ("./docs/a.md", "docs/a.md", True),
    ("docs\\a.md", "docs/a.md", True),  # typed on Windows: it named docs\a.md, which no row ends with
    (".github/a.md", ".github/a.md", True),  # its dot was stripped with the ./ prefix
    (".github/a.md", "docs/github/a.md", False),
])
def test_the_file_the_user_named_passes_whichever_way_it_was_typed(named: str, indexed: str, found: bool) -> None:
    rows = [ev(indexed, "unrelated words", 0.95)]
    assert relevance_gate(rows, ["zzz"], named_files=[named]).passed is found


def test_token_cap_keeps_rank_order_and_always_one_row() -> None:
    rows = [ev("a.md", "x" * 3000), ev("b.md", "y" * 3000), ev("c.md", "z" * 30)]
    kept = apply_token_cap(rows, cap=1100)
    assert [r.path for r in kept] == ["a.md", "c.md"]
    single = apply_token_cap([ev("big.md", "w" * 100000)], cap=100)
    assert len(single) == 1 and len(single[0].content) < 400


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("How do I set up the OAuth2 password flow in FastAPI?", ["OAuth2", "FastAPI"]),
        ("Как подключить консьюмер Kafka?", ["Kafka"]),
        ("Как сделать TOTP-коды?", ["TOTP"]),
        ("Where is `get_openapi` implemented?", ["get_openapi"]),
        ("Как подключить бот к Вконтакте?", ["Вконтакте"]),
        ("Как загрузить ML-модель?", []),  # two letters: too short to be sure it is a name
        ("Как настроить CORS?", ["CORS"]),
        ("How do I do it?", []),
        ("Overview: how can I self-host the Swagger UI assets?", ["Swagger"]),  # a capital that starts a sentence
        ("It is slow. Summarize docs/async.md", []),  # ... is grammar, also after a full stop
        ("Does Kafka work with it?", ["Kafka"]),
        ("Jinja2 templates: where are they set up?", ["Jinja2"]),  # a digit marks a name wherever it stands
    ],
)
def test_named_terms(query: str, names: list[str]) -> None:
    from nodes.context_retrieval.gate import named_terms

    assert named_terms(query) == names


def test_gate_fails_on_a_name_the_index_never_mentions_unless_a_file_was_named() -> None:
    rows = [ev("a.md", "Kafka consumers everywhere", 0.05)]
    assert relevance_gate(rows, ["kafka"], absent_names=["Kafka"]).passed is False
    exact = [ev("docs/a.md", "x", 0.5, lanes={"exact": 1})]
    assert relevance_gate(exact, ["kafka"], absent_names=["Kafka"], named_files=["a.md"]).passed is True
    # a hint that came from an alias, not from the user, does not vouch for the question
    assert relevance_gate(exact, ["kafka"], absent_names=["Kafka"]).passed is False


@pytest.mark.parametrize(
    ("path", "is_test"),
    [("tests/unit/test_x.py", True), ("pkg/test_utils.py", True), ("a/conftest.py", True),
     ("src/testing/x.py", True), ("docs/testing.md", False), ("stores/latest.py", False)],
)
def test_test_paths(path: str, is_test: bool) -> None:
    from nodes.context_retrieval.merge import is_test_path

    assert is_test_path(path) is is_test


def test_tests_are_demoted_unless_asked_about() -> None:
    from nodes.context_retrieval.merge import demote_tests, mentions_tests

    rows = fuse({"semantic": [row("t", "tests/test_a.py"), row("s", "stores/a.py")]})
    assert [r.path for r in demote_tests(rows)] == ["stores/a.py", "tests/test_a.py"]
    assert mentions_tests("Как тестировать зависимости?") and not mentions_tests("Как настроить CORS?")


def test_cross_lingual_requests_are_judged_by_similarity_not_by_stems() -> None:
    """A Russian question over English evidence shares no stems with it: similarity decides."""
    from nodes.context_retrieval.gate import GateSignals, GateThresholds, decide

    t = GateThresholds()
    russian_over_english = GateSignals(rows=5, coverage=0.0, best_similarity=t.cross_similarity_pass + 0.05,
                                       cross_lingual=True, has_terms=True)
    assert decide(russian_over_english, t).passed
    far = GateSignals(rows=5, coverage=t.cross_coverage_pass - 0.1, best_similarity=t.cross_similarity_pass - 0.05,
                      cross_lingual=True, has_terms=True)
    assert not decide(far, t).passed and decide(far, t).reason.startswith("cross-lingual")
    same_language = GateSignals(rows=5, coverage=0.0, best_similarity=t.cross_similarity_pass + 0.05,
                                has_terms=True)
    assert not decide(same_language, t).passed  # in one language, uncovered key terms mean "not here"


def test_cross_lingual_is_read_from_the_request_and_the_evidence() -> None:
    from nodes.context_retrieval.gate import gate_signals
    from nodes.evidence import EvidenceRow

    english = [EvidenceRow(id="1", path="pkg/core.py", layer="C0_SOURCE_CHUNKS", content="def prompt(text): ...")]
    russian = [EvidenceRow(id="2", path="docs/a.md", layer="D0_DOC_CHUNKS", content="Как настроить приложение")]
    assert gate_signals(english, ["подсказка"], query="Как работает подсказка?").cross_lingual
    assert not gate_signals(russian, ["настроить"], query="Как настроить?").cross_lingual
    assert gate_signals(russian, ["configure"], query="How to configure it?").cross_lingual


def test_fixtures_and_generated_code_are_demoted_like_tests() -> None:
    from nodes.context_retrieval.merge import is_test_path

    assert is_test_path("tests/fixtures/indexing/rag-retrieval.md")
    assert is_test_path("src/app/fixtures/users.json") and is_test_path("api/service_pb2.py")
    assert is_test_path("client/generated/models.py")
    assert not is_test_path("docs/logic/retrieval_policy.md") and not is_test_path("src/fixture_loader.py")


def test_a_first_row_cut_to_the_cap_counts_against_it_and_cites_only_the_lines_it_keeps() -> None:
    lines = [f"line {i} " + "w" * 40 for i in range(200)]
    big = ev("big.md", "\n".join(lines)).model_copy(update={"span_start": 11, "span_end": 210})
    kept = apply_token_cap([big, ev("b.md", "y" * 600), ev("c.md", "z" * 30)], cap=400)
    assert sum(row_tokens(r) for r in kept) <= 400
    first = kept[0]
    assert first.content == "\n".join(lines[: first.span_end - 10]) and first.span_start == 11
    assert first.span_end < 210
