"""Repositories of other shapes (SPEC §10): a code-only package and a repository whose markdown sits at the
root and under specs/ (no docs/). FIND_FILES, GENERAL_QA and explain questions all get non-empty evidence
and a cited answer through the real graph, the real `use` embedder and the embedded PostgreSQL."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graph.builder import build_graph
from graph.deps import GraphDeps
from graph.settings import Settings
from nodes.context_analysis import analyze
from nodes.evidence import EvidenceRow
from nodes.terms import key_terms
from stores.embedders import make_embedder
from stores.indexing.service import index_repository

CODE_ONLY = {
    "textkit/__init__.py": '"""textkit: a tiny toolkit for slugs and word wrapping in command-line programs."""\n\n'
                           "from textkit.slugs import slugify\nfrom textkit.wrap import wrap_words\n",
    "textkit/slugs.py": '''"""Turning titles into URL slugs."""


def slugify(title: str, max_length: int = 40) -> str:
    """Превращает заголовок в slug: строчные латинские буквы и дефисы.

    Пустой заголовок даёт ValueError("empty title"); длинный обрезается до max_length символов.
    """
    if not title.strip():
        raise ValueError("empty title")
    words = [w for w in title.lower().split() if w.isalnum()]
    return "-".join(words)[:max_length]
''',
    "textkit/wrap.py": '''"""Wrapping text to a terminal width."""

DEFAULT_WIDTH = 78


def wrap_words(text: str, width: int = DEFAULT_WIDTH) -> list[str]:
    """Split text into lines of at most `width` characters; a word longer than the width stays whole."""
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    return lines + ([current] if current else [])
''',
}

ROOT_DOCS = {
    "README.md": "# Orbit\n\nOrbit — планировщик фоновых задач для небольших команд. Хранит задачи в SQLite и "
                 "запускает их по расписанию.\n\n## Установка\n\n`pip install orbit-tasks`, затем `orbit init`.\n",
    "DECISIONS.md": "# Решения\n\n## Почему SQLite\n\nМы выбрали SQLite, потому что одной команде не нужен "
                    "сервер базы данных: файл `orbit.db` лежит рядом с проектом.\n",
    "specs/retry/spec.md": "# Повторные попытки\n\nЕсли задача упала, Orbit повторяет её до трёх раз с паузой "
                           "`retry_delay` (по умолчанию 30 секунд). После третьей ошибки задача получает "
                           "статус `failed`.\n",
    "src/orbit/__init__.py": '"""Orbit: background task scheduler."""\n',
    "src/orbit/retry.py": 'MAX_ATTEMPTS = 3\n\n\ndef next_delay(attempt: int, retry_delay: float = 30.0) -> float:\n'
                          '    """Пауза перед следующей попыткой: retry_delay, удвоенная на каждой попытке."""\n'
                          "    return retry_delay * 2 ** (attempt - 1)\n",
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def sessions(db, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = {}
    for name, files in (("code-only", CODE_ONLY), ("root-docs", ROOT_DOCS)):
        session = f"it-layout-{name}-{uuid.uuid4().hex[:6]}"
        index_repository(db, _write(tmp_path_factory.mktemp(name), files), session_name=session,
                         embedder=make_embedder("use"))
        out[name] = session
    return out


@pytest.fixture(scope="module")
def graph_of(db, sessions: dict[str, str]) -> Any:
    graph = build_graph(GraphDeps(settings=Settings(), db=db), checkpointer=InMemorySaver())

    async def ask(corpus: str, question: str) -> dict[str, Any]:
        """The whole state of the turn (the evidence too, not only the output fields)."""
        config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
        await graph.ainvoke({"messages": [HumanMessage(question)]}, config=config,
                            context={"rag_session_id": sessions[corpus]})
        return dict((await graph.aget_state(config)).values)

    return ask


CASES = [
    ("code-only", "В каком файле реализован slugify?", "DOC_EXPLAIN/FIND_FILES", "textkit/slugs.py"),
    ("code-only", "Что это за библиотека и для чего она нужна?", "GENERAL_QA", "textkit/__init__.py"),
    ("code-only", "Что будет, если передать пустой заголовок?", None, "textkit/slugs.py"),
    ("code-only", "What happens to a word longer than the line width?", None, "textkit/wrap.py"),
    ("root-docs", "Где описано, почему выбрали SQLite?", "DOC_EXPLAIN/FIND_FILES", "DECISIONS.md"),
    ("root-docs", "Что такое Orbit и кому он нужен?", None, "README.md"),
    ("root-docs", "Сколько раз Orbit повторяет упавшую задачу?", "DOC_EXPLAIN/SUMMARY", "specs/retry/spec.md"),
]


@pytest.mark.parametrize(("corpus", "question", "route", "gold"), CASES)
async def test_every_route_gets_cited_evidence(graph_of: Any, corpus: str, question: str, route: str | None,
                                               gold: str) -> None:
    out = await graph_of(corpus, question)
    label = "GENERAL_QA" if out["route"]["intent"] == "GENERAL_QA" else \
        f"{out['route']['intent']}/{out['route']['subintent']}"
    if route is not None:
        assert label == route, out["route"]["reason_short"]
    cited = {c["path"] for c in out["citations"]}
    assert out["abstained"] is False, out["answer"]
    assert gold in cited, (cited, out["answer"][:400])


@pytest.mark.parametrize(("corpus", "question", "route", "gold"), CASES)
async def test_every_citation_lies_inside_the_evidence_the_graph_returns(graph_of: Any, corpus: str, question: str,
                                                                        route: str | None, gold: str) -> None:
    out = await graph_of(corpus, question)
    rows = out["evidence"]
    assert out["citations"]
    for c in out["citations"]:
        assert any(r.path == c["path"] and r.span_start <= c["start_line"] <= c["end_line"] <= r.span_end
                   for r in rows), (c, [(r.path, r.layer, r.span_start, r.span_end) for r in rows])


def test_a_symbol_card_is_quoted_by_the_definition_read_from_the_index(db, sessions: dict[str, str]) -> None:
    deps = GraphDeps(settings=Settings(), db=db)
    bundle = deps.bundle(sessions["code-only"])
    repository = bundle.adapter.repository
    [card] = [r for r in repository.retrieve_exact_files(bundle.session, ["textkit/wrap.py"],
                                                          layers=["C1_SYMBOL_CATALOG"])
              if (r["metadata"] or {}).get("name") == "wrap_words" or "wrap_words" in (r["title"] or "")]
    row = EvidenceRow(id=str(card["id"]), path=card["path"], layer=card["layer"], content=card["content"],
                      span_start=card["span_start"], span_end=card["span_end"], lanes={"code": 1})
    [found] = [r for r in repository.retrieve_exact_files(bundle.session, ["textkit/wrap.py"],
                                                          layers=["C0_SOURCE_CHUNKS"])
               if r["span_start"] <= row.span_start <= row.span_end <= r["span_end"]]  # the module: one chunk
    source = EvidenceRow(id=str(found["id"]), path=found["path"], layer=found["layer"], content=found["content"],
                         span_start=found["span_start"], span_end=found["span_end"], lanes={"code": 1})
    question = "What does wrap_words do with a word longer than the width?"
    # issue 38: the answer quotes scored units, cards among them (a C1 card is its signature and docstring,
    # citing the definition's first lines): the lead states the behaviour and cites lines of the definition
    lead = analyze(question, key_terms(question), [row, source], True).spans[0]
    assert "stays whole" in lead.text and row.span_start <= lead.start_line <= lead.end_line <= row.span_end
