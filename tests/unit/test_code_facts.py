"""C7_CODE_FACTS (issue 38, item 1): one row per Python construct a reader asks about, citing its exact lines."""

from __future__ import annotations

import ast
import textwrap

import pytest

from stores.indexing.code.facts import MAX_CONDITION_GAP, collect_facts, fact_records
from stores.indexing.code.module import build_context
from stores.indexing.code_pipeline import index_python
from stores.layers import Layer


def _facts(source: str, path: str = "pkg/mod.py") -> list[tuple[str, str, str, int, int, str | None, str | None]]:
    source = textwrap.dedent(source).lstrip("\n")
    context = build_context(path, source, ast.parse(source))
    return [(f.kind, f.name, f.owner, f.start, f.end, f.value, f.detail) for f in collect_facts(context)]


# (construct, source, one fact that must be found: kind, name, owner, start, end, value, detail)
CASES = [
    ("function default", """
     def connect(host, timeout=5.0):
         pass
     """, ("parameter", "timeout", "pkg.mod.connect", 1, 1, "5.0", None)),
    ("__init__ default on its own line", """
     class Client:
         def __init__(
             self,
             retry_delay: float = 0.5,
             max_delay: float = 30,
         ):
             pass
     """, ("parameter", "max_delay", "pkg.mod.Client.__init__", 5, 5, "30", None)),
    ("keyword-only flag", """
     def run(cmd, *, check=False):
         pass
     """, ("parameter", "check", "pkg.mod.run", 1, 1, "False", "keyword-only")),
    ("async method default", """
     class Pool:
         async def acquire(self, limit=10):
             pass
     """, ("parameter", "limit", "pkg.mod.Pool.acquire", 2, 2, "10", None)),
    ("dataclass field", """
     from dataclasses import dataclass, field
     @dataclass
     class Settings:
         workers: int = 4
     """, ("field", "workers", "pkg.mod.Settings", 4, 4, "4", None)),
    ("dataclass field(default=...)", """
     from dataclasses import dataclass, field
     @dataclass
     class Settings:
         tags: list = field(default_factory=list)
     """, ("field", "tags", "pkg.mod.Settings", 4, 4, "list", None)),
    ("pydantic Field default", """
     from pydantic import BaseModel, Field
     class Config(BaseModel):
         port: int = Field(8080, description="where to listen")
     """, ("field", "port", "pkg.mod.Config", 3, 3, "8080", None)),
    ("attrs attr.ib default", """
     import attr
     @attr.s
     class Job:
         retries = attr.ib(default=3)
         queue: str = attr.ib(default="default")
     """, ("field", "queue", "pkg.mod.Job", 5, 5, '"default"', None)),
    ("TypedDict field without default", """
     from typing import TypedDict
     class Event(TypedDict):
         level: str
     """, ("field", "level", "pkg.mod.Event", 3, 3, None, None)),
    ("click option", """
     import click
     @click.command()
     @click.option("--count", "-c", default=1, help="Number of greetings.")
     def hello(count):
         pass
     """, ("option", "--count -c", "pkg.mod.hello", 3, 3, "1", "Number of greetings.")),
    ("typer option as a default", """
     import typer
     def main(name: str = typer.Option("World", "--name", help="Who to greet")):
         pass
     """, ("option", "--name", "pkg.mod.main", 2, 2, '"World"', "Who to greet")),
    ("argparse add_argument", """
     import argparse
     def build():
         parser = argparse.ArgumentParser()
         parser.add_argument("--jobs", type=int, default=2, help="parallel jobs")
     """, ("option", "--jobs", "pkg.mod.build", 4, 4, "2", "parallel jobs")),
    ("module constant", """
     DEFAULT_TIMEOUT = 10
     """, ("constant", "DEFAULT_TIMEOUT", "pkg.mod", 1, 1, "10", None)),
    ("annotated module constant", """
     MAX_SIZE: int = 1024 * 1024
     """, ("constant", "MAX_SIZE", "pkg.mod", 1, 1, "1024 * 1024", None)),
    ("class constant", """
     class Limits:
         MAX_CONNECTIONS = 100
     """, ("constant", "MAX_CONNECTIONS", "pkg.mod.Limits", 2, 2, "100", None)),
    ("raise with its condition", """
     def set_size(n):
         if n < 0:
             raise ValueError("size must be positive")
     """, ("raise", "ValueError", "pkg.mod.set_size", 2, 3, "size must be positive", "n < 0")),
    ("raise with an f-string", """
     def get(key):
         raise KeyError(f"no such key: {key}")
     """, ("raise", "KeyError", "pkg.mod.get", 2, 2, 'f"no such key: {key}"', None)),
    ("os.environ[...]", """
     import os
     HOME = os.environ["APP_HOME"]
     """, ("env", "APP_HOME", "pkg.mod", 2, 2, None, None)),
    ("os.environ.get with default", """
     import os
     def level():
         return os.environ.get("APP_LOG_LEVEL", "INFO")
     """, ("env", "APP_LOG_LEVEL", "pkg.mod.level", 3, 3, '"INFO"', None)),
    ("os.getenv", """
     from os import getenv
     def workers():
         return int(getenv("APP_WORKERS", "2"))
     """, ("env", "APP_WORKERS", "pkg.mod.workers", 3, 3, '"2"', None)),
    ("logger warning", """
     import logging
     log = logging.getLogger(__name__)
     def stop():
         log.warning("stopping without a flush")
     """, ("message", "warning", "pkg.mod.stop", 4, 4, "stopping without a flush", "warning")),
    ("deprecation warning", """
     import warnings
     def old():
         warnings.warn("old() is deprecated, use new()", DeprecationWarning, stacklevel=2)
     """, ("message", "deprecation", "pkg.mod.old", 3, 3, "old() is deprecated, use new()", "deprecation")),
]


