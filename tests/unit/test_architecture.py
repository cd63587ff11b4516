"""The import graph and function sizes the architecture promises (docs/architecture/overview.md).

Layers, top to bottom: evals → graph → nodes → stores. An arrow may only point down; nothing in the
product imports evals; no module imports itself back through a cycle; no function in nodes/ or stores/
grows past MAX_FUNCTION_LINES. Every import counts, including the ones inside functions (a lazy import
is still a dependency).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("graph", "nodes", "stores", "evals")
LAYER = {"stores": 0, "nodes": 1, "graph": 2, "evals": 3}
MAX_FUNCTION_LINES = 80


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import of a project module, resolved to the deepest known module."""
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join([*pkg, base] if base else pkg)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target, node.lineno


def _graph() -> dict[str, dict[str, int]]:
    mods = _modules()
    known = set(mods)
    return {name: dict(_imports(name, path, known)) for name, path in mods.items()}


def test_arrows_point_down() -> None:
    wrong = [f"{src} → {dst} (line {line})" for src, deps in _graph().items() for dst, line in deps.items()
             if LAYER[dst.split(".")[0]] > LAYER[src.split(".")[0]]]
    assert not wrong, "imports that run back up:\n" + "\n".join(sorted(wrong))


def _is_package_init(a: str, b: str) -> bool:
    # `nodes.x` importing its own submodule `nodes.x.y` (and back) is how a package re-exports: not a cycle.
    return b.startswith(a + ".") or a.startswith(b + ".")


def test_no_import_cycles() -> None:
    graph = {src: {d for d in deps if not _is_package_init(src, d)} for src, deps in _graph().items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strongconnect(v: str) -> None:  # Tarjan's SCC
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            strongconnect(v)
    assert not cycles, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in cycles)


@pytest.mark.parametrize("package", ["nodes", "stores"])
def test_functions_stay_small(package: str) -> None:
    long = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({size} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


STAGES = ("conversation_understanding", "intent_routing", "retrieval_policy", "context_retrieval",
          "context_analysis", "answer_composition")


def test_stages_only_read_earlier_stages() -> None:
    """A stage may use an earlier stage's models; an earlier stage never reaches into a later one (shared
    helpers live in `nodes/terms.py` and `nodes/evidence.py`)."""
    order = {stage: i for i, stage in enumerate(STAGES)}

    def stage(module: str) -> int | None:
        parts = module.split(".")
        return order.get(parts[1]) if len(parts) > 1 and parts[0] == "nodes" else None

    wrong = [f"{src} → {dst} (line {line})" for src, deps in _graph().items() for dst, line in deps.items()
             if stage(src) is not None and stage(dst) is not None and stage(dst) > stage(src)]  # type: ignore[operator]
    assert not wrong, "earlier stages importing later ones:\n" + "\n".join(sorted(wrong))
