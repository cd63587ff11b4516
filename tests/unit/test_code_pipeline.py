"""index_python: symbols, chunks, dependency edges and entrypoints of Python modules."""

from __future__ import annotations

import json

import pytest

from stores.indexing.code.chunks import MAX_CHUNK_LINES
from stores.indexing.code.module import module_name
from stores.indexing.code_pipeline import CodeParseError, CodeResult, index_python
from stores.indexing.records import ChunkRecord
from stores.layers import Layer

SOURCE = '''\
"""Orders service: HTTP routes, a CLI and a repository."""

import argparse
from typing import Annotated

import click
from fastapi import APIRouter, FastAPI, Query
from . import models
from .models import Order as OrderModel

app = FastAPI()
router = APIRouter(prefix="/orders")


class Base:
    """Base repository."""


class OrderRepository(Base, models.Repo):
    """Stores orders."""

    def get(self, order_id: int) -> OrderModel | None:
        """Return one order.

        Longer explanation.
        """
        return self.load(order_id)

    def load(self, order_id):
        return models.fetch(order_id)


@app.get("/health")
async def health() -> dict[str, str]:
    """Liveness probe."""
    return {"status": "ok"}


@router.api_route("/{order_id}", methods=["GET", "DELETE"])
def order(order_id: int, q: Annotated[str | None, Query(description="a long description")] = None):
    repo = OrderRepository()
    return repo.get(order_id)


def create_order(payload: dict) -> dict:
    return payload


app.add_api_route("/x", create_order, methods=["POST"])
app.include_router(router)


@click.command()
def sync_orders():
    print("sync")


def main(argv=None):
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers()
    commands.add_parser("import")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
'''
PATH = "app/orders.py"


def rows(result: CodeResult, layer: Layer) -> list[ChunkRecord]:
    return [r for r in result.records if r.layer == layer]


def line_of(text: str, prefix: str) -> int:
    return next(n for n, line in enumerate(text.split("\n"), start=1) if line.startswith(prefix))


@pytest.fixture(scope="module")
def orders() -> CodeResult:
    return index_python(PATH, SOURCE)


def symbol(result: CodeResult, qname: str) -> ChunkRecord:
    return next(r for r in rows(result, Layer.C1_SYMBOL_CATALOG) if r.metadata["qname"] == qname)


# --- C1 symbols --------------------------------------------------------------------------------------------


def test_method_symbol_has_signature_docstring_span_and_parent(orders: CodeResult) -> None:
    get = symbol(orders, "app.orders.OrderRepository.get")

    assert get.metadata["signature"] == "def get(self, order_id: int) -> OrderModel | None"
    assert get.metadata["kind"] == "method"
    assert get.metadata["parent"] == "app.orders.OrderRepository"
    assert get.metadata["docstring"] == "Return one order.\n\nLonger explanation."
    assert (get.span_start, get.span_end) == (
        line_of(SOURCE, "    def get("),
        line_of(SOURCE, "        return self.load"),
    )
    assert get.content == "def get(self, order_id: int) -> OrderModel | None\nReturn one order."
    assert get.embed and get.embed_text.startswith("app.orders.OrderRepository.get\n")


def test_class_module_and_annotated_signatures(orders: CodeResult) -> None:
    assert symbol(orders, "app.orders.OrderRepository").metadata["signature"] == (
        "class OrderRepository(Base, models.Repo)"
    )
    order = symbol(orders, "app.orders.order").metadata
    # Annotated metadata (often pages of docs in FastAPI itself) is dropped, the type is kept.
    assert order["signature"] == "def order(order_id: int, q: str | None=None)"
    assert order["decorators"] == ["router.api_route('/{order_id}', methods=['GET', 'DELETE'])"]
    module = symbol(orders, "app.orders")
    assert module.metadata["kind"] == "module"
    assert module.content.startswith("module app.orders\nOrders service: HTTP routes")
    assert "Defines: Base, OrderRepository, health, order, create_order, sync_orders, main" in module.content
    assert symbol(orders, "app.orders.health").metadata["signature"] == "async def health() -> dict[str, str]"


def test_entry_candidates_are_flagged(orders: CodeResult) -> None:
    flagged = {
        r.metadata["qname"] for r in rows(orders, Layer.C1_SYMBOL_CATALOG) if r.metadata["is_entry_candidate"]
    }

    handlers = {"app.orders.health", "app.orders.order", "app.orders.create_order", "app.orders.sync_orders"}
    assert flagged == handlers | {"app.orders.main"}


