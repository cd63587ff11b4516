"""`lotsman feedback` and `lotsman gaps`: votes on answers and the questions the docs fail (issue 27)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.cli_commands import session_name
from graph.settings import Settings
from graph.terminal import printable
from stores.errors import UsageError

if TYPE_CHECKING:
    from stores.question_log import GapGroup

TOPIC_THRESHOLDS = {"use": 0.55, "e5": 0.89, "gigachat": 0.80, "fake": 0.50}
"""Cosine similarity at which two groups of questions are one topic, per embedder, chosen on two labelled
sets of gap questions (tests/integration/test_gap_topics.py: 18 questions on 6 topics, Russian and English
mixed; 14 questions on 8 topics that a small repository refused or answered weakly), as pairwise precision
/ recall of "same topic". `use`, words of most questions left out (`STRIP_COMMON`): 0.55 gives 1.00 / 0.79
and 1.00 / 0.62; 0.50: 1.00 / 0.79 and 0.83 / 0.62; 0.40 mixes topics: 0.47 / 0.79 and 0.62 / 0.62; 0.60
splits the first set (11 groups for 6 topics). multilingual-e5-small places all questions at 0.77-0.91 of
each other: 0.89 gives 1.00 / 0.32 and 1.00 / 0.88 (0.88: 1.00 / 0.32 and 0.73 / 1.00). GigaChat's figure
is not measured (no network here): pass `--threshold`."""
STRIP_COMMON = {"use", "fake"}
"""Embedders whose questions lose the words most of them share before embedding (`strip_common_words`): with
`use` the product's name in most questions mixed topics (at 0.50: 0.62 / 0.62 with it, 0.83 / 0.62 without,
on the second set); e5's compressed similarities lose recall instead (1.00 / 0.88 → 1.00 / 0.38), so it keeps them."""
DEFAULT_TOPIC_THRESHOLD = 0.80
EXAMPLES_SHOWN = 5
NEAREST_SHOWN = 3

_RELATIVE = re.compile(r"^(\d{1,5})([dhw])$")


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """`--since`: an ISO date (`2026-11-30`, midnight UTC), an ISO date and time (UTC unless it says), or an
    age (`7d`, `24h`, `2w`); anything else is a one-line `UsageError`."""
    value = text.strip()
    now = now or datetime.now(UTC)
    if m := _RELATIVE.match(value):
        unit = {"d": "days", "h": "hours", "w": "weeks"}[m[2]]
        return now - timedelta(**{unit: int(m[1])})
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since: {text!r} is not a date: give 2026-11-30, 2026-11-30T12:00 or an age "
                         "like 7d, 24h, 2w") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if when > now:
        raise UsageError(f"--since: {text!r} is in the future: nothing could have been asked since")
    return when


def _since(value: str) -> datetime:
    try:
        return parse_since(value)
    except UsageError as exc:  # argparse shows it as `argument --since: ...`
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--since: ")) from None


