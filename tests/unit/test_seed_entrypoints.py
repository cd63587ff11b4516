"""Issue 30 item 3: seed 003 §5.2 C3 attributes (http.auth, request/response models, cli.args_schema,
task.queue / task.cron) read statically."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from stores.indexing.code.entry_details import (
    decorator_task,
    function_cli_params,
    http_details,
    is_auth_dependency,
    option_param,
    registered_job,
    security_objects,
)
from stores.indexing.code_pipeline import index_python
from stores.layers import Layer

SEED_REPO = Path(__file__).resolve().parents[1] / "fixtures" / "seed_repo"


def _function(source: str) -> tuple[ast.Call | None, ast.FunctionDef]:
    node = ast.parse(source).body[-1]
    assert isinstance(node, ast.FunctionDef)
    decorator = node.decorator_list[0] if node.decorator_list else None
    return (decorator if isinstance(decorator, ast.Call) else None), node


@pytest.mark.parametrize(
    ("source", "request_model", "response_model", "auth"),
    [
        ('@app.post("/h", response_model=HeroRead)\ndef f(hero: HeroCreate, u: str = Depends(get_current_user)): ...',
         ["HeroCreate"], "HeroRead", ["get_current_user"]),
        ('@app.get("/h/{i}")\ndef f(i: int) -> HeroRead: ...', [], "HeroRead", []),
        ('@app.get("/h")\ndef f(q: str = Query(None)) -> list[HeroRead]: ...', [], "HeroRead", []),
        ('@app.delete("/h", dependencies=[Security(check, scopes=["admin"])])\ndef f(): ...', [], None, ["check"]),
        ('@app.get("/h", dependencies=[Depends(get_db)])\ndef f(): ...', [], None, []),
        ('@app.put("/h")\ndef f(item: Annotated[Item, Body()], user: Annotated[User, Depends(current_user)]): ...',
         ["Item"], None, ["current_user"]),
        ('@app.post("/h")\ndef f(item: Item | None = None, t: str = Depends(oauth2_scheme)): ...',
         ["Item"], None, ["oauth2_scheme"]),
    ],
)
def test_http_details(source: str, request_model: list[str], response_model: str | None, auth: list[str]) -> None:
    decorator, function = _function(source)
    details = http_details(decorator, function, frozenset({"oauth2_scheme"}))
    assert (details.request_model, details.response_model, details.auth) == (request_model, response_model, auth)


@pytest.mark.parametrize(
    ("marker", "callee", "auth"),
    [("Security", "anything", True), ("Depends", "get_current_user", True), ("Depends", "verify_token", True),
     ("Depends", "HTTPBearer", True), ("Depends", "scheme", True), ("Depends", "get_db", False),
     ("Depends", "common_parameters", False)],
)
def test_auth_dependency(marker: str, callee: str, auth: bool) -> None:
    assert is_auth_dependency(marker, callee, frozenset({"scheme"})) is auth


def test_security_objects() -> None:
    tree = ast.parse('oauth2_scheme = OAuth2PasswordBearer(tokenUrl="t")\nx = dict()\nk = APIKeyHeader(name="k")')
    assert security_objects(tree) == {"oauth2_scheme", "k"}


@pytest.mark.parametrize(
    ("decorator", "celery", "expected"),
    [
        ('@celery_app.task(queue="reindex")', True, ("celery", None, "reindex", None)),
        ("@shared_task", False, ("celery", None, None, None)),
        ('@shared_task(name="digest")', False, ("celery", "digest", None, None)),
        ("@app.task", False, None),  # not a Celery module: `task` alone says nothing
        ('@scheduler.scheduled_job("interval", minutes=15)', False, ("apscheduler", None, None, "interval minutes=15")),
        ('@scheduler.scheduled_job("cron", hour=3, id="x")', False, ("apscheduler", "x", None, "cron hour=3")),
        ('@aiocron.crontab("0 3 * * *")', False, ("cron", None, None, "0 3 * * *")),
        ('@app.get("/x")', True, None),
    ],
)
def test_decorator_task(decorator: str, celery: bool, expected: tuple | None) -> None:
    _, function = _function(f"{decorator}\ndef f(): ...")
    task = decorator_task(function.decorator_list[0], celery=celery)
    assert (None if task is None else (task.framework, task.name, task.queue, task.cron)) == expected


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ('scheduler.add_job(purge, "cron", hour=3, minute=30)', ("purge", "cron hour=3 minute=30")),
        ('sched.add_job(jobs.run, trigger="interval", seconds=5, id="r")', ("jobs.run", "interval seconds=5")),
        ("queue.add_job(purge)", None),
        ('scheduler.add(purge, "cron")', None),
    ],
)
def test_registered_job(call: str, expected: tuple | None) -> None:
    node = ast.parse(call).body[0].value  # type: ignore[attr-defined]
    found = registered_job(node)
    assert (None if found is None else (found[0], found[1].cron)) == expected


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ('click.option("--dry-run", is_flag=True, help="No writes.")', ("--dry-run", "flag", None, None, "No writes.")),
        ('click.option("-b", "--batch-size", type=int, default=100)', ("--batch-size", "option", "int", "100", None)),
        ('click.argument("source")', ("source", "argument", None, None, None)),
        ('p.add_argument("--verbose", action="store_true")', ("--verbose", "flag", None, None, None)),
        ('p.add_argument("target")', ("target", "argument", None, None, None)),
        ('p.add_argument("--out", default="x.json")', ("--out", "option", None, "x.json", None)),
        ("click.echo('x')", None),
    ],
)
def test_option_param(call: str, expected: tuple | None) -> None:
    param = option_param(ast.parse(call).body[0].value)  # type: ignore[arg-type, attr-defined]
    assert (None if param is None else (param.name, param.kind, param.type, param.default, param.help)) == expected


def test_typer_params_from_the_signature() -> None:
    _, function = _function('@app.command()\ndef f(name: str, count: int = typer.Option(1, help="How many.")): ...')
    params = function_cli_params(function, typer=True)
    assert [(p.name, p.kind, p.type, p.default, p.help) for p in params] == [
        ("name", "argument", "str", None, None), ("--count", "option", "int", "1", "How many.")]
    assert function_cli_params(function, typer=False) == []  # a click command's arguments are its decorators


def _c3(path: str) -> dict[str, object]:
    result = index_python(path, (SEED_REPO / path).read_text())
    return {r.title: r for r in result.records if r.layer == Layer.C3_ENTRYPOINTS}


def test_fastapi_route_rows_carry_models_and_auth() -> None:
    rows = _c3("app/main.py")
    create = rows["POST /heroes"]
    assert create.metadata["request_model"] == ["HeroCreate"] and create.metadata["response_model"] == "HeroRead"
    assert create.metadata["http.auth"] == ["get_current_user"]
    assert "эндпоинт принимает): HeroCreate" in create.content and "авторизации): get_current_user" in create.content
    assert rows["DELETE /heroes/{hero_id}"].metadata["http.auth"] == ["get_current_user"]
    assert "http.auth" not in rows["GET /heroes/{hero_id}"].metadata  # open to anonymous clients


def test_task_and_schedule_rows() -> None:
    rows = {r.metadata["handler"]: r for r in _c3("app/tasks.py").values()}
    assert rows["app.tasks.reindex_repository"].metadata["task.queue"] == "reindex"
    assert rows["app.tasks.send_digest"].metadata["framework"] == "celery"
    assert rows["app.tasks.refresh_aliases"].metadata["task.cron"] == "interval minutes=15"
    purge = rows["app.tasks.purge_sessions"]
    assert purge.metadata["task.cron"] == "cron hour=3 minute=30" and "Delete sessions" in purge.content
    assert purge.span_start == purge.span_end == 29  # the add_job line


def test_click_command_args_schema() -> None:
    command = _c3("app/cli.py")["cli import-heroes"]
    assert [p["name"] for p in command.metadata["cli.args_schema"]] == ["source", "--batch-size", "--dry-run"]
    assert "--dry-run (flag)" in command.content and "options (опции)" in command.content


def test_argparse_subcommand_and_program_options() -> None:
    source = (
        "import argparse\n\ndef main():\n    parser = argparse.ArgumentParser()\n"
        '    parser.add_argument("--verbose", action="store_true")\n    sub = parser.add_subparsers()\n'
        '    build = sub.add_parser("build")\n    build.add_argument("target")\n\n'
        'if __name__ == "__main__":\n    main()\n'
    )
    rows = {r.title: r for r in index_python("tool.py", source).records if r.layer == Layer.C3_ENTRYPOINTS}
    assert [p["name"] for p in rows["cli build"].metadata["cli.args_schema"]] == ["target"]
    assert [p["name"] for p in rows["main python -m tool"].metadata["cli.args_schema"]] == ["--verbose"]