# --- C3 entrypoints and endpoint facts ---------------------------------------------------------------------


def entry(result: CodeResult, route: str) -> ChunkRecord:
    return next(r for r in rows(result, Layer.C3_ENTRYPOINTS) if r.metadata["route_or_command"] == route)


def test_decorated_route_is_an_entrypoint_and_an_endpoint_fact(orders: CodeResult) -> None:
    health = entry(orders, "/health")
    decorator = line_of(SOURCE, '@app.get("/health")')

    assert health.metadata | {"module": None} == {
        "entry_type": "http",
        "methods": ["GET"],
        "route_or_command": "/health",
        "handler": "app.orders.health",
        "framework": "fastapi",
        "module": None,
        "line_start": decorator,
        "line_end": decorator,
        "path": "/health",
        "router": "app",
        "router_prefix": None,
    }
    assert (health.span_start, health.span_end) == (decorator, line_of(SOURCE, '    return {"status"'))
    assert health.title == "GET /health" and "Liveness probe." in health.content
    fact = next(r for r in rows(orders, Layer.D2_FACT_INDEX) if r.metadata["object"] == "GET /health")
    assert (fact.metadata["subject"], fact.metadata["predicate"]) == ("app.orders.health", "http_route")
    assert (fact.span_start, fact.span_end) == (decorator, decorator)
    assert fact.path == PATH and not fact.embed


def test_api_route_with_router_prefix_and_several_methods(orders: CodeResult) -> None:
    route = entry(orders, "/orders/{order_id}")

    assert route.metadata["methods"] == ["GET", "DELETE"]
    assert route.metadata["router_prefix"] == "/orders"
    facts = {r.metadata["object"] for r in rows(orders, Layer.D2_FACT_INDEX)}
    assert {"GET /orders/{order_id}", "DELETE /orders/{order_id}"} <= facts


def test_add_api_route_call_is_an_entrypoint(orders: CodeResult) -> None:
    route = entry(orders, "/x")
    call = line_of(SOURCE, 'app.add_api_route("/x"')

    assert route.metadata["handler"] == "app.orders.create_order"
    assert route.metadata["methods"] == ["POST"]
    assert route.metadata["declared_in"] == "app.orders"
    assert (route.span_start, route.span_end) == (call, call)
    assert any(r.metadata["object"] == "POST /x" for r in rows(orders, Layer.D2_FACT_INDEX))


def test_cli_commands_and_main_block(orders: CodeResult) -> None:
    click_entry = entry(orders, "sync-orders")
    assert (click_entry.metadata["entry_type"], click_entry.metadata["framework"]) == ("cli", "click")
    assert entry(orders, "import").metadata["framework"] == "argparse"

    main = entry(orders, "python -m app.orders")
    assert main.metadata["entry_type"] == "main"
    assert main.metadata["handler"] == "app.orders.main"
    assert main.span_start == line_of(SOURCE, 'if __name__ == "__main__":')
    assert main.span_end == main.span_start + 1


def test_only_literal_paths_make_routes() -> None:
    machinery = """\
class APIRouter:
    def get(self, path: str, **kwargs):
        def decorator(func):
            self.add_api_route(path, func, methods=["GET"])
            return func
        return decorator

    def add_api_route(self, path: str, endpoint, *, methods=None) -> None:
        self.routes.append((path, endpoint, methods))


router = APIRouter()


@router.get(PATH_CONSTANT)
def dynamic():
    pass


@cache.get("not-a-path")
def cached():
    pass
"""
    result = index_python("pkg/routing.py", machinery)

    assert rows(result, Layer.C3_ENTRYPOINTS) == []
    assert rows(result, Layer.D2_FACT_INDEX) == []
    qnames = {r.metadata["qname"] for r in rows(result, Layer.C1_SYMBOL_CATALOG)}
    assert {"pkg.routing.APIRouter.get", "pkg.routing.APIRouter.add_api_route"} <= qnames


# --- C2 dependency graph -----------------------------------------------------------------------------------


