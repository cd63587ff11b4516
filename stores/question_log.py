"""The question log (`rag_question_log`) and what it tells a docs team: the questions the index fails.

Rows are written only when question logging is on (`LOTSMAN_LOG_QUESTIONS`, see
`graph.question_logging`). `lotsman gaps` reads them with the session's down-votes, keeps the questions that
were refused, answered with low confidence or voted down (`select_gap_questions`), and groups them by topic
(`cluster_by_similarity` over the session's own embedder, `group_gaps`). The decisions are pure functions.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from stores.sessions import RagSession, find_session, get_session

MAX_LOGGED_QUESTION_CHARS = 8000
"""What the graph reads of a question (`graph.nodes.MAX_QUESTION_CHARS`)."""
MAX_TOP_FILES = 10
MAX_GAP_ROWS = 5000
"""`lotsman gaps` reads at most this many of the newest logged questions: clustering is quadratic in the
distinct questions, and the newest show what the docs lack now."""

MAX_CLUSTERED = 2000
"""Distinct gap questions grouped at most (the most recently asked): 2000 cluster in about a second and
32 MB; the rest are counted as left out."""

REFUSED = "refused"
LOW_CONFIDENCE = "low confidence"
VOTED_DOWN = "voted down"
REASONS = (REFUSED, LOW_CONFIDENCE, VOTED_DOWN)

DEFAULT_LOW_CONFIDENCE = 0.5
"""An answered turn whose logged confidence is below this is a gap. The graph logs the relevance gate's
key-term coverage, which passes at 0.40 (`nodes/context_retrieval/gate.py`): 0.40-0.50 is a pass by a hair."""


@dataclass(frozen=True)
class LoggedQuestion:
    """One logged turn."""

    question_id: str
    session_name: str
    run_id: str | None
    question: str
    abstained: bool
    confidence: float | None
    top_files: list[str]
    source: str
    created_at: datetime


# --- the store ---------------------------------------------------------------------------------------------
def _files(top_files: Iterable[Any]) -> list[str]:
    out: list[str] = []
    for item in top_files or ():
        path = item.get("path") if isinstance(item, dict) else item
        if isinstance(path, str) and path.strip() and path not in out:
            out.append(path.replace("\x00", ""))
        if len(out) == MAX_TOP_FILES:
            break
    return out


def log_question(conn: psycopg.Connection, *, session_name: str, question: str, run_id: str | None,
                 abstained: bool, confidence: float | None, top_files: Iterable[Any], source: str) -> str | None:
    """Write one row; returns its id, or None when the session does not exist (nothing to attach it to).

    `top_files` are paths (or `{path, ...}` dicts), best first; at most `MAX_TOP_FILES` distinct are kept.
    """
    text = question.replace("\x00", "").strip()[:MAX_LOGGED_QUESTION_CHARS]
    session = find_session(conn, session_name)
    if session is None or not text:
        return None
    conf = float(confidence) if confidence is not None and np.isfinite(confidence) else None
    question_id = uuid.uuid4().hex
    with conn.transaction():
        conn.execute(
            "INSERT INTO rag_question_log (question_id, rag_session_id, session_name, run_id, question, abstained, "
            "confidence, top_files, source) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (question_id, session.rag_session_id, session.name, (run_id or None), text, bool(abstained), conf,
             Jsonb(_files(top_files)), (source or "unknown")[:40]),
        )
    return question_id


def list_questions(conn: psycopg.Connection, session: RagSession | str, *, since: datetime | None = None,
                   limit: int = MAX_GAP_ROWS) -> list[LoggedQuestion]:
    """A session's logged questions, the newest `limit` of them, oldest first."""
    found = session if isinstance(session, RagSession) else get_session(conn, session)
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            "SELECT * FROM (SELECT question_id, session_name, run_id, question, abstained, confidence, top_files, "
            "source, created_at FROM rag_question_log WHERE rag_session_id = %s "
            "AND (%s::timestamptz IS NULL OR created_at >= %s::timestamptz) "
            "ORDER BY created_at DESC, question_id LIMIT %s) newest ORDER BY created_at, question_id",
            (found.rag_session_id, since, since, limit),
        ).fetchall()
    return [LoggedQuestion(**row) for row in rows]


