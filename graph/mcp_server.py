"""The MCP server: Lotsman's sessions, answers, search and indexed lines as tools for coding agents.

One `MCPServer` (official `mcp` SDK) serves both doors: `lotsman mcp` over stdio and `/mcp` over streamable
HTTP inside `lotsman serve` (`graph/http_app.py`). It offers reading, plus votes on its own answers: no tool
indexes, so no MCP client can make the server read a folder (docs/api/mcp.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError, JSONRPCNotification, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from graph.errors import (
    DATABASE_MESSAGES,
    public_message,
    public_text,
    shown,
    validation_message,
)
from graph.names import check_name
from graph.settings import Settings
from graph.terminal import printable, undecodable
from stores.errors import (
    InvalidQuestionError,
    LotsmanError,
    SessionNotFoundError,
    UsageError,
    database_lost,
    session_deleted,
)

if TYPE_CHECKING:
    from graph.deps import GraphDeps

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_QUESTION_CHARS = 8000
"""The graph reads at most this much of a question (`graph.nodes.MAX_QUESTION_CHARS`); a longer one is refused
here rather than cut silently."""
MAX_HISTORY_TURNS = 20
MAX_HISTORY_CHARS = 64_000
MAX_SEARCH_RESULTS = 50
DEFAULT_SEARCH_RESULTS = 8
MAX_PASSAGE_CHARS = 4000
"""A passage's text is cut here (doc chunks are ≤ ~1200 characters, code chunks ≤ 150 lines): `read` gives the
rest."""
LISTED_SESSION_NAMES = 10
MAX_REMEMBERED_ANSWERS = 256
"""Answers `feedback` can vote on: the last this many `ask` gave in this server process. A vote row holds the
question and answer it judges, and the client only sends the run id back, so the server keeps them meanwhile."""

INSTRUCTIONS = """Lotsman answers questions about indexed repositories (their markdown docs and Python code) \
with answers that cite `path:start-end`. Call `list_sessions` once to pick a session; `search` to locate where \
something is described or defined; `read` to see the exact lines of a citation; `ask` for one synthesized, \
cited answer (it runs the whole answering pipeline: ask once per real question, not to rephrase); `feedback` \
with the `run_id` of an answer when the user says it helped or not. Questions may be in Russian or English. \
Everything comes from the index; nothing here reads or changes the server's files."""

LIST_SESSIONS_DESCRIPTION = """List the indexed repositories (sessions) this server answers about: name, \
embedder, passages indexed, last index job, and the git revision when one was recorded. Cheap; call it once at \
the start to choose the `session` argument of the other tools (it may be omitted when there is only one)."""

ASK_DESCRIPTION = """Answer one question about a session's repository with a grounded answer: every claim cites \
`path:start-end` of indexed docs or code. Returns `answer`, `citations` [{path, start_line, end_line}], \
`abstained` (true: the index does not answer this; the answer says so and names the nearest files), the \
revision answered from, and `run_id` (pass it to `feedback` when the user judges the answer). Each call runs \
the full retrieval and answering pipeline (LLM calls when configured), so ask once per real question: do not \
re-ask a paraphrase after `abstained: true` (use `search` with other words, or `read` the files it names). For a \
follow-up pass the earlier turns in `history` instead of repeating them. To only locate something, `search` is \
cheaper; to see a citation's lines, use `read`."""

SEARCH_DESCRIPTION = """Find the passages of a session's docs and code most relevant to a query, without \
composing an answer (the retrieval `ask` uses: exact paths, symbols, semantic and lexical search, fused). \
Returns passages with `citation` (`path:start-end`), title, index layer and text, best first, and `relevant`: \
whether the relevance gate judged them to answer the query. Cheaper than `ask`; use it to locate where \
something is defined or described, then `read` for the lines around a hit."""

READ_DESCRIPTION = """Read lines `start_line`..`end_line` (1-based, inclusive, at most 400) of one file as the \
session's current index holds them, e.g. to expand a citation from `ask` or `search`. `path` is relative to the \
indexed root, exactly as citations give it. An `end_line` past the file's end is cut to its last line; lines no \
indexed passage holds (frontmatter, blank lines between sections) come back empty and are listed in \
`missing_lines`. Reads the index only, never the server's disk."""