def _share(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {number}")
    return number


# --- lotsman feedback ---------------------------------------------------------------------------------------
def _open_db(settings: Settings) -> Any:
    from stores.database import Database
    from stores.schema import ensure_tables

    db = Database.from_settings(settings)
    with db.connection() as conn:
        ensure_tables(conn)
    return db


def _cmd_feedback_list(args: argparse.Namespace, settings: Settings) -> int:
    from stores.feedback import cited_paths, list_feedback

    with _open_db(settings) as db, db.connection() as conn:
        votes = list_feedback(conn, args.session, since=args.since)
    if args.json:
        rows = [{"feedback_id": v.feedback_id, "score": v.score, "question": v.question, "answer": v.answer,
                 "citations": v.citations, "comment": v.comment, "run_id": v.run_id, "thread_id": v.thread_id,
                 "langsmith_sent": v.langsmith_sent, "created_at": v.created_at.isoformat()} for v in votes]
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not votes:
        print(f"no votes on session '{printable(args.session)}' yet")
        return 0
    up = sum(v.score > 0 for v in votes)
    print(f"{len(votes)} votes on session '{printable(args.session)}': {up} up, {len(votes) - up} down")
    for v in votes:
        files = ", ".join(cited_paths(v.citations)[:3]) or "no citations"
        note = f" — {printable(v.comment)}" if v.comment else ""
        print(f"{v.created_at:%Y-%m-%d %H:%M}  {'+1' if v.score > 0 else '-1'}  {printable(v.question[:120])}  "
              f"[{printable(files)}]{note}")
    return 0


def _cmd_feedback_export(args: argparse.Namespace, settings: Settings) -> int:
    from stores.feedback import feedback_cases, file_extents, list_feedback
    from stores.sessions import get_session

    with _open_db(settings) as db, db.connection() as conn:
        votes = list_feedback(conn, args.session, since=args.since)
        # gold paths only from files the session's index holds now (a forged or stale citation is dropped)
        extents = file_extents(conn, get_session(conn, args.session),
                               (str(c.get("path")) for v in votes for c in v.citations if isinstance(c, dict)))
    cases = feedback_cases(votes, up_only=args.up_only, extents=extents)
    text = "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)
    review = sum(1 for c in cases if c.get("needs_review"))
    if args.out is None:
        sys.stdout.write(text)
    else:
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    where = f"to {args.out}" if args.out else "to stdout"
    print(f"{len(cases)} cases from {len(votes)} votes written {where}; {review} down-voted need review "
          "(answerable and gold_paths) before `lotsman eval` accepts them", file=sys.stderr)
    return 0


# --- lotsman gaps -------------------------------------------------------------------------------------------
def _cmd_gaps(args: argparse.Namespace, settings: Settings) -> int:
    from stores.question_log import purge_questions

    if args.purge:
        with _open_db(settings) as db, db.connection() as conn:
            n = purge_questions(conn, args.session)
        print(f"deleted {n} logged questions of session '{printable(args.session)}' (votes are kept)")
        return 0
    report = gaps_report(settings, args.session, since=args.since, low_confidence=args.low_confidence,
                         threshold=args.threshold)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print_gaps(report, logging_on=settings.log_questions)
    return 0


def topic_threshold(embedder_name: str) -> float:
    """The default `--threshold` of a session's embedder (`gigachat:EmbeddingsGigaR` is `gigachat`)."""
    return TOPIC_THRESHOLDS.get(embedder_name.split(":", 1)[0], DEFAULT_TOPIC_THRESHOLD)


def embed_for_topics(embedder: Any, questions: list[str]) -> Any:
    """The questions' vectors for grouping: common words left out where that helps (`STRIP_COMMON`); e5
    embeds them as queries (with `passage: ` all lie at 0.85-0.91 of each other); GigaChat in batches."""
    import numpy as np

    from stores.question_log import strip_common_words

    key = embedder.name.split(":", 1)[0]
    texts = strip_common_words(questions) if key in STRIP_COMMON else questions
    if key == "gigachat":
        return np.asarray(embedder.embed_documents(texts))
    return np.asarray([embedder.embed_query(t) for t in texts])


def gaps_report(settings: Settings, session: str, *, since: datetime | None, low_confidence: float,
                threshold: float | None) -> dict[str, Any]:
    """The gap report of a session as JSON-ready data (what `--json` prints)."""
    from stores.embedders import make_embedder
    from stores.feedback import cited_paths, list_feedback
    from stores.question_log import (
        MAX_GAP_ROWS,
        REASONS,
        Vote,
        distinct_questions,
        group_gaps,
        list_questions,
        nearest_paths,
        newest_buckets,
        question_log_summary,
        select_gap_questions,
    )
    from stores.sessions import get_session

    with _open_db(settings) as db, db.connection() as conn:
        found = get_session(conn, session)
        logged = list_questions(conn, found, since=since)
        total, last_logged = question_log_summary(conn, found)
        votes = [Vote(v.question, v.score, v.run_id, tuple(cited_paths(v.citations)), v.created_at)
                 for v in list_feedback(conn, found.rag_session_id, since=since)]
        gaps = select_gap_questions(logged, votes, low_confidence=low_confidence)
        every = distinct_questions(gaps)
        buckets = newest_buckets(every)
        groups: list[GapGroup] = []
        if buckets:
            embedder = make_embedder(found.embedder, settings)
            found.check_embedder(embedder.name, embedder.dim)
            vectors = embed_for_topics(embedder, [b[-1].question for b in buckets])
            limit = threshold if threshold is not None else topic_threshold(found.embedder)
            groups = group_gaps(buckets, vectors, threshold=limit)
            for group in groups:
                if not group.nearest_files:  # nothing logged came near: ask the index itself
                    paths = nearest_paths(conn, found, vectors[list(group.members)].mean(axis=0).tolist())
                    group.nearest_files.extend({"path": p, "count": 0} for p in paths)
    return {
        "session": found.name,
        "since": since.isoformat() if since else None,
        "logged_questions": len(logged),
        "logged_total": total,
        "last_logged_at": last_logged.isoformat() if last_logged else None,
        "log_truncated": len(logged) >= MAX_GAP_ROWS,
        "votes": len(votes),
        "gap_questions": len(gaps),
        "distinct_left_out": len(every) - len(buckets),
        "reasons": {r: n for r in REASONS if (n := sum(r in g.reasons for g in gaps))},
        "low_confidence_below": low_confidence,
        "groups": [{"topic": g.topic, "count": g.count, "reasons": g.reasons, "questions": g.questions,
                    "nearest_files": g.nearest_files} for g in groups],
    }


def no_gaps_line(report: dict[str, Any], *, logging_on: bool) -> str:
    """The report's one line when no topic came out: an empty log (say how to fill it) is not an empty
    `--since` window (say how many are logged and when the last was)."""
    since = f" since {report['since']}" if report["since"] else ""
    name = printable(report["session"])
    total = report.get("logged_total", report["logged_questions"])
    if not total:
        hint = "" if logging_on else ": questions are logged only where LOTSMAN_LOG_QUESTIONS=true (off by default)"
        return f"no question is logged for session '{name}'{hint}; {report['votes']} votes{since}"
    if not report["logged_questions"]:
        last = report.get("last_logged_at")
        when = f", the last at {datetime.fromisoformat(last).astimezone(UTC):%Y-%m-%d %H:%M} UTC" if last else ""
        return (f"no coverage gaps in session '{name}'{since}: none was asked in this window ({total} logged in "
                f"total{when}), {report['votes']} votes")
    return (f"no coverage gaps in session '{name}'{since}: {report['logged_questions']} logged questions, "
            f"{report['votes']} votes")


def print_gaps(report: dict[str, Any], *, logging_on: bool) -> None:
    """The report as text: a summary line, then each topic with its examples and nearest files."""
    since = f" since {report['since']}" if report["since"] else ""
    name = printable(report["session"])
    if not report["groups"]:
        print(no_gaps_line(report, logging_on=logging_on))
        return
    reasons = ", ".join(f"{n} {r}" for r, n in report["reasons"].items())
    print(f"coverage gaps in session '{name}'{since}: {report['gap_questions']} of {report['logged_questions']} "
          f"logged questions and {report['votes']} votes ({reasons}), in {len(report['groups'])} topics")
    if report["log_truncated"] or report["distinct_left_out"]:
        print(f"(the newest {report['logged_questions']} logged questions were read; "
              f"{report['distinct_left_out']} older distinct questions were not grouped: narrow with --since)")
    for n, group in enumerate(report["groups"], 1):
        why = ", ".join(f"{c} {r}" for r, c in group["reasons"].items())
        print(f"\n{n}. {printable(group['topic'][:160])}  — {group['count']} asked ({why})")
        for q in group["questions"][:EXAMPLES_SHOWN]:
            times = f" ×{q['count']}" if q["count"] > 1 else ""
            print(f"   - {printable(q['question'][:160])}{times}  [{', '.join(q['reasons'])}]")
        if len(group["questions"]) > EXAMPLES_SHOWN:
            print(f"   … and {len(group['questions']) - EXAMPLES_SHOWN} more (--json lists all)")
        if group["nearest_files"]:
            nearest = ", ".join(f["path"] for f in group["nearest_files"][:NEAREST_SHOWN])
            print(f"   nearest files: {printable(nearest)}")


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's subcommands (module-level imports stay light: `lotsman ask` pays for them)."""
    fb = sub.add_parser("feedback", help="votes on answers: list them, export them as eval cases")
    actions = fb.add_subparsers(dest="feedback_action", required=True)
    p = actions.add_parser("list", help="the session's votes, oldest first")
    p.add_argument("--session", required=True, type=session_name)
    p.add_argument("--since", type=_since, help="only votes since DATE (2026-11-30, or an age: 7d, 24h)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_cmd_feedback_list)
    p = actions.add_parser("export", help="write the votes as eval cases (JSONL of `lotsman eval`)")
    p.add_argument("--session", required=True, type=session_name)
    p.add_argument("--out", type=Path, help="file to write (default: stdout)")
    p.add_argument("--since", type=_since, help="only votes since DATE (2026-11-30, or an age: 7d, 24h)")
    p.add_argument("--up-only", action="store_true",
                   help="leave out down-voted questions (they need a person's review before an eval)")
    p.set_defaults(handler=_cmd_feedback_export)

    p = sub.add_parser("gaps", help="questions the docs fail (refused, low confidence, voted down) by topic",
                       description="Questions the docs fail, grouped by topic: refused, answered with low "
                       "confidence, or voted down. Questions are logged only where LOTSMAN_LOG_QUESTIONS=true "
                       "(off by default); --purge deletes a session's log, votes stay.")
    p.add_argument("--session", required=True, type=session_name)
    p.add_argument("--since", type=_since, help="only questions since DATE (2026-11-30, or an age: 7d, 24h)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--low-confidence", type=_share, default=0.5, metavar="X",  # question_log.DEFAULT_LOW_CONFIDENCE
                   help="an answer whose logged confidence is below X is a gap (default 0.5)")
    p.add_argument("--threshold", type=_share, metavar="X",
                   help="similarity at which questions are one topic (default per embedder)")
    p.add_argument("--purge", action="store_true", help="delete the session's question log instead")
    p.set_defaults(handler=_cmd_gaps)
