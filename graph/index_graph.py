"""The index graph: indexes a repository through the same API as the QA graph (one node, a job report).

The job runs on a thread. Cancelling the run (langgraph-api cancels the run's asyncio task: `runs.cancel`,
a client that disconnects from a streamed run) sets the job's cancel event: the job stops at its next batch,
rolls back, and its row is failed with `cancelled ...`; the session keeps its previous index. The node
waits for the job to have stopped before the run ends, so the worker and the session's lock are free when
the run shows as cancelled (a second cancel stops that wait; the job still stops by itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import Any

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from typing_extensions import TypedDict

from graph.deps import GraphDeps
from graph.errors import surface_errors, validation_message
from graph.names import check_name
from stores.errors import InvalidInputError


class IndexInput(TypedDict, total=False):
    path: str
    """Repository folder on the server's file system."""
    session: str
    """Session name (created on first use)."""
    embedder: str
    """Embedder for a new session (default: the server's `LOTSMAN_EMBEDDER`)."""
    incremental: bool
    """Diff against the existing index (default) or rebuild a full snapshot."""
    rebuild: bool
    """A full snapshot that may change the session's embedder (`embedder`); the old index answers until the
    new one is complete, and stays if the job fails (CLI `--rebuild`)."""
    ref: str
    """A git revision (tag, branch or commit) of the repository at `path`, read from git's object store
    without touching the working tree (CLI `--ref`)."""
    allow_large: bool
    """Index a folder with more than 5000 `.md`/`.py` files (default false: such a folder is refused with
    one error before anything is read, unless the session was built from it; CLI `--yes`)."""


class IndexOutput(TypedDict, total=False):
    report: dict[str, Any]
    """Job id, counts, rows per layer, skipped files with reasons, timings."""


class IndexState(IndexInput, IndexOutput):
    pass


class IndexRequest(BaseModel):
    """`IndexInput` validated: an empty session name must not silently mean the default session."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    path: str = Field(strict=True, min_length=1)
    session: str | None = Field(default=None, strict=True)
    embedder: str | None = Field(default=None, strict=True)
    incremental: bool = Field(default=True, strict=True)
    rebuild: bool = Field(default=False, strict=True)
    ref: str | None = Field(default=None, strict=True)
    allow_large: bool = Field(default=False, strict=True)

    @field_validator("session", "embedder", "ref")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty (omit it for the default)")
        return value

    @field_validator("session", "ref")
    @classmethod
    def _nameable(cls, value: str | None, info: ValidationInfo) -> str | None:
        # the check the CLI, MCP and the run context make: a NUL byte was "unexpected DataError" (issue 37, item 8)
        return None if value is None else check_name(value, "ref" if info.field_name == "ref" else "session name")

    @classmethod
    def from_state(cls, state: IndexState) -> IndexRequest:
        try:
            return cls.model_validate(dict(state))
        except ValidationError as exc:
            raise InvalidInputError(f"invalid index request: {validation_message(exc)}") from None


def build_index_graph(deps: GraphDeps | None = None) -> Any:
    deps = deps or GraphDeps.from_settings()

    @surface_errors  # our errors (bad path, unknown embedder, database down) reach SDK clients as one line
    async def index_repository_node(state: IndexState) -> dict[str, Any]:
        from stores.embedders import make_embedder
        from stores.indexing.service import index_repository

        request = IndexRequest.from_state(state)
        settings = deps.settings
        embedder = deps.embedder or make_embedder(request.embedder or settings.embedder, settings)
        cancel = threading.Event()
        job = asyncio.ensure_future(asyncio.to_thread(
            index_repository, deps.database(), Path(request.path),
            session_name=request.session or settings.default_session, embedder=embedder,
            incremental=request.incremental, max_bytes=settings.max_file_bytes,
            batch_size=settings.embed_batch_size, parse_workers=settings.parse_workers, rebuild=request.rebuild,
            ref=request.ref, allow_large=request.allow_large, cancel=cancel,
        ))
        job.add_done_callback(_retrieved)
        try:
            # shielded: a cancel of this task must not merely stop the await while the thread commits
            report = await asyncio.shield(job)
        except asyncio.CancelledError:
            cancel.set()
            with contextlib.suppress(Exception):  # the job's IndexCancelledError (or its commit, if it won)
                await asyncio.shield(job)
            raise
        return {"report": report_dict(report)}

    builder = StateGraph(IndexState, input_schema=IndexInput, output_schema=IndexOutput)
    builder.add_node("index_repository", index_repository_node)
    builder.add_edge(START, "index_repository")
    builder.add_edge("index_repository", END)
    return builder.compile(name="lotsman_index")


def _retrieved(job: asyncio.Future[Any]) -> None:
    """Mark the job's outcome as seen: after a second cancel nobody awaits it (no "exception was never
    retrieved" in the server's log for a cancel that worked)."""
    if not job.cancelled():
        job.exception()


def report_dict(report: Any) -> dict[str, Any]:
    return {
        "session": report.session, "job_id": report.job_id, "kind": report.kind, **report.counts(),
        "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
        "warnings": report.warnings[:200],
    }