def question_log_summary(conn: psycopg.Connection, session: RagSession) -> tuple[int, datetime | None]:
    """How many questions the session has logged in all, and when the last was (None: none is logged), so that
    an empty `--since` window is told from an empty log."""
    row = conn.execute("SELECT count(*), max(created_at) FROM rag_question_log WHERE rag_session_id = %s",
                       (session.rag_session_id,)).fetchone()
    return (int(row[0]), row[1]) if row is not None else (0, None)


def purge_questions(conn: psycopg.Connection, session: str) -> int:
    """Delete every logged question of a session (votes stay: they were given on purpose); returns how many."""
    found = get_session(conn, session)
    with conn.transaction():
        cur = conn.execute("DELETE FROM rag_question_log WHERE rag_session_id = %s", (found.rag_session_id,))
    return cur.rowcount


def nearest_paths(conn: psycopg.Connection, session: RagSession, vector: Sequence[float], *,
                  limit: int = 3) -> list[str]:
    """The distinct files of the session's current index whose rows lie nearest to `vector`."""
    from stores.schema import chunk_table

    table = chunk_table(session.embedding_dim)
    rows = conn.execute(
        f'SELECT path FROM "{table}" WHERE rag_session_id = %s AND generation = %s AND embedding IS NOT NULL '
        "ORDER BY embedding <=> %s::vector LIMIT 40",
        (session.rag_session_id, session.active_generation, str([float(v) for v in vector])),
    ).fetchall()
    out: list[str] = []
    for (path,) in rows:
        if path not in out:
            out.append(path)
    return out[:limit]


# --- which questions are gaps (pure) -------------------------------------------------------------------------
@dataclass(frozen=True)
class GapQuestion:
    """One turn the docs did not serve, and why."""

    question: str
    reasons: tuple[str, ...]
    """A subset of `REASONS`, in that order."""
    top_files: tuple[str, ...] = ()
    confidence: float | None = None
    asked_at: datetime | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class Vote:
    """What the gap analysis reads of a stored vote (`stores.feedback.Feedback` has these fields)."""

    question: str
    score: int
    run_id: str | None = None
    cited: tuple[str, ...] = ()
    created_at: datetime | None = None


def gap_reasons(row: LoggedQuestion, *, low_confidence: float, up_voted: bool = False,
                down_voted: bool = False) -> tuple[str, ...]:
    """Why a logged turn is a gap (empty: it is not).

    A refusal stays a gap even when voted up (the user agreed the docs do not answer it); an up-vote cancels
    "low confidence" (the answer helped after all).
    """
    reasons = []
    if row.abstained:
        reasons.append(REFUSED)
    elif row.confidence is not None and row.confidence < low_confidence and not up_voted:
        reasons.append(LOW_CONFIDENCE)
    if down_voted:
        reasons.append(VOTED_DOWN)
    return tuple(reasons)


def select_gap_questions(logged: Sequence[LoggedQuestion], votes: Sequence[Vote], *,
                         low_confidence: float = DEFAULT_LOW_CONFIDENCE) -> list[GapQuestion]:
    """The turns to show: refused, low-confidence or voted-down logged turns, plus down-votes on turns that
    were not logged. A vote and a log row of the same run are one turn."""
    by_run: dict[str, list[Vote]] = {}
    for vote in votes:
        if vote.run_id:
            by_run.setdefault(vote.run_id, []).append(vote)
    logged_runs = {row.run_id for row in logged if row.run_id}
    out = []
    for row in logged:
        scores = [v.score for v in by_run.get(row.run_id or "", [])]
        reasons = gap_reasons(row, low_confidence=low_confidence, up_voted=1 in scores, down_voted=-1 in scores)
        if reasons:
            out.append(GapQuestion(row.question, reasons, tuple(row.top_files), row.confidence, row.created_at,
                                   row.run_id))
    for vote in votes:
        if vote.score < 0 and not (vote.run_id and vote.run_id in logged_runs):
            out.append(GapQuestion(vote.question, (VOTED_DOWN,), vote.cited, None, vote.created_at, vote.run_id))
    return out


