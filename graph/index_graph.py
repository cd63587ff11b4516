"""The index graph: indexes a repository through the same API as the QA graph (one node, a job report)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graph.deps import GraphDeps


class IndexInput(TypedDict, total=False):
    path: str
    """Repository folder on the server's file system."""
    session: str
    """Session name (created on first use)."""
    embedder: str
    """Embedder for a new session (default: the server's `LOTSMAN_EMBEDDER`)."""
    incremental: bool
    """Diff against the existing index (default) or rebuild a full snapshot."""


class IndexOutput(TypedDict, total=False):
    report: dict[str, Any]
    """Job id, counts, rows per layer, skipped files with reasons, timings."""


class IndexState(IndexInput, IndexOutput):
    pass


def build_index_graph(deps: GraphDeps | None = None) -> Any:
    deps = deps or GraphDeps.from_settings()

    async def index_repository_node(state: IndexState) -> dict[str, Any]:
        from stores.embedders import make_embedder
        from stores.indexing.service import index_repository

        settings = deps.settings
        embedder = deps.embedder or make_embedder(state.get("embedder") or settings.embedder, settings)
        report = await asyncio.to_thread(
            index_repository, deps.database(), Path(state["path"]),
            session_name=state.get("session") or settings.default_session, embedder=embedder,
            incremental=state.get("incremental", True), max_bytes=settings.max_file_bytes,
            batch_size=settings.embed_batch_size,
        )
        return {"report": report_dict(report)}

    builder = StateGraph(IndexState, input_schema=IndexInput, output_schema=IndexOutput)
    builder.add_node("index_repository", index_repository_node)
    builder.add_edge(START, "index_repository")
    builder.add_edge("index_repository", END)
    return builder.compile(name="lotsman_index")


def report_dict(report: Any) -> dict[str, Any]:
    return {
        "session": report.session, "job_id": report.job_id, "kind": report.kind, **report.counts(),
        "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
        "warnings": report.warnings[:200],
    }
