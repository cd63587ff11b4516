"""What a fresh `lotsman ask` process loads (issue 26: a one-second cold ask).

Each check runs in a new interpreter, because the test process has long loaded everything. Speed itself is
measured by `make bench` (section `cold`); these tests guard the properties the speed comes from.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from graph.cli import LEAF_MODULES

ROOT = Path(__file__).resolve().parents[2]

_ASK_PATH = """
import json, os, sys
for var in [v for v in os.environ if v.startswith("GIGACHAT_")]:
    del os.environ[var]
from graph import cli
cli._import_graph_stack("ask")
# what the ask handler imports and builds before the first question (graph/cli_commands.py `_ask`)
from langchain_core.messages import HumanMessage
from graph.builder import build_graph
from graph.context import Context
from graph.deps import GraphDeps
from graph.nodes import SOURCE_KEY
from graph.settings import get_settings
deps = GraphDeps.from_settings(get_settings())
assert deps.chat_model is None
build_graph(deps)
print(json.dumps(sorted(sys.modules)))
"""

NOT_ON_AN_OFFLINE_ASK = {
    "gigachat": "the GigaChat SDK (only a configured chat model needs it)",
    "langchain_gigachat": "LangChain's GigaChat wrapper",
    "langchain_core.language_models.chat_models": "BaseChatModel (type hints only, under TYPE_CHECKING)",
    "langsmith.types": "LangSmith's ~200 REST API models (the tracers need one Literal alias from it)",
    "langgraph_sdk": "the LangGraph SDK's HTTP client (langgraph.runtime needs one protocol from it)",
    "langgraph_sdk.client": "the LangGraph SDK's HTTP client",
    "httpx": "the HTTP client (only an LLM call's error is classified by it)",
    "yaml": "the router prompts' parser (only a router with a chat model reads them)",
    "rich": "httpx's console pretty-printer",
}


def _modules_after(code: str) -> set[str]:
    env_code = "import os; os.environ['LANGSMITH_TRACING'] = 'false'\n" + code
    done = subprocess.run([sys.executable, "-c", env_code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_an_offline_ask_loads_neither_the_chat_model_stack_nor_unused_packages() -> None:
    loaded = _modules_after(_ASK_PATH)
    assert "langgraph.graph" in loaded and "graph.builder" in loaded  # the real stack was imported
    wrongly = {name: why for name, why in NOT_ON_AN_OFFLINE_ASK.items() if name in loaded}
    assert not wrongly, f"a fresh offline ask imports what it never uses: {wrongly}"


def _leaf_file(name: str) -> Path:
    top, *middle, leaf = name.split(".")
    spec = importlib.util.find_spec(top)
    assert spec is not None and spec.submodule_search_locations, f"{top} is not an installed package"
    return Path(next(iter(spec.submodule_search_locations)), *middle, f"{leaf}.py")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


@pytest.mark.parametrize("name", LEAF_MODULES)
def test_a_leaf_module_loaded_alone_needs_only_the_standard_library(name: str) -> None:
    """Loaded without its package's `__init__` (`graph.cli.load_leaf_modules`), a leaf is the same module
    only while it imports nothing of its own package: an upgrade that changes that must fail here."""
    allowed_third_party = {"typing_extensions"}
    foreign = {m for m in _imported_modules(_leaf_file(name))
               if m.startswith(".") or (m.split(".")[0] not in sys.stdlib_module_names
                                        and m.split(".")[0] not in allowed_third_party)}
    assert not foreign, f"{name} imports {sorted(foreign)}: remove it from graph.cli.LEAF_MODULES"


def test_the_packages_load_in_full_later_and_reuse_the_leaves() -> None:
    code = """