# --- topics (pure) -------------------------------------------------------------------------------------------
_SPACE = re.compile(r"\s+")


def question_key(question: str) -> str:
    """Two askings of the same question (case, spacing and a final `?` aside) are one question."""
    return _SPACE.sub(" ", question.casefold()).strip().rstrip("?!. ")


_WORDS = re.compile(r"\w+")


def strip_common_words(questions: Sequence[str], *, share: float = 0.5, min_questions: int = 4) -> list[str]:
    """The questions without the words more than `share` of them contain (from `min_questions` on): the
    product's own name is in most questions a team asks ("… Harbor …") and pulls unrelated ones together.
    A question left without a word keeps its text."""
    if len(questions) < min_questions:
        return list(questions)
    seen = Counter(w for q in questions for w in {m.lower() for m in _WORDS.findall(q)})
    common = {w for w, n in seen.items() if n > share * len(questions)}
    out = []
    for q in questions:
        kept = _SPACE.sub(" ", _WORDS.sub(lambda m: "" if m.group(0).lower() in common else m.group(0), q)).strip()
        out.append(kept if _WORDS.search(kept) else q)
    return out


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarity of the rows (a zero row is alike to nothing)."""
    x = np.asarray(vectors, dtype=np.float64)
    x = x.reshape(len(x), -1)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.where(norms == 0, 1.0, norms)
    return x @ x.T


def cluster_similarity(similarity: np.ndarray, threshold: float) -> list[list[int]]:
    """Average-linkage agglomerative clustering over a symmetric similarity matrix, merged while the
    closest two clusters are at least `threshold` alike. Deterministic: of equally close pairs the one with
    the lowest (row, column) merges first; clusters come out ordered by their first member, members
    ascending.

    Each row's best partner is kept and only rows whose best partner took part in a merge are searched
    again, so a merge costs O(n) instead of a full O(n²) scan (2000 questions: seconds, not minutes).
    """
    n = len(similarity)
    if n == 0:
        return []
    sim = np.array(similarity, dtype=np.float64).reshape(n, n)
    np.fill_diagonal(sim, -np.inf)
    sizes = np.ones(n)
    members: list[list[int]] = [[i] for i in range(n)]
    partner = np.argmax(sim, axis=1)
    best = sim[np.arange(n), partner]
    while True:
        i = int(np.argmax(best))
        j = int(partner[i])
        if not best[i] >= threshold:
            break
        i, j = min(i, j), max(i, j)
        merged = (sizes[i] * sim[i] + sizes[j] * sim[j]) / (sizes[i] + sizes[j])
        sim[i, :] = merged
        sim[:, i] = merged
        sim[j, :] = -np.inf
        sim[:, j] = -np.inf
        sim[i, i] = -np.inf
        sizes[i] += sizes[j]
        members[i] += members[j]
        members[j] = []
        best[j] = -np.inf
        # Rows whose partner was i or j (or i itself) look again; the others can only have gained i.
        stale = np.flatnonzero((partner == i) | (partner == j))
        gained = (sim[:, i] > best) | ((sim[:, i] == best) & (i < partner))
        gained[stale] = False
        partner[gained] = i
        best[gained] = sim[gained, i]
        for k in {i, *stale.tolist()} - {j}:
            partner[k] = int(np.argmax(sim[k]))
            best[k] = sim[k, partner[k]]
    return sorted((sorted(m) for m in members if m), key=lambda m: m[0])


def cluster_by_similarity(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """`cluster_similarity` over the vectors' cosine similarity."""
    return cluster_similarity(cosine_matrix(vectors), threshold) if len(vectors) else []