FEEDBACK_DESCRIPTION = f"""Record whether an answer from `ask` helped: `run_id` as `ask` returned it, `score` 1 \
(helped) or -1 (did not), and an optional `comment` saying why (at most 2000 characters). Call it only when the \
user judges the answer, once per judgement. The vote is stored on the server with the question, answer and \
citations (and sent to LangSmith when tracing is on); it changes no answer and no index. Only the answers of the \
last {MAX_REMEMBERED_ANSWERS} `ask` calls of this server can be voted on."""


# --- what the tools return (their structured output schemas) ---------------------------------------------------


class Citation(BaseModel):
    """One cited span of an indexed file."""

    path: str = Field(description="File path relative to the indexed root.")
    start_line: int = Field(description="First cited line (1-based).")
    end_line: int = Field(description="Last cited line (inclusive).")


class AskResult(BaseModel):
    """A grounded answer."""

    answer: str = Field(description="The answer, citations inline as path:start-end.")
    citations: list[Citation] = Field(description="Verified citations, each inside retrieved evidence.")
    abstained: bool = Field(description="True when the index does not answer the question (the answer says so).")
    session: str = Field(description="The session answered from.")
    commit: str | None = Field(default=None, description="Git commit the session was indexed from, if recorded.")
    run_id: str | None = Field(default=None, description="The run that answered: pass it to `feedback` to vote on "
                                                         "this answer (its LangSmith run when traced).")


class FeedbackResult(BaseModel):
    """A stored vote."""

    feedback_id: str = Field(description="The vote's id in the server's feedback store.")
    run_id: str = Field(description="The answer's run the vote is on.")
    score: int = Field(description="1: the answer helped; -1: it did not.")


@dataclass(frozen=True)
class AnsweredRun:
    """What `ask` answered in one run: what a vote on that run stores."""

    session: str
    question: str
    answer: str
    citations: list[dict[str, Any]] = field(default_factory=list)


class Passage(BaseModel):
    """One retrieved passage."""

    citation: str = Field(description="path:start-end")
    path: str
    start_line: int
    end_line: int
    title: str = ""
    layer: str = Field(description="Index layer, e.g. D0_DOC_CHUNKS (docs) or C0_SOURCE_CHUNKS (code).")
    text: str = Field(description=f"The passage (cut at {MAX_PASSAGE_CHARS} characters; `read` gives all lines).")


class SearchResult(BaseModel):
    """Passages for a query, best first."""

    session: str
    relevant: bool = Field(description="Whether the relevance gate judged the passages to answer the query.")
    gate: str = Field(description="Why the gate passed or failed.")
    passages: list[Passage]
    commit: str | None = None


class ReadResult(BaseModel):
    """Indexed lines of one file."""

    session: str
    path: str
    start_line: int
    end_line: int
    last_line: int = Field(description="The file's last line known to the index.")
    text: str = Field(description="Lines start_line..end_line joined with newlines.")
    missing_lines: list[int] = Field(description="Lines in the range no indexed passage holds (returned empty).")
    commit: str | None = None


class SessionInfo(BaseModel):
    """One indexed repository."""

    name: str
    embedder: str
    passages: int = Field(description="Rows of the session's current index.")
    last_job: str | None = Field(default=None, description="Kind and status of the last index job.")
    indexed_at: str | None = Field(default=None, description="When the last index job finished (ISO 8601).")
    git_ref: str | None = None
    commit: str | None = None


class SessionList(BaseModel):
    """The sessions this server answers about."""

    sessions: list[SessionInfo]


class Turn(BaseModel):
    """An earlier turn of the conversation."""

    role: Literal["user", "assistant"]
    content: str


# --- decisions (pure) ---------------------------------------------------------------------------------------------


def choose_session(requested: str | None, names: Sequence[str], default: str) -> str:
    """The session a call reads: the one asked for, else the only one there is, else the configured default.

    Raises:
        UsageError: an empty or undecodable name; none asked for and none (or several, without the default)
            indexed.
    """
    if requested is not None:
        if not requested.strip():
            raise UsageError("session is empty: pass a session name from list_sessions")
        if (byte := undecodable(requested)) is not None:
            raise UsageError(f"session is not valid UTF-8 (byte {byte}): pass a name from list_sessions")
        return requested
    if not names:
        raise UsageError("no session is indexed yet: index a repository with `lotsman index PATH --session NAME`")
    if len(names) == 1:
        return names[0]
    if default in names:
        return default
    raise UsageError(f"session is required: this server has {len(names)} sessions ({shown_names(names)}): "
                     "pass one (list_sessions describes them)")


