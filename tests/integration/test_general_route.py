"""Issue 41 item 4: on a small repository whose only background job is a Celery `shared_task` (and one cron
job), "what runs as a background task / on a schedule" is answered from its C3 entrypoint row, first, on the
general route (seed 002's fallback when no docs anchor matches) as on the docs route; a practical question
on the general route is answered from the code, not from the README; an overview question gets the landing
pages."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import graph.cli as cli
from stores.database import Database
from tests.integration.conftest import indexed_session

FILES = {
    "README.md": "# Heroes\n\nA small service that keeps a list of heroes and mails a digest of new ones.\n\n"
                 "Run it with `python -m heroes`.\n",
    "heroes/__init__.py": '"""Heroes: a list of heroes and a weekly digest."""\n',
    "heroes/store.py": '"""Where heroes are kept."""\n\n\ndef add_hero(name: str, power: str) -> dict[str, str]:\n'
                       '    """Add a hero with a name and a power; a power is at most 40 characters."""\n'
                       '    if len(power) > 40:\n        raise ValueError("power too long")\n'
                       '    return {"name": name, "power": power}\n',
    "heroes/tasks.py": '"""Work done outside a request."""\n\nfrom celery import shared_task\n\n\n@shared_task\n'
                       'def send_digest() -> None:\n    """Mail the digest of new heroes."""\n',
}


@pytest.fixture(scope="module")
def small_session(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from stores.embedders import make_embedder

    root = tmp_path_factory.mktemp("heroes")
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    for session in indexed_session(db, root, "it-general", make_embedder("use")):
        yield session.name


def _run(command: str, question: str, session: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert cli.main([command, question, "--session", session, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


BACKGROUND = [
    "What runs as a background task in this project?",
    "What runs as a background task?",
    "What runs as a background task / on a schedule in this project?",
    "Что выполняется в фоне?",
]


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize("question", BACKGROUND)
def test_background_task_answered_from_its_c3_row(question: str, small_session: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    found = _run("retrieve", question, small_session, capsys)
    first = found["rows"][0]
    assert first["layer"] == "C3_ENTRYPOINTS" and first["path"] == "heroes/tasks.py", (found["gate"], found["rows"][:3])
    assert found["relevant"], found["gate"]
    answer = _run("ask", question, small_session, capsys)
    assert answer["abstained"] is False and answer["citations"][0]["path"] == "heroes/tasks.py", answer
    assert "send_digest" in answer["answer"], answer["answer"]


@pytest.mark.usefixtures("cli_on_test_db")
def test_the_general_route_is_among_them(small_session: str, capsys: pytest.CaptureFixture[str]) -> None:
    routes = {q: _run("retrieve", q, small_session, capsys)["route"]["intent"] for q in BACKGROUND}
    assert "GENERAL_QA" in routes.values(), routes


@pytest.mark.usefixtures("cli_on_test_db")
def test_a_practical_general_question_does_not_lead_with_the_readme(small_session: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    question = "How long may a hero's power be?"
    found = _run("retrieve", question, small_session, capsys)
    assert found["route"]["intent"] == "GENERAL_QA", found["route"]
    assert found["lead"].startswith("heroes/store.py:"), found["rows"][:4]


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize("question", ["What is this project and who is it for?", "Что это за проект?"])
def test_an_overview_question_still_gets_the_landing_pages(question: str, small_session: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    found = _run("retrieve", question, small_session, capsys)
    assert found["lane_sizes"].get("landing"), found["lane_sizes"]
    assert {"README.md", "heroes/__init__.py"} & {r["path"] for r in found["rows"]}, found["rows"]