def test_imports_inheritance_and_calls(orders: CodeResult) -> None:
    edges = {
        (r.metadata["edge_type"], r.metadata["src"], r.metadata["dst"]): r.metadata
        for r in rows(orders, Layer.C2_DEPENDENCY_GRAPH)
    }

    assert ("imports", "app.orders", "fastapi.APIRouter") in edges
    assert ("imports", "app.orders", "app.models") in edges  # `from . import models`
    assert edges[("imports", "app.orders", "app.models.Order")]["dst_ref"] == "OrderModel"
    assert edges[("inherits", "app.orders.OrderRepository", "app.orders.Base")]["resolution"] == "name"
    assert edges[("inherits", "app.orders.OrderRepository", "app.models.Repo")]["resolution"] == "import"
    get_calls_load = ("calls", "app.orders.OrderRepository.get", "app.orders.OrderRepository.load")
    assert edges[get_calls_load]["resolution"] == "name"
    assert edges[("calls", "app.orders.OrderRepository.load", "app.models.fetch")]["resolution"] == "import"
    assert ("calls", "app.orders.order", "app.orders.OrderRepository") in edges
    assert edges[("calls", "app.orders.order", "repo.get")]["resolution"] == "unresolved"
    # Builtins are noise, not dependencies.
    assert not any(key[0] == "calls" and key[2] == "print" for key in edges)


def test_call_edges_are_capped_per_function() -> None:
    body = "\n".join(f"    helper_{n}()" for n in range(40))
    result = index_python("m.py", f"def busy():\n{body}\n")

    calls = [r for r in rows(result, Layer.C2_DEPENDENCY_GRAPH) if r.metadata["edge_type"] == "calls"]
    assert len(calls) == 20
    assert calls[0].metadata["dst"] == "helper_0" and calls[0].span_start == 2


OWNERSHIP = """\
@register(make_decorator())
def outer(limit=default_limit()) -> annotate():
    first()
    handler = lambda: in_lambda()

    def inner():
        in_inner()

    class Local:
        in_class_body()

        def method(self):
            in_method()

    for item in source():
        if check(item):
            last(wrap(item))
    return handler


top_level_call()
"""


@pytest.mark.parametrize(
    ("function", "callees"),
    [
        # its body only, in source order: not its decorators, defaults or annotations, not nested scopes
        ("outer", ["first", "source", "check", "last", "wrap"]),
        ("outer.inner", ["in_inner"]),
        ("outer.Local.method", ["in_method"]),
    ],
)
def test_a_functions_calls_are_those_of_its_own_body(function: str, callees: list[str]) -> None:
    result = index_python("m.py", OWNERSHIP)

    edges = [r for r in rows(result, Layer.C2_DEPENDENCY_GRAPH)
             if r.metadata["edge_type"] == "calls" and r.metadata["src"] == f"m.{function}"]
    assert [edge.metadata["dst"] for edge in edges] == callees


def test_calls_outside_functions_have_no_caller_edge() -> None:
    result = index_python("m.py", OWNERSHIP)

    callers = {r.metadata["src"] for r in rows(result, Layer.C2_DEPENDENCY_GRAPH)
               if r.metadata["edge_type"] == "calls"}
    assert callers == {"m.outer", "m.outer.inner", "m.outer.Local.method"}


# --- C0 chunks ---------------------------------------------------------------------------------------------


def test_chunks_cover_definitions_with_exact_spans(orders: CodeResult) -> None:
    chunks = rows(orders, Layer.C0_SOURCE_CHUNKS)
    lines = SOURCE.split("\n")

    for chunk in chunks:
        assert chunk.content == "\n".join(lines[chunk.span_start - 1 : chunk.span_end])
        assert chunk.embed and chunk.embed_text.startswith(f"{PATH} ")
    by_qname = {c.metadata["qname"]: c for c in chunks}
    repo = by_qname["app.orders.OrderRepository"]
    assert repo.metadata["kind"] == "class"
    assert repo.span_start == line_of(SOURCE, "class OrderRepository")
    first = chunks[0]  # docstring + imports + module-level assignments
    assert (first.metadata["kind"], first.span_start) == ("module_code", 1)
    assert "from .models import Order as OrderModel" in first.content
    # Small neighbours are grouped, but a decorated route keeps a chunk of its own.
    assert first.metadata["symbols"] == ["app.orders"]
    assert by_qname["app.orders.order"].metadata["kind"] == "function"
    assert by_qname["app.orders.health"].span_start == line_of(SOURCE, '@app.get("/health")')
    assert "Liveness probe." in by_qname["app.orders.health"].embed_text