def shown_names(names: Sequence[str]) -> str:
    """Up to `LISTED_SESSION_NAMES` names for a one-line message."""
    listed = ", ".join(shown(n) for n in names[:LISTED_SESSION_NAMES])
    return listed + (f", … ({len(names) - LISTED_SESSION_NAMES} more)" if len(names) > LISTED_SESSION_NAMES else "")


def check_question(question: str, what: str = "question") -> str:
    """The question as the graph will read it (trimmed, NUL removed).

    Raises:
        InvalidQuestionError: empty, not UTF-8, or longer than `MAX_QUESTION_CHARS`.
    """
    if (byte := undecodable(question)) is not None:
        raise InvalidQuestionError(f"the {what} is not valid UTF-8 (byte {byte}): send it as UTF-8 text")
    cleaned = question.replace("\x00", "").strip()
    if not cleaned:
        raise InvalidQuestionError(f"the {what} is empty: pass the {what} text")
    if len(cleaned) > MAX_QUESTION_CHARS:
        raise InvalidQuestionError(f"the {what} is {len(cleaned)} characters long: send at most {MAX_QUESTION_CHARS} "
                                   "(put the point first; code can be found with `search` and `read`)")
    return cleaned


def check_history(history: Sequence[Turn] | None) -> list[Turn]:
    """Earlier turns the graph may read; raises `InvalidQuestionError` for too many or too long ones."""
    turns = list(history or [])
    if len(turns) > MAX_HISTORY_TURNS:
        raise InvalidQuestionError(f"history has {len(turns)} turns: send at most the last {MAX_HISTORY_TURNS}")
    size = sum(len(t.content) for t in turns)
    if size > MAX_HISTORY_CHARS:
        raise InvalidQuestionError(f"history is {size} characters long: send at most {MAX_HISTORY_CHARS} "
                                   "(the last turns matter most)")
    for turn in turns:
        if (byte := undecodable(turn.content)) is not None:
            raise InvalidQuestionError(f"a history turn is not valid UTF-8 (byte {byte}): send it as UTF-8 text")
    return turns


def check_target(session: str | None, ref: str | None) -> None:
    """Refuse, before any database work, a session name or ref no session can have (`graph.names.check_name`: a
    NUL byte, a control character, over `MAX_NAME_CHARS`); a blank one is left to `choose_session` and `_pick`.

    Raises:
        UsageError: one line saying what is wrong (the value is not echoed: it is the wrong part).
    """
    for value, what, hint in ((session, "session name", "a name list_sessions shows"),
                              (ref, "ref", "a tag, branch or commit list_sessions shows")):
        if value is not None and value.strip():
            try:
                check_name(value, what)
            except ValueError as exc:
                raise UsageError(f"{exc}: pass {hint}") from None


def check_top_k(top_k: Any) -> int:
    """A search's result count: an int (not a bool, str or float) from 1 to `MAX_SEARCH_RESULTS`."""
    if type(top_k) is not int or not 1 <= top_k <= MAX_SEARCH_RESULTS:
        raise UsageError(f"top_k must be from 1 to {MAX_SEARCH_RESULTS}, got {shown(repr(top_k))}")
    return top_k


def check_score(score: Any) -> int:
    """A vote's score: the int 1 or -1 (`True`, `"1"`, `1.0` are not); raises `UsageError` otherwise."""
    if type(score) is not int or score not in (1, -1):
        raise UsageError(f"score must be 1 (the answer helped) or -1 (it did not), got {shown(repr(score))}")
    return score


def remember_answer(answers: OrderedDict[str, AnsweredRun], run_id: str, run: AnsweredRun, *,
                    limit: int = MAX_REMEMBERED_ANSWERS) -> None:
    """Keep `run` under `run_id`, dropping the oldest answers past `limit`."""
    answers[run_id] = run
    answers.move_to_end(run_id)
    while len(answers) > limit:
        answers.popitem(last=False)


def citations_of(raw: Sequence[Any] | None) -> list[Citation]:
    """The graph's citation dicts as `Citation`s (anything malformed is dropped, never invented)."""
    out = []
    for item in raw or []:
        try:
            out.append(Citation(path=str(item["path"]), start_line=int(item["start_line"]),
                                end_line=int(item["end_line"])))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def lost_database(exc: BaseException) -> LotsmanError | None:
    """`database_lost(exc)`, or None while psycopg is still being imported by another thread (the warm-up):
    `database_lost` reads the module from `sys.modules`, where a half-imported one lacks its error classes."""
    try:
        return database_lost(exc)
    except AttributeError:
        return None