@dataclass(frozen=True)
class GapGroup:
    """A topic the docs fail: its questions (distinct, most asked first) and where the index comes nearest."""

    topic: str
    """The group's most central question."""
    questions: list[dict[str, Any]]
    """`{question, count, reasons, confidence, last_asked}` per distinct question."""
    count: int
    """Turns in the group (a question asked three times counts three)."""
    reasons: dict[str, int]
    nearest_files: list[dict[str, Any]] = field(default_factory=list)
    """`{path, count}`: files the group's answers came nearest to, most often first."""
    members: tuple[int, ...] = ()
    """Indexes of the group's distinct questions in what `group_gaps` was given."""


def distinct_questions(gaps: Sequence[GapQuestion]) -> list[list[GapQuestion]]:
    """Gap turns bucketed by `question_key`, in order of first asking."""
    buckets: dict[str, list[GapQuestion]] = {}
    for gap in gaps:
        buckets.setdefault(question_key(gap.question), []).append(gap)
    return list(buckets.values())


def newest_buckets(buckets: Sequence[list[GapQuestion]], limit: int = MAX_CLUSTERED) -> list[list[GapQuestion]]:
    """The `limit` distinct questions asked most recently, in their original order."""
    if len(buckets) <= limit:
        return list(buckets)
    far_past = datetime.min.replace(tzinfo=UTC)

    def last(k: int) -> tuple[datetime, int]:
        return max((t.asked_at or far_past for t in buckets[k]), default=far_past), k

    keep = sorted(sorted(range(len(buckets)), key=last)[-limit:])
    return [buckets[k] for k in keep]


def _summary(turns: list[GapQuestion]) -> dict[str, Any]:
    reasons = Counter(r for t in turns for r in t.reasons)
    confidences = [t.confidence for t in turns if t.confidence is not None]
    asked = [t.asked_at for t in turns if t.asked_at is not None]
    return {"question": turns[-1].question, "count": len(turns),
            "reasons": [r for r in REASONS if r in reasons],
            "confidence": round(min(confidences), 3) if confidences else None,
            "last_asked": max(asked).isoformat() if asked else None}


def rank_files(turns: Iterable[GapQuestion], *, limit: int = 5) -> list[dict[str, Any]]:
    """Files named among the turns' top files: most often first, then the higher they stood in the turns'
    lists (a refusal's nearest files come best first), then by path."""
    counts: Counter[str] = Counter()
    places: dict[str, list[int]] = {}
    for turn in turns:
        for place, path in enumerate(dict.fromkeys(turn.top_files)):
            counts[path] += 1
            places.setdefault(path, []).append(place)
    order = sorted(counts, key=lambda p: (-counts[p], sum(places[p]) / len(places[p]), p))
    return [{"path": p, "count": counts[p]} for p in order[:limit]]


def group_gaps(buckets: Sequence[list[GapQuestion]], vectors: np.ndarray, *, threshold: float) -> list[GapGroup]:
    """Groups of distinct gap questions (one vector each, same order as `buckets`), biggest first."""
    groups = []
    x = np.asarray(vectors, dtype=np.float64).reshape(len(buckets), -1) if len(buckets) else np.zeros((0, 1))
    for members in cluster_by_similarity(x, threshold):
        parts = sorted(members, key=lambda k: (-len(buckets[k]), k))
        turns = [t for k in members for t in buckets[k]]
        sub = x[members]
        norms = np.linalg.norm(sub, axis=1, keepdims=True)
        unit = sub / np.where(norms == 0, 1.0, norms)
        centrality = (unit @ unit.T).sum(axis=1)
        centre = members[max(range(len(members)), key=lambda m: (round(float(centrality[m]), 9),
                                                                   len(buckets[members[m]]), -m))]
        groups.append(GapGroup(
            topic=buckets[centre][-1].question,
            questions=[_summary(buckets[k]) for k in parts],
            count=len(turns),
            reasons={r: n for r in REASONS if (n := sum(r in t.reasons for t in turns))},
            nearest_files=rank_files(turns),
            members=tuple(members),
        ))
    return sorted(groups, key=lambda g: (-g.count, -g.reasons.get(REFUSED, 0), question_key(g.topic)))