import json, sys
from graph import cli
loaded = cli.load_leaf_modules(cli.LEAF_MODULES)
leaves = {name: sys.modules[name] for name in loaded}
import langgraph.runtime
import langsmith.types
from langgraph_sdk import Auth, get_client
from langsmith.types import Run, RunSelectField
from langsmith._internal._v2_migration_utils import _V2_RUN_SELECTS
import langgraph_sdk.auth.types as auth_types
print(json.dumps({
    "loaded": loaded,
    "same_leaves": all(sys.modules[name] is module for name, module in leaves.items()),
    "alias_shared": RunSelectField is leaves["langsmith.types.run_select_field"].RunSelectField,
    "protocol_shared": langgraph.runtime.BaseUser is auth_types.BaseUser,
    "package_attribute": hasattr(sys.modules["langgraph_sdk.auth"], "types"),
    "full_packages": hasattr(langsmith.types, "Run") and hasattr(sys.modules["langgraph_sdk"], "get_client"),
}))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"loaded": list(LEAF_MODULES), "same_leaves": True, "alias_shared": True,
                      "protocol_shared": True, "package_attribute": True, "full_packages": True}


def test_a_leaf_whose_package_is_loaded_already_is_left_to_the_import_system() -> None:
    code = """
import json, sys
import langgraph_sdk
from graph import cli
print(json.dumps(cli.load_leaf_modules(["langgraph_sdk.auth.types", "no_such_package.sub.leaf",
                                        "email.mime.no_such_leaf"])))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize(("command", "own_argv", "threads", "skip"), [
    ("ask", True, 0, True),
    ("retrieve", True, 0, True),
    ("ask", True, 1, False),  # e.g. LangSmith's tracing thread: it uploads while the interpreter shuts down
    ("ask", False, 0, False),  # main(argv) called inside a process that goes on (tests, `python -m evals`)
    ("chat", True, 0, False),
    ("index", True, 0, False),
    ("watch", True, 0, False),
    ("serve", True, 0, False),
])
def test_only_a_finished_one_shot_program_skips_the_interpreter_teardown(command: str, own_argv: bool,
                                                                           threads: int, skip: bool) -> None:
    from graph.cli import skip_finalization

    assert skip_finalization(command, own_argv=own_argv, unfinished_threads=threads) is skip


def test_a_program_that_skips_the_teardown_keeps_its_output_exit_code_and_exit_handlers(tmp_path: Path) -> None:
    """`_exit_now` is what ends a one-shot `lotsman ask`: buffered output, the exit status and the exit
    handlers (logging's flush, a LangSmith client's session) all happen as on an ordinary exit."""
    marker = tmp_path / "atexit-ran"
    code = f"""
import atexit, pathlib, sys
from graph.cli import _exit_now
atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text("yes"))
sys.stdout.write("answer without a newline")
sys.stderr.write("trailer")
_exit_now(3)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (3, "answer without a newline", "trailer")
    assert marker.read_text() == "yes"


@pytest.mark.parametrize(("argv", "reads_plugins"), [
    (["ask", "Как настроить CORS?"], False),
    (["-v", "ask", "q", "--json"], False),
    (["retrieve", "q", "-k", "3"], False),
    (["index", "."], False),
    (["eval", "d.jsonl", "--corpus", "c"], True),  # a plug-in's command
    (["--help"], True),  # the listing names the plug-ins' commands too
    ([], True),
    (["no-such-command"], True),  # the usage error lists every command
])
def test_a_built_in_command_line_reads_no_plugin_entry_points(monkeypatch: pytest.MonkeyPatch, argv: list[str],
                                                              reads_plugins: bool) -> None:
    import graph.cli as cli

    groups: list[str] = []
    monkeypatch.setattr(cli, "entry_points", lambda *, group: groups.append(group) or [])
    parser = cli.parser_for(argv)
    assert bool(groups) is reads_plugins
    if reads_plugins:
        return
    assert parser.parse_args(argv).command == next(a for a in argv if not a.startswith("-"))


def test_a_plugin_command_still_runs_through_main() -> None:
    done = subprocess.run([sys.executable, "-m", "graph.cli", "eval", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "--corpus" in done.stdout, done.stderr