def one_line(exc: BaseException) -> str:
    """The message a client reads (`graph.errors.public_message`): our error's text on one line; for the
    database's failures a fixed sentence (their text names the data folder, socket or `DATABASE_URL`: the
    server's log keeps it, `log_failure`); for anything else its kind only."""
    return public_message(exc)


def log_failure(exc: BaseException) -> None:
    """The server's log of a failed tool call: the database's failure in full (what the client was not
    told), an unexpected error with its traceback; a client's own error (bad argument) is not logged."""
    if public_message(exc) in DATABASE_MESSAGES:
        log.warning("MCP tool failed: %s", printable(" ".join(str(lost_database(exc) or exc).split())))
    elif not isinstance(exc, LotsmanError):
        log.error("MCP tool failed", exc_info=exc)


# --- the tools' work -------------------------------------------------------------------------------------------------


class LotsmanTools:
    """What the MCP tools do, over one `GraphDeps` (database pool, embedders, chat model) for the process."""

    def __init__(self, settings: Settings, deps: GraphDeps | None = None, *, session: str | None = None) -> None:
        """
        Args:
            settings: the process's settings.
            deps: injected dependencies (tests); by default the production wiring, built on first use and
                closed by `close()`.
            session: the session a call that names none reads (`lotsman mcp --session`); by default the only
                session there is, else `settings.default_session`.
        """
        self.settings = settings
        self.session = session
        self._deps = deps
        self._owns_deps = deps is None
        self._graphs: dict[str, Any] = {}
        self._warming: threading.Thread | None = None
        self._lock = threading.Lock()
        self._answered: OrderedDict[str, AnsweredRun] = OrderedDict()
        self._answers_lock = threading.Lock()  # not `_lock`: building the deps holds that one for seconds

    def start_warming(self) -> None:
        """Run `warm` in a background thread (once)."""
        if self._warming is None:
            self._warming = threading.Thread(target=self.warm, name="lotsman-mcp-warm", daemon=True)
            self._warming.start()

    async def _warmed(self) -> None:
        """Wait for a running warm-up: a call importing the graph's modules while the warm-up imports them
        too could meet it half-way through a module (and it is doing the call's own preparation anyway)."""
        if self._warming is not None and self._warming.is_alive():
            await asyncio.to_thread(self._warming.join)

    def deps(self) -> GraphDeps:
        with self._lock:  # the warm-up thread and a call may ask at once: one GraphDeps (one pool)
            if self._deps is None:
                from graph.deps import GraphDeps

                self._deps = GraphDeps.from_settings(self.settings)
            return self._deps

    def warm(self) -> None:
        """Build ahead of the first call what it would wait for: the graph's modules, and the bundle (embedder,
        alias index) of the session a call naming none reads. Failures are left to the first call to report."""
        try:
            self._graph("ask")
            _, session_id, _ = self._pick(None)
            self.deps().bundle(session_id)
        except Exception as exc:  # noqa: BLE001 - a warm-up only; the call that needs it says what is wrong
            log.debug("warm-up stopped: %s", one_line(exc))

    def close(self) -> None:
        if self._owns_deps and self._deps is not None:
            self._deps.close()
            self._deps = None

    def _graph(self, kind: Literal["ask", "search"]) -> Any:
        """The compiled graph for a tool, built on first use (in a worker thread: the first build imports the
        graph's modules and may load the chat model's SDK, blocking work the server's event loop must not do)."""
        deps = self.deps()
        graph = self._graphs.get(kind)
        if graph is None:
            from langgraph.checkpoint.memory import InMemorySaver

            from graph.builder import build_graph

            # `search` stops after context_retrieval, which needs a checkpointer to hold the paused state.
            graph = build_graph(deps, checkpointer=InMemorySaver() if kind == "search" else None)
            self._graphs[kind] = graph
        return graph

    # Database work is synchronous (psycopg): a thread keeps the server's event loop free.
    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    def _sessions_now(self) -> SessionList:
        from stores.reading import session_revisions
        from stores.sessions import list_sessions

        with self.deps().database().connection() as conn:
            rows = list_sessions(conn)
            revisions = session_revisions(conn)
        out = []
        for row in rows:
            job = row.get("last_job") or {}
            finished = job.get("finished_at")
            revision = revisions.get(row["name"])
            out.append(SessionInfo(
                name=row["name"], embedder=row["embedder"], passages=int(row.get("rows") or 0),
                last_job=f"{job['kind']} {job['status']}" if job else None,
                indexed_at=finished.isoformat() if finished is not None else None,
                git_ref=revision.git_ref if revision else None, commit=revision.commit if revision else None))
        return SessionList(sessions=out)

    def _pick(self, requested: str | None, ref: str | None = None) -> tuple[str, str, str | None]:
        """(name, id, commit) of the session a call reads: the one named (or the default), or with `ref` the one
        indexed from that git revision (of the named session's repository); an unknown one is one line naming
        the known ones."""
        from stores.reading import session_revisions
        from stores.sessions import find_session, run_session

        asked = requested if requested is not None else self.session
        with self.deps().database().connection() as conn:
            revisions = session_revisions(conn)
            if ref is not None:
                if not ref.strip() or undecodable(ref) is not None:
                    raise UsageError("ref is empty or not UTF-8: pass a tag, branch or commit the session was "
                                     "indexed from (list_sessions shows them)")
                if asked is not None:
                    choose_session(asked, [], self.settings.default_session)  # refuses an empty name
                session_id = run_session(conn, asked or "", ref, session_given=asked is not None)
                session = find_session(conn, session_id)
                name = session.name if session is not None else session_id
            else:
                name = choose_session(asked, sorted(revisions), self.settings.default_session)
                session = find_session(conn, name)
        if session is None:
            known = f"indexed sessions: {shown_names(sorted(revisions))}" if revisions else "none is indexed yet"
            raise SessionNotFoundError(f"no session '{shown(name)}' ({known}): pass a name from list_sessions")
        revision = revisions.get(session.name)
        return session.name, session.rag_session_id, revision.commit if revision else None

    async def list_sessions(self) -> SessionList:
        return await self._db(self._sessions_now)

    async def ask(self, question: str, session: str | None = None, history: Sequence[Turn] | None = None,
                  ref: str | None = None) -> AskResult:
        check_target(session, ref)
        text = check_question(question)
        turns = check_history(history)
        await self._warmed()
        from langchain_core.messages import AIMessage, HumanMessage

        from graph.context import Context
        from graph.nodes import SOURCE_KEY

        name, session_id, commit = await self._db(self._pick, session, ref)
        messages = [HumanMessage(t.content) if t.role == "user" else AIMessage(t.content) for t in turns]
        context = Context(rag_session_id=session_id, token_cap=self.settings.token_cap, top_k=self.settings.top_k)
        run_id = uuid.uuid4()
        # The question log (when on) records where the question came from and the run it was answered in.
        config = {"run_id": run_id, "metadata": {SOURCE_KEY: "mcp", "run_id": str(run_id)}}
        try:
            graph = await self._db(self._graph, "ask")
            out = await graph.ainvoke({"messages": [*messages, HumanMessage(text)]}, config=config, context=context)
        except SessionNotFoundError:  # deleted between two stages of the turn
            raise session_deleted(name) from None
        result = AskResult(answer=str(out.get("answer", "")), citations=citations_of(out.get("citations")),
                           abstained=bool(out.get("abstained", False)), session=name, commit=commit,
                           run_id=str(run_id))
        self.remember(str(run_id), AnsweredRun(session=name, question=text, answer=result.answer,
                                               citations=[c.model_dump() for c in result.citations]))
        return result

    def remember(self, run_id: str, run: AnsweredRun) -> None:
        """Keep an answer `feedback` may vote on (the last `MAX_REMEMBERED_ANSWERS`)."""
        with self._answers_lock:
            remember_answer(self._answered, run_id, run)

    async def feedback(self, run_id: str, score: int, comment: str | None = None) -> FeedbackResult:
        """Store a vote on one of this server's recent answers (`rag_feedback`; LangSmith feedback when traced).

        Raises:
            UsageError: an empty or unknown run id, a score other than ±1, a comment over 2000 characters.
        """
        vote = check_score(score)
        key = run_id.strip()
        if not key:
            raise UsageError("run_id is empty: pass the run_id an `ask` answer carried")
        with self._answers_lock:
            run = self._answered.get(key)
        if run is None:
            raise UsageError(f"no answer with run_id '{shown(key)}' on this server: pass the run_id of one of "
                             f"the last {MAX_REMEMBERED_ANSWERS} `ask` answers since it started")
        feedback_id = await self._db(self._record_vote, key, run, vote, comment)
        return FeedbackResult(feedback_id=feedback_id, run_id=key, score=vote)

    def _record_vote(self, run_id: str, run: AnsweredRun, score: int, comment: str | None) -> str:
        from stores.feedback import langsmith_target, record_feedback

        with self.deps().database().connection() as conn:
            return record_feedback(conn, run.session, run_id=run_id, thread_id=None, question=run.question,
                                   answer=run.answer, citations=run.citations, score=score, comment=comment,
                                   langsmith=langsmith_target(self.settings))

    async def search(self, query: str, session: str | None = None, top_k: int = DEFAULT_SEARCH_RESULTS,
                     ref: str | None = None) -> SearchResult:
        check_target(session, ref)
        text = check_question(query, "query")
        limit = check_top_k(top_k)
        await self._warmed()
        from langchain_core.messages import HumanMessage

        from graph.context import Context

        name, session_id, commit = await self._db(self._pick, session, ref)
        graph = await self._db(self._graph, "search")
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        context = Context(rag_session_id=session_id, token_cap=self.settings.token_cap, top_k=limit)
        try:
            await graph.ainvoke({"messages": [HumanMessage(text)]}, config=config, context=context,
                                interrupt_after=["context_retrieval"])
            state = (await graph.aget_state(config)).values
        except SessionNotFoundError:
            raise session_deleted(name) from None
        finally:
            await graph.checkpointer.adelete_thread(config["configurable"]["thread_id"])
        report = state.get("retrieval")
        passages = [Passage(citation=row.citation, path=row.path, start_line=row.span_start, end_line=row.span_end,
                            title=row.title, layer=row.layer, text=row.content[:MAX_PASSAGE_CHARS])
                    for row in (state.get("evidence") or [])[:limit]]
        return SearchResult(session=name, relevant=bool(report and report.relevant),
                            gate=report.gate if report else "", passages=passages, commit=commit)

    async def read(self, session: str | None, path: str, start_line: int, end_line: int, ref: str | None = None
                   ) -> ReadResult:
        from stores.reading import check_range, read_indexed_lines

        check_range(start_line, end_line)  # before any database work
        check_target(session, ref)
        name, session_id, _ = await self._db(self._pick, session, ref)

        def read_now() -> ReadResult:
            with self.deps().database().connection() as conn:
                got = read_indexed_lines(conn, session_id, path, start_line, end_line)
            return ReadResult(session=name, path=got.path, start_line=got.start_line, end_line=got.end_line,
                              last_line=got.last_line, text=got.text, missing_lines=list(got.missing_lines),
                              commit=got.commit)

        return await self._db(read_now)