@pytest.mark.parametrize(("construct", "source", "expected"), CASES, ids=[c[0] for c in CASES])
def test_fact_of_each_construct(construct: str, source: str, expected: tuple) -> None:
    assert expected in _facts(source), construct


def test_a_raise_far_below_its_condition_cites_only_the_raise() -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_CONDITION_GAP + 1))
    source = f"def f(n):\n    if n:\n{body}\n        raise RuntimeError('late')\n"
    (fact,) = [f for f in _facts(source) if f[0] == "raise"]
    assert fact[3] == fact[4] == MAX_CONDITION_GAP + 4
    assert fact[6] == "n"


def test_no_facts_from_ordinary_code() -> None:
    """Lowercase assignments, locals, dict `.get` and calls of other names are not facts."""
    source = """
    import logging
    counter = 0
    def f(d):
        value = d.get("key", 1)
        print("hello")
        logging.basicConfig()
        return value
    """
    assert _facts(source) == []


def test_rows_cite_the_exact_lines_and_speak_both_languages() -> None:
    source = "class Client:\n    def __init__(self, timeout=5.0):\n        pass\n"
    result = index_python("pkg/client.py", source)
    (row,) = [r for r in result.records if r.layer == Layer.C7_CODE_FACTS]
    assert (row.span_start, row.span_end) == (2, 2)
    assert row.content == "    def __init__(self, timeout=5.0):"
    assert "`timeout`" in row.title and "`5.0`" in row.title and "defaults to" in row.title
    assert "по умолчанию" in row.metadata["sentence_ru"]
    assert row.embed_text is not None and "по умолчанию" in row.embed_text
    assert row.metadata["qname"] == "pkg.client.Client.__init__"


def test_facts_are_capped_per_file() -> None:
    source = "\n".join(f"C{i} = {i}" for i in range(1000)) + "\n"
    context = build_context("gen.py", source, ast.parse(source))
    rows = list(fact_records(context))
    assert len(rows) == 400 and rows[0].span_start == 1


def test_an_annotation_in_a_plain_class_is_not_a_required_field() -> None:
    source = "class Context:\n    args: list\n    depth: int = 0\n"
    assert [(f[0], f[1]) for f in _facts(source)] == [("field", "depth")]


def test_a_translated_message_is_read_inside_its_call() -> None:
    source = "def f(name):\n    if not name:\n        raise TypeError(_(\"'name' is required\"))\n"
    assert ("raise", "TypeError", "pkg.mod.f", 2, 3, "'name' is required", "not name") in _facts(source)


def test_writes_to_the_environment_are_not_reads() -> None:
    source = "import os\nos.environ['A'] = '1'\ndel os.environ['B']\nos.environ.pop('C', None)\nx = os.environ['D']\n"
    assert [(f[0], f[1]) for f in _facts(source)] == [("env", "D")]


@pytest.mark.parametrize("source", [
    "class Handler(Base):\n    name: str\n",
    "from dataclasses import dataclass\nfrom typing import ClassVar\n"
    "@dataclass\nclass A:\n    registry: ClassVar[dict]\n",
])
def test_annotations_that_declare_no_field(source: str) -> None:
    assert [f for f in _facts(source) if f[0] == "field"] == []


def test_type_declarations_and_one_letter_names_are_not_constants() -> None:
    source = "from typing import TypeVar\nT = TypeVar('T')\nX = 1\nLIMIT = 10\n"
    assert [(f[0], f[1]) for f in _facts(source)] == [("constant", "LIMIT")]


def test_a_module_too_deep_to_walk_keeps_its_other_rows() -> None:
    source = "X = " + " + ".join(['"a"'] * 600) + "\ndef f(timeout=3):\n    pass\n"
    result = index_python("deep.py", source)
    layers = {r.layer for r in result.records}
    assert Layer.C1_SYMBOL_CATALOG in layers and Layer.C7_CODE_FACTS not in layers
