"""Honest "not found" on the fastapi-ru corpus (SPEC §5, §7): topics absent from it are not answered.

The corpus is indexed once per module with the real offline `use` embedder (the blob cache makes this fast
when another module of the same run indexed it already), and questions run through the whole graph offline.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from graph.builder import build_graph
from graph.context import Context
from graph.deps import GraphDeps
from graph.settings import Settings
from stores.embedders import make_embedder
from stores.indexing.service import index_repository

pytestmark = pytest.mark.corpus

SESSION = f"it-unanswerable-{uuid.uuid4().hex[:8]}"
NOT_FOUND = {"ru": "нет ответа", "en": "does not answer"}
NEAREST = {"ru": "Ближайшие", "en": "Nearest"}
_LISTED = re.compile(r"^- `([^`]+)`", re.M)


@pytest.fixture(scope="module")
def graph(db, fastapi_corpus: Path) -> Any:
    t0 = time.perf_counter()
    report = index_repository(db, fastapi_corpus, session_name=SESSION, embedder=make_embedder("use"))
    assert report.files_indexed > 100, report.counts()
    print(f"\nindexed fastapi-ru in {time.perf_counter() - t0:.1f}s ({report.rows_written} rows)")
    return build_graph(GraphDeps(settings=Settings(), db=db))


async def ask(graph: Any, question: str) -> dict[str, Any]:
    context = Context(rag_session_id=SESSION)
    return await graph.ainvoke({"messages": [HumanMessage(question)]}, context=context)


@pytest.mark.parametrize(("question", "lang", "absent"), [
    ("Как подключить консьюмер Kafka к приложению FastAPI?", "ru", "kafka"),
    ("How do I write Terraform code to provision infrastructure for FastAPI?", "en", "terraform"),
    ("Как развернуть FastAPI в Kubernetes с помощью Helm-чарта?", "ru", "helm"),
], ids=["kafka-ru", "terraform-en", "helm-ru"])
async def test_absent_topic_ends_in_not_found_with_nearest_files(
        graph: Any, fastapi_corpus: Path, question: str, lang: str, absent: str) -> None:
    # The premise: the topic really is absent from the corpus's docs.
    docs = fastapi_corpus / "docs"
    texts = (p.read_text(encoding="utf-8", errors="ignore").lower() for p in docs.rglob("*.md"))
    assert not any(absent in text for text in texts)

    out = await ask(graph, question)

    assert out["abstained"] is True, out["answer"]
    assert out["citations"] == []
    answer = out["answer"]
    assert NOT_FOUND[lang] in answer, answer
    assert NEAREST[lang] in answer, "the honest answer lists the nearest files"
    nearest = _LISTED.findall(answer)
    assert 1 <= len(nearest) <= 5
    assert all((fastapi_corpus / path).is_file() for path in nearest), nearest
    assert absent not in answer.lower().replace(question.lower(), "")
    assert out["timings_ms"], "the run went through the graph"


async def test_answerable_question_is_answered_from_the_cors_page(graph: Any) -> None:
    out = await ask(graph, "Как настроить CORS в FastAPI?")

    assert out["abstained"] is False, out["answer"]
    paths = [c["path"] for c in out["citations"]]
    assert paths and paths[0] == "docs/ru/docs/tutorial/cors.md", paths
    assert "[docs/ru/docs/tutorial/cors.md:" in out["answer"]
    assert not any(word in out["answer"] for word in NOT_FOUND.values())