async def guarded(call: Awaitable[T]) -> T:
    """Run a tool's work; any failure becomes an MCP tool error carrying our one-line message."""
    try:
        return await call
    except ToolError:
        raise
    except Exception as exc:  # the tool's last line of defence: one line to the client, the detail to the log
        log_failure(exc)
        raise ToolError(one_line(exc)) from None


# --- the stdio transport: a line it cannot read is answered -----------------------------------------------------

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _request_id(value: Any) -> int | str | None:
    """The `id` of a parsed line when it is one a reply may carry (an int or text that is Unicode), else None."""
    raw = value.get("id") if isinstance(value, dict) else None
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        return None
    if isinstance(raw, str) and (_has_surrogate(raw) or len(raw) > 200):
        return None
    return raw


def _has_surrogate(value: Any) -> bool:
    """Whether any string in a parsed line (keys too) holds a lone surrogate; iterative, for deep nesting."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= ch <= "\udfff" for ch in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def bad_line_reply(exc: Exception) -> JSONRPCError | None:
    """The JSON-RPC error answering a stdio line the SDK could not read (`exc`, what its reader passed on), or
    None for a line that wants no reply (a malformed response or error of the client's).

    The SDK's stdio reader hands such a line on as an exception, which its server drops: the client waited
    for a reply that never came. Not JSON (cut short, not UTF-8): -32700 with id null, as JSON-RPC 2.0 says.
    JSON holding a lone surrogate escape (`"\\ud800"`, no Unicode text; Python reads it, pydantic does not):
    -32700 too, but with the request's id when it has one, so the client's call ends instead of timing out.
    JSON that is not a request (`"method": 3`, an array): -32600, with the id when there is one.
    """
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    line = errors[0]["input"] if errors and errors[0]["type"] == "json_invalid" else None
    if isinstance(line, str):
        try:
            parsed = json.loads(line)
        except ValueError as bad:
            return _error_reply(None, PARSE_ERROR, f"Parse error: the line is not JSON ({shown(bad, 120)}): "
                                                   "send one JSON-RPC message per line, UTF-8")
        except RecursionError:
            return _error_reply(None, PARSE_ERROR, "Parse error: the line's JSON is nested too deeply")
        if _has_surrogate(parsed):
            return _error_reply(_request_id(parsed), PARSE_ERROR,
                                "Parse error: a string holds a lone surrogate escape (e.g. \\ud800), which is no "
                                "Unicode text: send characters outside the BMP as a surrogate pair")
        return _error_reply(_request_id(parsed), PARSE_ERROR, f"Parse error: {shown(errors[0]['msg'], 120)}")
    if not errors:
        return _error_reply(None, PARSE_ERROR, f"Parse error: unreadable line ({type(exc).__name__})")
    whole = next((e["input"] for e in errors if isinstance(e["input"], dict | list)), None)
    if isinstance(whole, dict) and "method" not in whole and ("result" in whole or "error" in whole):
        return None  # a response of the client's to a request of ours: JSON-RPC answers no response
    where = ".".join(str(p) for p in errors[0]["loc"][1:]) or "message"
    return _error_reply(_request_id(whole), INVALID_REQUEST,
                        f"Invalid Request: not a JSON-RPC 2.0 message ({where}: {shown(errors[0]['msg'], 80)})")


def _request_methods() -> frozenset[str]:
    """The methods MCP defines as a client's requests (`ping`, `initialize`, `tools/call`, ...)."""
    import typing

    import mcp_types

    methods: set[str] = set()
    for request in typing.get_args(mcp_types.ClientRequest):
        methods.update(typing.get_args(request.model_fields["method"].annotation))
    return frozenset(methods)


REQUEST_METHODS = _request_methods()


def request_without_id_reply(item: Any) -> JSONRPCError | None:
    """The -32600 error (id null) answering a request the SDK read as a notification, else None.

    A request whose `id` is no id (`null`, `1.5`, an array) parses as a `JSONRPCNotification`: the SDK's model
    drops the unknown field, so the line's id cannot be read back, and its server answers no notification:
    the client waited for its timeout (issue 37, item 5). A notification naming one of MCP's request methods
    is such a line (MCP has no `ping` or `tools/call` notification), so it is answered instead.
    """
    message = getattr(item, "message", None)
    if not isinstance(message, JSONRPCNotification) or message.method not in REQUEST_METHODS:
        return None
    return _error_reply(None, INVALID_REQUEST,
                        f"Invalid Request: {shown(message.method)} is a request: give it an id, a string or an "
                        "integer (null, a fraction or no id make it a notification, which gets no reply)")


def _error_reply(request_id: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


class AnsweringBadLines:
    """The stdio transport's read stream, answering each line it could not read (`bad_line_reply`) on the
    write stream and passing every message on: the SDK's server would drop such a line unanswered."""

    def __init__(self, inner: Any, replies: Any) -> None:
        self._inner = inner
        self._replies = replies

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                if (reply := request_without_id_reply(item)) is None:
                    return item
                log.warning("MCP stdio: a %s request without a usable id (answered -32600)", shown(item.message.method))
                await self._replies.send(SessionMessage(reply))
                continue
            try:
                reply = bad_line_reply(item)
            except Exception:  # noqa: BLE001 - a line must never stop the server: answer it all the same
                log.exception("MCP stdio: could not judge an unreadable line")
                reply = _error_reply(None, PARSE_ERROR, "Parse error: unreadable line")
            log.warning("MCP stdio: unreadable line (%s)%s", shown(item, 200),
                        "" if reply is not None else ": a malformed response, not answered")
            if reply is not None:
                await self._replies.send(SessionMessage(reply))

    def __aiter__(self) -> AnsweringBadLines:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnsweringBadLines:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class LotsmanMCPServer(MCPServer):
    """`MCPServer` whose argument errors are one line too (`top_k: Input should be a valid integer (got 'x')`)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(public_text(f"Error executing tool {shown(name)}: invalid arguments: "
                                            f"{validation_message(exc.__cause__)}")) from None
            raise ToolError(public_text(str(exc))) from None  # the SDK's own (`Unknown tool: <name>`) echo too

    async def run_stdio_async(self) -> None:
        """The SDK's stdio transport, with each line it cannot read answered (`AnsweringBadLines`)."""
        async with stdio_server() as (read_stream, write_stream):
            await self._lowlevel_server.run(AnsweringBadLines(read_stream, write_stream), write_stream,
                                            self._lowlevel_server.create_initialization_options())


QuestionArg = Annotated[str, Field(description="The question, in Russian or English (at most 8000 characters).")]
QueryArg = Annotated[str, Field(description="What to look for: words, identifiers, a question.")]
SessionArg = Annotated[str | None, Field(description="Session name from list_sessions (may be omitted when only "
                                                     "one is indexed).")]
HistoryArg = Annotated[list[Turn] | None, Field(description="Earlier turns, oldest first, for a follow-up "
                                                            f"(at most {MAX_HISTORY_TURNS}).")]
RefArg = Annotated[str | None, Field(description="A git revision (tag, branch, commit) to read: the session "
                                                 "indexed from it with `lotsman index REPO --ref REF`, among the "
                                                 "sessions of `session`'s repository. Omit for `session` itself.")]
# Integer arguments are strict: the SDK would take `true`, `"3"` or `3.0` as 1 or 3 (issue 37, item 9). The bounds
# are in the schema for the client and checked by `check_top_k` / `check_score`, whose message says what is valid.
TopKArg = Annotated[int, Field(strict=True, description=f"Passages to return (1-{MAX_SEARCH_RESULTS}).",
                               json_schema_extra={"minimum": 1, "maximum": MAX_SEARCH_RESULTS})]
PathArg = Annotated[str, Field(description="File path relative to the indexed root, as in a citation.")]
StartArg = Annotated[int, Field(strict=True, description="First line (1-based).")]
EndArg = Annotated[int, Field(strict=True, description="Last line (inclusive; at most 400 lines in all).")]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
VOTE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
"""A vote adds a row to the server's feedback store (and LangSmith): a write, though it changes no answer."""
RunIdArg = Annotated[str, Field(description="The run_id of an `ask` answer.")]
ScoreArg = Annotated[int, Field(strict=True, description="1: the answer helped; -1: it did not.",
                                 json_schema_extra={"enum": [1, -1]})]
CommentArg = Annotated[str | None, Field(description="Why, in a sentence or two (at most 2000 characters).")]


def build_server(tools: LotsmanTools, *, warm: bool = False) -> MCPServer:
    """The MCP server with Lotsman's four reading tools and `feedback` (no indexing tool, on purpose).

    Args:
        tools: what the tools do.
        warm: when the server starts, prepare the first call's graph and session in a background thread
            (`LotsmanTools.warm`), while the client connects and lists the tools.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("lotsman")
    except PackageNotFoundError:
        release = "0"

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[dict[str, Any]]:
        if warm:
            tools.start_warming()
        yield {}

    server = LotsmanMCPServer("lotsman", title="Lotsman", instructions=INSTRUCTIONS, version=release,
                              log_level="WARNING", lifespan=lifespan)

    @server.tool(name="list_sessions", title="List indexed repositories", description=LIST_SESSIONS_DESCRIPTION,
                 annotations=READ_ONLY)
    async def list_sessions() -> SessionList:
        return await guarded(tools.list_sessions())

    @server.tool(name="ask", title="Ask a question (cited answer)", description=ASK_DESCRIPTION,
                 annotations=READ_ONLY)
    async def ask(question: QuestionArg, session: SessionArg = None, history: HistoryArg = None,
                  ref: RefArg = None) -> AskResult:
        return await guarded(tools.ask(question, session, history, ref))

    @server.tool(name="search", title="Search docs and code", description=SEARCH_DESCRIPTION, annotations=READ_ONLY)
    async def search(query: QueryArg, session: SessionArg = None, top_k: TopKArg = DEFAULT_SEARCH_RESULTS,
                     ref: RefArg = None) -> SearchResult:
        return await guarded(tools.search(query, session, top_k, ref))

    @server.tool(name="read", title="Read indexed lines", description=READ_DESCRIPTION, annotations=READ_ONLY)
    async def read(path: PathArg, start_line: StartArg, end_line: EndArg, session: SessionArg = None,
                   ref: RefArg = None) -> ReadResult:
        return await guarded(tools.read(session, path, start_line, end_line, ref))

    @server.tool(name="feedback", title="Vote on an answer", description=FEEDBACK_DESCRIPTION, annotations=VOTE)
    async def feedback(run_id: RunIdArg, score: ScoreArg, comment: CommentArg = None) -> FeedbackResult:
        return await guarded(tools.feedback(run_id, score, comment))

    return server
