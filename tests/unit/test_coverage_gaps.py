"""Coverage gaps (issue 27): which logged turns are gaps, how they group into topics, `--since`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from graph.cli_feedback import TOPIC_THRESHOLDS, embed_for_topics, parse_since, topic_threshold
from stores.errors import UsageError
from stores.question_log import (
    LOW_CONFIDENCE,
    REFUSED,
    VOTED_DOWN,
    GapQuestion,
    LoggedQuestion,
    Vote,
    cluster_by_similarity,
    cluster_similarity,
    cosine_matrix,
    distinct_questions,
    gap_reasons,
    group_gaps,
    newest_buckets,
    question_key,
    rank_files,
    select_gap_questions,
    strip_common_words,
)

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def row(question: str = "q", *, abstained: bool = False, confidence: float | None = 0.9, run_id: str | None = None,
        files: tuple[str, ...] = ()) -> LoggedQuestion:
    return LoggedQuestion("id-" + question, "s", run_id, question, abstained, confidence, list(files), "cli", T0)


@pytest.mark.parametrize(("abstained", "confidence", "up", "down", "want"), [
    (False, 0.9, False, False, ()),                          # answered well: not a gap
    (True, None, False, False, (REFUSED,)),                   # refused
    (True, 0.1, False, False, (REFUSED,)),                    # refused: low confidence is implied, not repeated
    (False, 0.3, False, False, (LOW_CONFIDENCE,)),            # answered with low confidence
    (False, 0.5, False, False, ()),                           # at the threshold: not low
    (False, None, False, False, ()),                          # no confidence logged: not judged
    (False, 0.3, True, False, ()),                            # low confidence but voted up: it helped
    (True, None, True, False, (REFUSED,)),                    # refusal voted up: the docs really lack it
    (False, 0.9, False, True, (VOTED_DOWN,)),                 # confident answer that did not help
    (False, 0.3, False, True, (LOW_CONFIDENCE, VOTED_DOWN)),
    (True, None, False, True, (REFUSED, VOTED_DOWN)),
])
def test_gap_reasons(abstained, confidence, up, down, want):
    got = gap_reasons(row(abstained=abstained, confidence=confidence), low_confidence=0.5, up_voted=up,
                      down_voted=down)
    assert got == want


def test_a_vote_and_the_log_row_of_its_run_are_one_turn():
    logged = [row("kafka?", abstained=True, run_id="r1"), row("ok", run_id="r2"), row("meh", confidence=0.2,
                                                                                       run_id="r3")]
    votes = [Vote("kafka?", -1, "r1"), Vote("ok", -1, "r2", ("docs/a.md",)), Vote("meh", 1, "r3"),
             Vote("not logged", -1, "r9", ("docs/b.md",)), Vote("not logged, up", 1, "r8"),
             Vote("no run id", -1, None)]
    got = {g.question: g.reasons for g in select_gap_questions(logged, votes, low_confidence=0.5)}
    assert got == {"kafka?": (REFUSED, VOTED_DOWN), "ok": (VOTED_DOWN,), "not logged": (VOTED_DOWN,),
                   "no run id": (VOTED_DOWN,)}
    nl = next(g for g in select_gap_questions(logged, votes) if g.question == "not logged")
    assert nl.top_files == ("docs/b.md",), "a vote's cited files stand for its nearest files"


@pytest.mark.parametrize(("a", "b", "same"), [
    ("Как настроить Kafka?", "как  настроить kafka", True),
    ("How to deploy?", "how to deploy!", True),
    ("Kafka", "Kafka consumer", False),
])
def test_question_key(a, b, same):
    assert (question_key(a) == question_key(b)) is same


def _unit(*rows: list[float]) -> np.ndarray:
    return np.asarray(rows, dtype=float)


@pytest.mark.parametrize(("vectors", "threshold", "want"), [
    ([], 0.5, []),
    ([[1, 0]], 0.5, [[0]]),
    ([[1, 0], [1, 0.1], [0, 1]], 0.9, [[0, 1], [2]]),             # two alike, one apart
    ([[1, 0], [0, 1], [1, 0.05], [0.05, 1]], 0.9, [[0, 2], [1, 3]]),  # order of first member, members sorted
    ([[1, 0], [0, 1]], 0.0, [[0, 1]]),                           # orthogonal: similarity 0 >= 0 merges
    ([[1, 0], [0, 1]], 0.01, [[0], [1]]),
    ([[0, 0], [1, 0]], 0.5, [[0], [1]]),                         # a zero vector joins nothing
    # average linkage: a chain a-b-c where a and c are far apart stays split at a high threshold
    ([[1, 0], [0.8, 0.6], [0.28, 0.96]], 0.79, [[0, 1], [2]]),
])
def test_cluster_by_similarity(vectors, threshold, want):
    assert cluster_by_similarity(_unit(*vectors) if vectors else np.zeros((0, 2)), threshold) == want


def test_clustering_is_deterministic_and_independent_of_scale():
    rng = np.random.default_rng(7)
    v = rng.normal(size=(40, 8))
    first = cluster_by_similarity(v, 0.3)
    assert cluster_by_similarity(v * 3.0, 0.3) == first == cluster_by_similarity(v.copy(), 0.3)
    assert sorted(i for c in first for i in c) == list(range(40))


def greedy_reference(similarity: np.ndarray, threshold: float) -> list[list[int]]:
    """Average linkage the plain way: scan the whole matrix for the closest pair before every merge."""
    n = len(similarity)
    sim = np.array(similarity, dtype=float)
    np.fill_diagonal(sim, -np.inf)
    sizes, members = np.ones(n), [[i] for i in range(n)]
    while n > 1:
        i, j = divmod(int(np.argmax(sim)), n)
        if not sim[i, j] >= threshold:
            break
        merged = (sizes[i] * sim[i] + sizes[j] * sim[j]) / (sizes[i] + sizes[j])
        sim[i, :], sim[:, i] = merged, merged
        sim[j, :], sim[:, j] = -np.inf, -np.inf
        sim[i, i] = -np.inf
        sizes[i] += sizes[j]
        members[i], members[j] = members[i] + members[j], []
    return sorted((sorted(m) for m in members if m), key=lambda m: m[0])


def test_clustering_merges_as_the_plain_greedy_scan_does_ties_included():
    rng = np.random.default_rng(11)
    for case in range(200):
        v = rng.normal(size=(int(rng.integers(1, 30)), int(rng.integers(2, 6))))
        if case % 3 == 0:
            v = np.round(v)  # equal similarities: the tie rule must match too
        sim, threshold = cosine_matrix(v), float(rng.uniform(-0.2, 0.9))
        assert cluster_similarity(sim, threshold) == greedy_reference(sim, threshold), case


def test_the_newest_distinct_questions_are_grouped_when_there_are_too_many():
    buckets = [[gq("a", minutes=5)], [gq("b", minutes=1), gq("b", minutes=9)], [gq("c", minutes=3)]]
    assert [b[0].question for b in newest_buckets(buckets, limit=2)] == ["a", "b"]
    assert newest_buckets(buckets, limit=3) == buckets


def gq(question: str, *reasons: str, files: tuple[str, ...] = (), confidence: float | None = None,
       minutes: int = 0) -> GapQuestion:
    return GapQuestion(question, reasons or (REFUSED,), files, confidence, T0 + timedelta(minutes=minutes))


def test_groups_count_turns_name_the_central_question_and_rank_files():
    gaps = [gq("Kafka?", files=("docs/queue.md",)), gq("kafka?", files=("docs/queue.md", "docs/x.md"), minutes=1),
            gq("Kafka consumer groups?", VOTED_DOWN, files=("docs/x.md",)),
            gq("Helm chart?", LOW_CONFIDENCE, confidence=0.31)]
    buckets = distinct_questions(gaps)
    assert [len(b) for b in buckets] == [2, 1, 1]
    vectors = _unit([1, 0], [0.9, 0.1], [0, 1])
    groups = group_gaps(buckets, vectors, threshold=0.8)
    assert [g.count for g in groups] == [3, 1]
    kafka, helm = groups
    assert kafka.topic == "kafka?", "the most asked of the equally central questions, as last asked"
    assert kafka.reasons == {REFUSED: 2, VOTED_DOWN: 1}
    assert [q["question"] for q in kafka.questions] == ["kafka?", "Kafka consumer groups?"]
    assert kafka.questions[0]["count"] == 2 and kafka.questions[0]["reasons"] == [REFUSED]
    assert kafka.nearest_files == [{"path": "docs/queue.md", "count": 2}, {"path": "docs/x.md", "count": 2}]
    assert helm.nearest_files == []
    assert helm.questions[0]["confidence"] == 0.31 and helm.members == (2,)


@pytest.mark.parametrize(("files", "want"), [
    ([("x.md", "x.md", "y.md"), ("y.md",)], [("y.md", 2), ("x.md", 1)]),   # once per turn, most often first
    ([("b.md", "a.md"), ("b.md", "a.md")], [("b.md", 2), ("a.md", 2)]),     # a tie: the higher placed first
    ([("b.md", "a.md"), ("a.md", "b.md")], [("a.md", 2), ("b.md", 2)]),     # same places: by path
    ([()], []),
])
def test_rank_files(files, want):
    got = rank_files([gq(str(n), files=f) for n, f in enumerate(files)])
    assert [(f["path"], f["count"]) for f in got] == want


NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "want"), [
    ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
    ("2026-11-30T08:15", datetime(2026, 11, 30, 8, 15, tzinfo=UTC)),
    ("2026-11-30T08:15+03:00", datetime(2026, 11, 30, 5, 15, tzinfo=UTC)),
    ("7d", NOW - timedelta(days=7)),
    ("24h", NOW - timedelta(hours=24)),
    (" 2w ", NOW - timedelta(weeks=2)),
])
def test_parse_since(text, want):
    assert parse_since(text, now=NOW) == want


@pytest.mark.parametrize(("text", "says"), [
    ("yesterday", "not a date"), ("2026-13-01", "not a date"), ("7m", "not a date"), ("", "not a date"),
    ("2027-01-01", "in the future"),
])
def test_parse_since_refuses_with_one_line(text, says):
    with pytest.raises(UsageError) as info:
        parse_since(text, now=NOW)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_every_embedder_has_a_topic_threshold():
    from stores.embedders import EMBEDDER_NAMES

    assert set(TOPIC_THRESHOLDS) == set(EMBEDDER_NAMES)


@pytest.mark.parametrize(("questions", "want"), [
    # the product's name in 3 of 4 questions goes; words of half of them stay
    (["How do I connect Harbor to Kafka?", "Harbor and Kafka topics", "Harbor on Kubernetes", "SAML login"],
     ["How do I connect to Kafka?", "and Kafka topics", "on Kubernetes", "SAML login"]),
    (["Harbor?", "Harbor Kafka", "Harbor SAML", "Harbor Helm"], ["Harbor?", "Kafka", "SAML", "Helm"]),  # never empty
    (["Harbor a", "Harbor b", "Harbor c"], ["Harbor a", "Harbor b", "Harbor c"]),  # fewer than 4: as they are
    (["Как настроить Kafka?", "как настроить SAML?", "Как настроить Helm?", "Где бэкап?"],
     ["Kafka?", "SAML?", "Helm?", "Где бэкап?"]),  # case aside
])
def test_strip_common_words(questions, want):
    assert strip_common_words(questions) == want


class Recording:
    def __init__(self, name: str) -> None:
        self.name, self.calls = name, []

    def embed_query(self, text):
        self.calls.append(("query", text))
        return [1.0, 0.0]

    def embed_documents(self, texts):
        self.calls.append(("documents", tuple(texts)))
        return [[1.0, 0.0] for _ in texts]


QS = ["Harbor a", "Harbor b", "Harbor c", "Harbor d"]


@pytest.mark.parametrize(("name", "calls"), [
    ("use", [("query", "a"), ("query", "b"), ("query", "c"), ("query", "d")]),   # common words out
    ("e5", [("query", q) for q in QS]),                                           # kept: e5 loses recall
    ("gigachat:EmbeddingsGigaR", [("documents", tuple(QS))]),                     # one batch
])
def test_embed_for_topics(name, calls):
    embedder = Recording(name)
    assert embed_for_topics(embedder, QS).shape == (4, 2)
    assert embedder.calls == calls


@pytest.mark.parametrize(("name", "want"), [("use", 0.55), ("e5", 0.89), ("gigachat:EmbeddingsGigaR", 0.8),
                                            ("something-new", 0.8)])
def test_topic_threshold(name, want):
    assert topic_threshold(name) == want
