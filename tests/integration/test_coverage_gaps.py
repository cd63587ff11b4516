"""`lotsman gaps` after a scripted batch of 30 questions (issue 27): a small repository indexed with a real
embedder, the real QA graph answering with question logging on, the CLI grouping what it refused, answered
weakly or was voted down; then the log purged. Also `lotsman feedback list/export` on the same session."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from graph.builder import build_graph
from graph.cli import main
from graph.context import Context
from graph.deps import GraphDeps
from graph.settings import Settings
from stores.database import Database
from stores.embedders import make_embedder
from stores.feedback import record_feedback
from stores.question_log import list_questions
from tests.integration.conftest import indexed_session

DOCS = {
    "README.md": "# Harbor\n\nHarbor is a small service that schedules ship arrivals at a port and assigns berths.\n",
    "docs/install.md": """# Installation

Install Harbor with `pip install harbor-port`. Python 3.11 or newer is required.

## Database

Harbor stores arrivals in PostgreSQL. Set `HARBOR_DATABASE_URL` before the first start.
""",
    "docs/berths.md": """# Berth assignment

Each arrival gets a berth by the `assign_berth` function: the shortest free berth whose length exceeds the
ship's length plus a safety margin of 10 metres.

## Conflicts

When two ships ask for the same berth, the earlier arrival wins and the later one waits in the roadstead.
""",
    "docs/tides.md": """# Tide windows

Deep-draught ships may enter only during a tide window. The tide table is read from `tides.csv` every night.
A ship whose draught exceeds the channel depth at low water is scheduled for the next high tide.
""",
    "docs/backup.md": """# Backups

