"""Issue 30: a repository in the seeds' own shape (module cards with relation fields, a conventions page and an
ADR, a FastAPI app with models and security dependencies, Celery and APScheduler jobs, a click CLI), indexed
with the real embedder and asked through the real CLI: relation, rule and entrypoint questions are answered
from the D5 edges, the policy layer and C3, right file first, the fact in the answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import graph.cli as cli
from stores.database import Database
from tests.integration.conftest import indexed_session

SEED_REPO = Path(__file__).resolve().parents[1] / "fixtures" / "seed_repo"


@pytest.fixture(scope="module")
def seed_session(db: Database) -> Iterator[str]:
    from stores.embedders import make_embedder

    for session in indexed_session(db, SEED_REPO, "it-seed", make_embedder("use")):
        yield session.name


def _ask(question: str, session: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert cli.main(["ask", question, "--session", session, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _retrieve(question: str, session: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert cli.main(["retrieve", question, "--session", session, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _line(path: str, text: str) -> int:
    lines = (SEED_REPO / path).read_text().split("\n")
    return next(i for i, line in enumerate(lines, 1) if text in line)


# (question, first cited file, facts the answer states, a frontmatter line that must be cited)
RELATION_CASES = [
    ("кто вызывает /internal/rag/retrieve?", "docs/modules/chat.md", ["agent.chat"],
     ("docs/modules/chat.md", "- /internal/rag/retrieve")),
    ("Who calls /internal/rag/retrieve?", "docs/modules/chat.md", ["agent.chat"],
     ("docs/modules/chat.md", "- /internal/rag/retrieve")),
    ("какие модули пишут в таблицу rag_chunks?", "docs/modules/indexing.md", ["rag.indexing"],
     ("docs/modules/indexing.md", "- rag_chunks")),
    ("Which modules read the rag_chunks table?", "docs/modules/retrieval.md", ["rag.retrieval"],
     ("docs/modules/retrieval.md", "reads_db: [rag_chunks]")),
    ("кто потребляет событие index.completed?", "docs/modules/chat.md", ["agent.chat"],
     ("docs/modules/chat.md", "consumes_events: [index.completed]")),
    ("Which modules emit index.completed?", "docs/modules/indexing.md", ["rag.indexing"],
     ("docs/modules/indexing.md", "- index.completed")),
]


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize(("question", "first", "facts", "cited"), RELATION_CASES, ids=[c[0] for c in RELATION_CASES])
def test_relation_question_answered_from_the_edges(question: str, first: str, facts: list[str],
                                                   cited: tuple[str, str], seed_session: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    answer = _ask(question, seed_session, capsys)
    assert answer["abstained"] is False, answer["answer"]
    assert answer["citations"][0]["path"] == first, answer
    assert all(fact in answer["answer"] for fact in facts), answer["answer"]
    line = _line(*cited)
    # the frontmatter line itself, not the card's whole-file span that happens to cover it
    assert any(c["path"] == cited[0] and c["start_line"] <= line <= c["end_line"] < _line(cited[0], "# ")
               for c in answer["citations"]), answer["citations"]


RELATION_QUESTIONS = ["Who uses rag.indexing?", "кто использует rag.indexing?"]


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize("question", RELATION_QUESTIONS)
def test_relation_both_directions(question: str, seed_session: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`rag.retrieval uses_logic rag.indexing` (retrieval.md) and `rag.indexing used_by rag.retrieval`
    (indexing.md): one question finds both ends' frontmatter lines first."""
    assert cli.main(["retrieve", question, "--session", seed_session, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["plan"]["profile"] == "docs_relation_graph"
    top = {(r["path"], r["lines"][0]) for r in found["rows"][:3]}
    ends = {("docs/modules/retrieval.md", _line("docs/modules/retrieval.md", "uses_logic:")),
            ("docs/modules/indexing.md", _line("docs/modules/indexing.md", "- rag.retrieval"))}
    assert ends <= top, found["rows"][:3]


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize("question", RELATION_QUESTIONS)
def test_relation_answer_names_the_other_end(question: str, seed_session: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    answer = _ask(question, seed_session, capsys)
    assert answer["abstained"] is False and "rag.retrieval" in answer["answer"], answer["answer"]


@pytest.mark.usefixtures("cli_on_test_db")
def test_relation_answered_across_domains(seed_session: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The target's card names a domain (rag) and the relation's other end lives in another (agent): the
    relation plan keeps no domain filter."""
    assert cli.main(["retrieve", "who consumes events emitted by rag.indexing?", "--session", seed_session,
                     "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["plan"]["filters"].get("metadata_domain") is None, found["plan"]


POLICY_CASES = [
    ("Какие правила для миграций?", "docs/conventions/naming.md", "Нельзя менять схему без записи в журнале версий"),
    ("What are the rules for table names?", "docs/conventions/naming.md", "Every table name must start with the"),
]


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize(("question", "first", "fact"), POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_rules_question_reaches_the_policy_layer(question: str, first: str, fact: str, seed_session: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    found = _retrieve(question, seed_session, capsys)
    assert found["plan"]["profile"] == "docs_policy_rules", found["plan"]
    rules = [r for r in found["rows"][:3] if r["layer"] == "D6_POLICY_INDEX" and r["path"] == first]
    assert rules and fact in (SEED_REPO / first).read_text().split("\n")[rules[0]["lines"][0] - 1], found["rows"][:3]
    answer = _ask(question, seed_session, capsys)
    assert answer["abstained"] is False and answer["citations"][0]["path"] == first, answer
    assert fact in answer["answer"], answer["answer"]


# (question, first cited file, facts in the answer, whether retrieval finds the C3 row of that file)
ENTRY_CASES = [
    # since the evidence pack reads units (issue 38) the answer quotes the route's own lines (decorator and
    # signature, app/main.py:17-20), which state both facts, instead of the C3 card that summarises them
    ("Which endpoint takes HeroCreate?", "app/main.py", ["/heroes", "HeroCreate"], False),
    ("Какой эндпоинт принимает HeroCreate?", "app/main.py", ["/heroes", "HeroCreate"], False),
    # the C3 rows are units of the scorer (issue 38): the card listing the routes' auth and the jobs' schedules
    ("Which routes need auth?", "app/main.py", ["get_current_user"], True),
    ("Какие маршруты требуют авторизации?", "app/main.py", ["get_current_user"], True),
    ("What runs on a schedule?", "app/tasks.py", ["purge_sessions"], True),
    ("Что запускается по расписанию?", "app/tasks.py", ["refresh_aliases"], True),
    # the handler's own code states these as well as the C3 row does
    ("What options does the import-heroes command take?", "app/cli.py", ["--dry-run", "--batch-size"], False),
    ("Какие опции у команды import-heroes?", "app/cli.py", ["--dry-run", "--batch-size"], False),
    ("Which Celery task runs on the reindex queue?", "app/tasks.py", ["reindex_repository"], False),
]


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize(("question", "first", "facts", "from_c3"), ENTRY_CASES,
                         ids=[str(c[0] if isinstance(c, tuple) else c.values[0]) for c in ENTRY_CASES])
def test_entrypoint_question_answered_from_c3(question: str, first: str, facts: list[str], from_c3: bool,
                                              seed_session: str, capsys: pytest.CaptureFixture[str]) -> None:
    if from_c3:  # retrieval finds the C3 row; the answer quotes the scored units, the C3 card among them
        found = _retrieve(question, seed_session, capsys)
        assert any(r["layer"] == "C3_ENTRYPOINTS" and r["path"] == first for r in found["rows"]), found["rows"]
    answer = _ask(question, seed_session, capsys)
    assert answer["abstained"] is False and answer["citations"][0]["path"] == first, answer
    assert all(fact in answer["answer"] for fact in facts), answer["answer"]
