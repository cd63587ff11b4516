"""Issue 37 item 19: `gaps --since 0d` on a session whose questions are all older says the window is empty,
with how many are logged and when the last was, instead of "no question is logged"."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graph.cli import main
from stores.database import Database
from stores.embedders import make_embedder
from stores.question_log import log_question
from stores.sessions import RagSession
from tests.integration.conftest import indexed_session

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def session(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RagSession]:
    root = tmp_path_factory.mktemp("gaps-window")
    (root / "README.md").write_text("# Harbor\n\nHarbor schedules ship arrivals.\n", encoding="utf-8")
    yield from indexed_session(db, root, "gaps-window", make_embedder("fake"))


def _gaps(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["gaps", *argv]) == 0
    return capsys.readouterr().out


def test_an_empty_window_is_not_an_empty_log(db: Database, session: RagSession, cli_on_test_db: None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = _gaps(capsys, "--session", session.name)
    assert "no question is logged for session" in out and "LOTSMAN_LOG_QUESTIONS=true" in out, out

    with db.connection() as conn:
        for question in ("How do I connect Harbor to Kafka?", "Is there a Helm chart?"):
            log_question(conn, session_name=session.name, question=question, run_id=None, abstained=True,
                         confidence=None, top_files=["README.md"], source="cli")
        conn.execute("UPDATE rag_question_log SET created_at = '2026-11-01T10:00:00Z' WHERE rag_session_id = %s",
                     (session.rag_session_id,))
    out = _gaps(capsys, "--session", session.name, "--since", "0d")
    assert "no question is logged" not in out and "LOTSMAN_LOG_QUESTIONS" not in out, out
    assert "none was asked in this window (2 logged in total, the last at 2026-11-01 10:00 UTC)" in out, out

    out = _gaps(capsys, "--session", session.name, "--since", "0d", "--json")
    assert '"logged_total": 2' in out and '"last_logged_at": "2026-11-01T10:00:00+00:00"' in out, out

    out = _gaps(capsys, "--session", session.name)  # the whole log: two refusals in a topic
    assert out.startswith(f"coverage gaps in session '{session.name}': 2 of 2 logged questions"), out