def test_large_class_is_split_per_method_with_a_class_comment() -> None:
    methods = "\n".join(
        f"    def method_{n}(self, value: int) -> int:\n"
        + "".join(f"        value += {k}\n" for k in range(14))
        + "        return value\n"
        for n in range(12)
    )
    source = f'class Big(Base):\n    """A big class."""\n\n    LIMIT = 3\n\n{methods}'
    chunks = rows(index_python("big.py", source), Layer.C0_SOURCE_CHUNKS)

    assert chunks[0].metadata["kind"] == "class_header" and chunks[0].content.startswith("class Big(Base):")
    members = chunks[1:]
    assert [c.metadata["qname"] for c in members] == [f"big.Big.method_{n}" for n in range(12)]
    assert all(c.content.startswith("# class Big(Base)  (big.Big)\n    def method_") for c in members)
    assert all(c.metadata["kind"] == "method" for c in members)


def test_long_function_is_split_at_statements_and_capped() -> None:
    body = "".join(f"    x_{n} = compute({n})\n" for n in range(400))
    source = f"def huge():\n    '''Doc.'''\n{body}    return x_0\n"
    chunks = rows(index_python("huge.py", source), Layer.C0_SOURCE_CHUNKS)

    assert len(chunks) == 3
    assert all(c.span_end - c.span_start + 1 <= MAX_CHUNK_LINES for c in chunks)
    assert [c.span_start for c in chunks] == [1, chunks[0].span_end + 1, chunks[1].span_end + 1]
    assert chunks[-1].span_end == len(source.rstrip("\n").split("\n"))
    assert chunks[1].content.startswith("# huge.huge (continued)\n")


def test_small_neighbours_are_grouped() -> None:
    source = "".join(f"def tiny_{n}(x):\n    return x + {n}\n\n\n" for n in range(5))
    [chunk] = rows(index_python("tiny.py", source), Layer.C0_SOURCE_CHUNKS)

    assert chunk.metadata["kind"] == "group"
    assert chunk.metadata["symbols"] == [f"tiny.tiny_{n}" for n in range(5)]
    assert chunk.title == "tiny (tiny_0, tiny_1, tiny_2, tiny_3, tiny_4)"


# --- bad input and misc ------------------------------------------------------------------------------------


def test_syntax_error_raises_code_parse_error_with_the_line() -> None:
    with pytest.raises(CodeParseError, match=r"^syntax error at line 3") as caught:
        index_python("broken.py", "def ok():\n    pass\ndef broken(:\n")
    assert caught.value.line == 3 and caught.value.path == "broken.py"


def test_nul_byte_source_raises_code_parse_error() -> None:
    with pytest.raises(CodeParseError, match="syntax error"):
        index_python("nul.py", "x = 1\0\n")


def test_empty_module_still_has_a_module_symbol() -> None:
    result = index_python("pkg/__init__.py", "")

    assert [r.layer for r in result.records] == [Layer.C1_SYMBOL_CATALOG]
    assert result.records[0].metadata["qname"] == "pkg"


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("fastapi/routing.py", "fastapi.routing"),
        ("fastapi/__init__.py", "fastapi"),
        ("src/app/main.py", "app.main"),
        ("script.py", "script"),
        ("fastapi/__main__.py", "fastapi.__main__"),
    ],
)
def test_module_names(path: str, module: str) -> None:
    assert module_name(path) == module


def test_main_block_handler_skips_sys_exit() -> None:
    source = "import sys\n\n\ndef run():\n    return 0\n\n\nif __name__ == '__main__':\n    sys.exit(run())\n"
    [main] = rows(index_python("tool/script.py", source), Layer.C3_ENTRYPOINTS)

    assert main.metadata["handler"] == "tool.script.run"


def test_dunder_main_module_is_an_entrypoint() -> None:
    result = index_python("tool/__main__.py", "from tool.cli import main\n\nmain()\n")
    [main] = rows(result, Layer.C3_ENTRYPOINTS)

    assert main.metadata["route_or_command"] == "python -m tool"
    assert main.metadata["handler"] == "tool.cli.main"


def test_all_metadata_is_json_safe_and_output_deterministic(orders: CodeResult) -> None:
    json.dumps([r.metadata for r in orders.records])
    assert index_python(PATH, SOURCE) == orders
    assert orders.warnings == []


def test_a_signature_drops_annotated_metadata_without_changing_the_tree() -> None:
    import ast

    from stores.indexing.code.signatures import function_signature

    source = 'def get(q: Annotated[str, Doc("long")] = "", *, n: list[Annotated[int, Gt(0)]]) -> Annotated[X, Y]: ...'
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)

    assert function_signature(node) == 'def get(q: str=\'\', *, n: list[int]) -> X'
    assert ast.unparse(node) == ast.unparse(ast.parse(source))  # the shared tree is not modified