Run `harbor backup --out FILE` every night. A backup holds arrivals, berths and the tide table.
Restore with `harbor restore FILE`; restoring replaces every arrival.
""",
    "harbor/berths.py": '''"""Berth assignment."""

SAFETY_MARGIN_M = 10


def assign_berth(ship_length: float, berths: list[tuple[str, float]]) -> str | None:
    """The shortest free berth longer than the ship plus the safety margin, or None."""
    fitting = [(length, name) for name, length in berths if length > ship_length + SAFETY_MARGIN_M]
    return min(fitting)[1] if fitting else None
''',
}

ANSWERABLE = [
    "How do I install Harbor?", "Which Python version does Harbor need?", "Как установить Harbor?",
    "Where does Harbor store arrivals?", "Which environment variable sets the database URL?",
    "How is a berth assigned to a ship?", "What is the safety margin for berths?",
    "What happens when two ships ask for the same berth?", "Как назначается причал судну?",
    "When may deep-draught ships enter the port?", "Where is the tide table read from?",
    "What happens to a ship whose draught exceeds the channel depth?", "How do I back up Harbor?",
    "What does a backup hold?", "How do I restore a backup?", "Что делает harbor restore?",
    "What does assign_berth return when no berth fits?", "How often is the tide table read?",
    "What is Harbor?", "Как сделать резервную копию Harbor?",
]
UNANSWERABLE = [
    "How do I connect Harbor to Kafka?", "Does Harbor publish arrivals to Kafka topics?",
    "Kafka consumer configuration for Harbor",
    "How do I deploy Harbor on Kubernetes?", "Is there a Kubernetes Helm chart for Harbor?",
    "Kubernetes liveness probe for Harbor",
    "How do I enable SAML single sign-on?", "Does Harbor support SAML login?",
    "How do I provision Harbor with Terraform?", "Terraform module for Harbor",
]
assert len(ANSWERABLE) + len(UNANSWERABLE) == 30


@pytest.fixture(scope="module")
def harbor(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root: Path = tmp_path_factory.mktemp("harbor")
    for rel, text in DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    for session in indexed_session(db, root, "it-gaps", make_embedder("use")):
        yield session.name


def server_config(run_id: uuid.UUID) -> dict:
    """The run config a LangGraph server gives a run: its id as the root run's id and in `configurable`
    (which LangGraph mirrors into the metadata the nodes read)."""
    return {"run_id": run_id, "configurable": {"run_id": str(run_id)}}


@pytest.fixture(scope="module")
async def asked(db: Database, pg_url: str, harbor: str) -> dict[str, dict]:
    """The 30 questions through the real graph with question logging on; outputs by question."""
    settings = Settings(database_url=pg_url, log_questions=True)
    graph = build_graph(GraphDeps(settings=settings, db=db))
    out = {}
    for question in ANSWERABLE + UNANSWERABLE:
        out[question] = await graph.ainvoke({"messages": [HumanMessage(question)]},
                                            config=server_config(uuid.uuid4()),
                                            context=Context(rag_session_id=harbor))
    return out


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_every_turn_is_logged_with_its_outcome(db: Database, harbor: str, asked: dict[str, dict]) -> None:
    with db.connection() as conn:
        logged = list_questions(conn, harbor)
    assert sorted(r.question for r in logged) == sorted(asked)
    by_question = {r.question: r for r in logged}
    for question, out in asked.items():
        assert by_question[question].abstained == out["abstained"], question
        assert by_question[question].run_id, "the run id is logged, so a vote on the answer finds the turn"
    refused = {q for q, out in asked.items() if out["abstained"]}
    # measured: 7 of 10 refused ("Terraform module for Harbor" is answered from the README; "Kafka consumer
    # configuration" and "Kubernetes liveness probe" have 0.2-0.3 of their key terms among the candidates, and the
    # gate's candidate-coverage floor is 0.20 since gate_calibration chose it on eight corpora' dev sets, 20c06ee:
    # at 0.30 9 of 10 were refused), and one answerable Russian question whose words the English docs do not share
    assert len(refused & set(UNANSWERABLE)) >= 7, sorted(set(UNANSWERABLE) - refused)
    assert len(refused & set(ANSWERABLE)) <= 2, sorted(refused & set(ANSWERABLE))


def test_gaps_groups_the_refused_questions_by_topic(cli_on_test_db: None, capsys: pytest.CaptureFixture[str],
                                                    harbor: str, asked: dict[str, dict]) -> None:
    code, out, err = _cli(capsys, "gaps", "--session", harbor, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["logged_questions"] == 30
    groups = report["groups"]
    listed = {q["question"]: g["topic"] for g in groups for q in g["questions"]}
    refused = [q for q, o in asked.items() if o["abstained"]]
    assert set(refused) <= set(listed), "every refused question is listed"
    assert report["reasons"]["refused"] == len(refused)
    for topic in ("Kafka", "SAML"):  # measured with `use`: each one group, and nothing else in it
        tops = {listed[q] for q in UNANSWERABLE if topic in q}
        assert len(tops) == 1, f"the {topic} questions are one group: {tops}"
        group = next(g for g in groups if g["topic"] in tops)
        assert all(topic in q["question"] for q in group["questions"]), group["questions"]
    for group in groups:  # the Kubernetes questions are split in up to three groups (measured), never mixed in
        names = {n for q in group["questions"] for n in ("Kafka", "SAML", "Kubernetes") if n in q["question"]}
        assert len(names) <= 1, group["questions"]
    assert all(g["nearest_files"] for g in groups), "each group names the files the index came nearest with"
    assert sum(g["count"] for g in groups) == report["gap_questions"]

    code, text, err = _cli(capsys, "gaps", "--session", harbor)
    assert code == 0, err
    assert text.startswith(f"coverage gaps in session '{harbor}': ")
    for question in refused:
        assert question in text, question
    assert "nearest files: " in text


def test_a_down_vote_joins_its_logged_turn_and_round_trips_to_export(
        db: Database, cli_on_test_db: None, capsys: pytest.CaptureFixture[str], harbor: str,
        asked: dict[str, dict], tmp_path: Path) -> None:
    question = "How is a berth assigned to a ship?"
    answer = asked[question]
    with db.connection() as conn:
        run_id = next(r.run_id for r in list_questions(conn, harbor) if r.question == question)
        record_feedback(conn, harbor, run_id=run_id, thread_id=None, question=question, answer=answer["answer"],
                        citations=answer["citations"], score=-1, comment="не сказано про длину")
        record_feedback(conn, harbor, run_id=None, thread_id=None, question="How do I install Harbor?",
                        answer="pip install harbor-port", citations=[{"path": "docs/install.md", "start_line": 3,
                                                                     "end_line": 3}], score=1, comment=None)
    code, out, err = _cli(capsys, "gaps", "--session", harbor, "--json")
    assert code == 0, err
    report = json.loads(out)
    entries = [q for g in report["groups"] for q in g["questions"] if q["question"] == question]
    assert len(entries) == 1 and "voted down" in entries[0]["reasons"] and entries[0]["count"] == 1

    dataset = tmp_path / "votes.jsonl"
    code, _, err = _cli(capsys, "feedback", "export", "--session", harbor, "--out", str(dataset))
    assert code == 0 and "2 cases from 2 votes" in err and "1 down-voted need review" in err
    cases = {c["question"]: c for c in map(json.loads, dataset.read_text(encoding="utf-8").splitlines())}
    assert cases["How do I install Harbor?"]["gold_paths"] == ["docs/install.md"]
    assert cases["How do I install Harbor?"]["answerable"] is True
    assert cases[question]["needs_review"] is True and cases[question]["answerable"] is None
    assert cases[question]["review"]["comment"] == "не сказано про длину"

    code, out, err = _cli(capsys, "feedback", "list", "--session", harbor)
    assert code == 0, err
    assert "2 votes" in out and "-1  How is a berth assigned" in out and "не сказано про длину" in out


def test_a_group_nothing_was_logged_near_gets_the_index_nearest_files(db: Database, harbor: str) -> None:
    from stores.question_log import nearest_paths
    from stores.sessions import get_session

    embedder = make_embedder("use")
    with db.connection() as conn:
        session = get_session(conn, harbor)
        paths = nearest_paths(conn, session, embedder.embed_query("tide window for deep-draught ships"))
    assert paths[0] == "docs/tides.md" and len(paths) == len(set(paths)) <= 3


def test_since_leaves_out_what_was_asked_before(cli_on_test_db: None, capsys: pytest.CaptureFixture[str],
                                                harbor: str, asked: dict[str, dict]) -> None:
    from datetime import UTC, datetime

    code, out, err = _cli(capsys, "gaps", "--session", harbor, "--since", "1d", "--json")
    assert code == 0 and json.loads(out)["logged_questions"] == 30, err
    now = datetime.now(UTC).isoformat()
    code, out, err = _cli(capsys, "gaps", "--session", harbor, "--since", now)
    assert code == 0, err
    assert out.startswith(f"no coverage gaps in session '{harbor}' since ")
    # an empty window is not an empty log (issue 37 item 19)
    assert "none was asked in this window (30 logged in total, the last at " in out, out
    assert "LOTSMAN_LOG_QUESTIONS" not in out


def test_an_export_it_cannot_write_is_one_line(cli_on_test_db: None, capsys: pytest.CaptureFixture[str],
                                               harbor: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("", encoding="utf-8")
    code, out, err = _cli(capsys, "feedback", "export", "--session", harbor, "--out", str(tmp_path / "file" / "x"))
    assert code != 0 and err.startswith("error: cannot write ") and len(err.strip().splitlines()) == 1


def test_purge_deletes_the_log_and_keeps_the_votes(db: Database, cli_on_test_db: None,
                                                   capsys: pytest.CaptureFixture[str], harbor: str,
                                                   asked: dict[str, dict]) -> None:
    from stores.feedback import list_feedback

    with db.connection() as conn:
        votes = len(list_feedback(conn, harbor))
    code, out, err = _cli(capsys, "gaps", "--purge", "--session", harbor)
    assert code == 0, err
    assert out.strip() == f"deleted 30 logged questions of session '{harbor}' (votes are kept)"
    with db.connection() as conn:
        assert list_questions(conn, harbor) == []
        assert len(list_feedback(conn, harbor)) == votes


@pytest.mark.parametrize(("argv", "says"), [
    (["gaps", "--session", "no-such-session-gaps"], "error: no session 'no-such-session-gaps'"),
    (["gaps", "--purge", "--session", "no-such-session-gaps"], "error: no session 'no-such-session-gaps'"),
    (["feedback", "list", "--session", "no-such-session-gaps"], "error: no session 'no-such-session-gaps'"),
    (["feedback", "export", "--session", "no-such-session-gaps"], "error: no session 'no-such-session-gaps'"),
    (["gaps", "--session", "x", "--since", "yesterday"], "error: argument --since: 'yesterday' is not a date"),
    (["gaps", "--session", "x", "--since", "2999-01-01"], "is in the future"),
    (["feedback", "list", "--session", "x", "--since", "3m"], "is not a date"),
    (["gaps", "--session", "x", "--low-confidence", "2"], "between 0 and 1"),
    (["gaps"], "--session"),
])
def test_bad_input_is_one_line_and_a_non_zero_exit(db: Database, cli_on_test_db: None,
                                                   capsys: pytest.CaptureFixture[str], argv: list[str],
                                                   says: str) -> None:
    code, out, err = _cli(capsys, *argv)
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and says in err, err


def test_lotsman_ask_logs_its_turn_only_when_logging_is_on(db: Database, cli_on_test_db: None,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], harbor: str) -> None:
    from graph.settings import get_settings

    with db.connection() as conn:
        before = len(list_questions(conn, harbor))
    assert _cli(capsys, "ask", "Is there a Kubernetes operator?", "--session", harbor)[0] == 0
    monkeypatch.setenv("LOTSMAN_LOG_QUESTIONS", "true")
    get_settings.cache_clear()
    assert _cli(capsys, "ask", "How do I restore a backup?", "--session", harbor)[0] == 0
    with db.connection() as conn:
        new = list_questions(conn, harbor)[before:]
    assert [(r.question, r.source) for r in new] == [("How do I restore a backup?", "cli")]
    assert new[0].run_id and new[0].top_files[0] == "docs/backup.md" and not new[0].abstained
