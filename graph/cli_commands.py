"""Commands that need the indexing and QA stacks; `graph.cli` calls `register(sub)` to add them."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from graph.names import check_name
from graph.settings import Settings
from graph.terminal import printable, undecodable
from stores.errors import InvalidQuestionError, SessionNotFoundError, session_deleted

if TYPE_CHECKING:  # the graph's modules load only when a command needs them (a fast `lotsman --help`)
    from graph.deps import GraphDeps


def session_name(value: str) -> str:
    """argparse type: a session name as `graph.names.check_name` takes it: not empty (an empty one would silently
    mean `default`), UTF-8 text (PostgreSQL cannot store the lone surrogates Python makes of other bytes), no
    control character, at most `MAX_NAME_CHARS` long."""
    try:
        return check_name(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}: give a name such as --session docs") from None


def revision(value: str) -> str:
    """argparse type: a git revision (`--ref`), checked as a session name is."""
    try:
        return check_name(value, "ref")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}: give a tag, branch or commit, e.g. --ref v1.0") from None


def chat_thread(value: str) -> str:
    """argparse type: a chat thread id to resume, not empty and UTF-8 text (the checkpointer stores it)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("the thread id is empty: give the one `chat` printed")
    if (byte := undecodable(value)) is not None:
        raise argparse.ArgumentTypeError(f"the thread id is not valid UTF-8 (byte {byte}): "
                                         "give the one `chat` printed")
    return value


def positive_int(value: str) -> int:
    """argparse type: a count of at least 1."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {number}")
    return number


@contextmanager
def open_deps(settings: Settings, *, production: bool = True) -> Iterator[GraphDeps]:
    """`GraphDeps` whose connection pool and lane threads are released when the command ends.

    Left to the garbage collector, `ConnectionPool.__del__` may run on one of the pool's own worker threads
    and print `RuntimeError: cannot join current thread` after a successful command.
    """
    from graph.deps import GraphDeps

    deps = GraphDeps.from_settings(settings) if production else GraphDeps(settings=settings)
    try:
        yield deps
    finally:
        deps.close()


def clean_question(question: str) -> str:
    """The question every entry point passes on: NUL bytes removed (PostgreSQL text cannot hold them, and
    the chat checkpointer stores the turn), surrounding whitespace trimmed; empty is an error, and so is
    text that was not UTF-8 (refused before any work: the graph would run and then fail to store it)."""
    if (byte := undecodable(question)) is not None:
        raise InvalidQuestionError(f"the question is not valid UTF-8 (byte {byte}): check the terminal's "
                                   "encoding (e.g. LANG=C.UTF-8) and ask again")
    question = question.replace("\x00", "").strip()
    if not question:
        raise InvalidQuestionError("the question is empty: ask something, e.g. lotsman ask \"Как устроен индекс?\"")
    return question


async def _ask_once(settings: Settings, question: str, session: str, *, thread_id: str | None = None,
                    checkpointer: Any = None, deps: Any = None, printer: AnswerPrinter | None = None
                    ) -> dict[str, Any]:
    """One turn through the graph; with a `printer`, the answer's tokens are printed as they come."""
    from langchain_core.messages import HumanMessage

    from graph.builder import build_graph
    from graph.context import Context
    from graph.deps import GraphDeps
    from graph.nodes import SOURCE_KEY

    deps = deps or GraphDeps.from_settings(settings)  # callers that own their deps close their pool
    graph = build_graph(deps, checkpointer=checkpointer)
    run_id = uuid.uuid4()  # the root run's id in LangSmith, and the question log's
    config = {"configurable": {"thread_id": thread_id or uuid.uuid4().hex}, "run_id": run_id,
              "metadata": {SOURCE_KEY: "cli", "run_id": str(run_id)}}
    inputs = {"messages": [HumanMessage(question)]}
    context = Context(rag_session_id=session, token_cap=settings.token_cap, top_k=settings.top_k,
                      llm_timeout_s=settings.gigachat.timeout)
    if printer is None:
        return await graph.ainvoke(inputs, config=config, context=context)
    final: dict[str, Any] = {}
    async for mode, data in graph.astream(inputs, config=config, context=context,
                                          stream_mode=["messages", "values"]):
        if mode == "values":
            final = data
            printer.evidence(data)
            continue
        message, metadata = data
        if metadata.get("langgraph_node") == "answer_composition" and isinstance(message.content, str) \
                and type(message).__name__ == "AIMessageChunk":
            printer.feed(message.content)
    return final


async def _answer(settings: Settings, question: str, session: str, deps: GraphDeps, **run: Any) -> dict[str, Any]:
    """One turn on `session`, which must still exist when the answer says the index does not answer.

    A session deleted during the turn leaves retrieval nothing to read, and the answer would blame the
    question ("the indexed material does not answer this"); the session is looked up before the turn and,
    when the answer abstains or cites nothing, again afterwards (by id: one deleted and created again under
    the same name is another index).
    """
    from stores.sessions import find_session, get_session

    with deps.database().connection() as conn:
        before = get_session(conn, session)  # unknown: the usual `no session` error, before any work
    try:
        out = await _ask_once(settings, question, session, deps=deps, **run)
    except SessionNotFoundError:  # the turn lost it between two of its stages
        raise session_deleted(session) from None
    if out.get("abstained") or not out.get("citations"):
        with deps.database().connection() as conn:
            if find_session(conn, before.rag_session_id) is None:
                raise session_deleted(session)
    return out


def revision_session(deps: GraphDeps, session: str | None, ref: str | None) -> str:
    """The session to answer from: `session` (default "default"), or with `ref` the session indexed from that
    git revision (of `session`'s repository when one was named). Unknown: exit 4; ambiguous: exit 2."""
    if ref is None:
        return session or "default"
    from stores.sessions import session_for_ref

    with deps.database().connection() as conn:
        return session_for_ref(conn, ref, within=session).name


def _ask(args: argparse.Namespace, settings: Settings) -> int:
    question = clean_question(args.question)
    with open_deps(settings) as deps:
        session = revision_session(deps, args.session, args.ref)
        printer = AnswerPrinter() if streams(deps, as_json=args.json) else None
        out = asyncio.run(_answer(settings, question, session, deps, printer=printer))
    if printer is not None:
        printer.finish(out.get("answer", ""))
        _print_route(out)
    else:
        _print_answer(out, as_json=args.json)
    return 0


def streams(deps: Any, *, as_json: bool) -> bool:
    """Whether an answer is printed as its tokens come: on the LLM path (a chat model is configured) and not
    for `--json` (one JSON document, printed once the turn is over). Offline answers print at once."""
    return not as_json and deps.chat_model is not None


class AnswerPrinter:
    """Prints the LLM answer's tokens as they stream, so that what ends up printed is the checked answer.

    The answer's citations are checked only when the stream has ended (`verify_citations`); to print the
    same text the non-streamed `ask` prints, the printer holds back what a check could still change: a
    bracket group until it closes (then checked on its own against the passages the model was shown, and
    dropped with the space before it when it fails), whitespace until text follows it. `finish` prints the
    rest of the checked answer. When the checked answer does not continue what was printed (the model's
    stream broke and the extractive answer replaced it, or a bare citation failed), it says so on stderr and
    prints the checked answer in full.
    """

    def __init__(self, out: Any = None, err: Any = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.printed = ""
        self.pending = ""
        self.shown: list[Any] = []

    def evidence(self, state: dict[str, Any]) -> None:
        """Take the passages the answer may cite from a state the graph streamed (after context_analysis)."""
        from nodes.answer_composition.llm import passage_rows

        analysis = state.get("analysis")
        if analysis is not None:
            self.shown = passage_rows(analysis) or list(state.get("evidence") or [])

    def feed(self, token: str) -> None:
        self.pending += token
        self._write(self._release())

    def _release(self) -> str:
        from nodes.answer_composition.citations import verify_citations

        out = ""
        while True:
            start = self.pending.find("[")
            if start < 0:
                body = self.pending.rstrip()
                self.pending = self.pending[len(body):]
                return out + body
            lead = self.pending[:start]
            body = lead.rstrip()
            space, rest = lead[len(body):], self.pending[start:]
            end = rest.find("]")
            if end < 0 and "\n" not in rest and len(rest) <= MAX_GROUP_CHARS:
                self.pending = space + rest  # an open group: wait for its end
                return out + body
            if end < 0 or "\n" in rest[:end]:  # not a citation group: the bracket is text
                out += body + space + "["
                self.pending = rest[1:]
                continue
            group = rest[: end + 1]
            clean, _, removed = verify_citations(group, self.shown)
            out += body + (space + group if not removed else (space + clean if clean else ""))
            self.pending = rest[end + 1:]

    def _write(self, text: str) -> None:
        if not self.printed:
            text = text.lstrip()  # the checked answer is stripped
        if text:
            self.out.write(printable(text, multiline=True))
            self.out.flush()
            self.printed += text

    def finish(self, answer: str) -> None:
        """Print what the checked `answer` adds to what was printed, and end the line."""
        if answer.startswith(self.printed):
            self._write(answer[len(self.printed):])
            self.out.write("\n")
        else:
            self.out.write("\n")
            print("note: the streamed text did not hold up (see the checked answer below)", file=self.err)
            self.out.write(printable(answer, multiline=True) + "\n")
        self.out.flush()


MAX_GROUP_CHARS = 400
"""Longest bracket group `verify_citations` reads as citations: a longer one is text, printed as it comes."""


def _print_answer(out: dict[str, Any], *, as_json: bool) -> None:
    route = out.get("route") or {}
    if as_json:
        payload = {
            "answer": out.get("answer", ""),
            "citations": out.get("citations", []),
            "route": {k: route.get(k) for k in ("routing_domain", "intent", "subintent", "confidence",
                                                "routing_mode", "target_terms", "anchors")},
            "abstained": out.get("abstained", False),
            "answer_mode": out.get("answer_mode", "offline"),
            "llm_events": out.get("llm_events", []),
            "offline_reason": out.get("offline_reason", ""),
            "revision": out.get("revision"),
            "timings_ms": out.get("timings_ms", {}),
        }
        print(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    print(printable(out.get("answer", ""), multiline=True))
    _print_route(out)


ROUTED_BY = {
    "llm_default": "routed by the LLM",
    "fallback": "routed by rules",
    "fallback_llm_error": "routed by rules (the LLM call failed)",
    "fallback_llm_invalid": "routed by rules (the LLM's route was unusable)",
}
"""The trailer's words for seed 002's `routing_mode` (which `--json` keeps as is): "via fallback" read like an
error on every offline answer, though rules are how an offline router decides (issue 37)."""


def route_trailer(out: dict[str, Any]) -> str:
    """The line after an answer on stderr: route, who chose it, time in the graph, why it ran offline."""
    route = out.get("route") or {}
    timings = out.get("timings_ms") or {}
    mode = str(route.get("routing_mode") or "")
    routed = ROUTED_BY.get(mode, f"routed: {printable(mode)}")
    offline = f"; answered offline: {printable(out['offline_reason'])}" if out.get("offline_reason") else ""
    return f"[{route.get('intent')}/{route.get('subintent')}, {routed}; {sum(timings.values()):.0f} ms{offline}]"


def _print_route(out: dict[str, Any]) -> None:
    print(f"\n{route_trailer(out)}", file=sys.stderr)


def _chat(args: argparse.Namespace, settings: Settings) -> int:
    if isinstance(sys.stdin, io.TextIOWrapper):
        # A line that is not UTF-8 reaches `clean_question` as lone surrogates and is refused there; with
        # the default strict decoding `input()` would raise and end the conversation instead.
        sys.stdin.reconfigure(errors="surrogateescape")
    thread = args.thread or uuid.uuid4().hex
    with open_deps(settings) as deps:
        asyncio.run(_chat_loop(settings, deps, args.session, thread))
    return 0


async def _chat_loop(settings: Settings, deps: Any, session: str, thread_id: str) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(deps.database().url) as saver:
        await saver.setup()
        print(f"thread {printable(thread_id)} (resume with --thread {printable(thread_id)}); "
              "empty line or Ctrl-D to quit", file=sys.stderr)
        while True:
            try:
                line = input("you> ")
            except EOFError:
                break
            if not line.strip():
                break
            try:
                question = clean_question(line)
            except InvalidQuestionError as exc:  # keep the conversation; a line of NUL bytes asks nothing
                if undecodable(line) is not None:
                    print(f"error: {printable(exc)}", file=sys.stderr)
                continue
            printer = AnswerPrinter() if streams(deps, as_json=False) else None
            out = await _answer(settings, question, session, deps, thread_id=thread_id, checkpointer=saver,
                                printer=printer)
            if printer is not None:
                printer.finish(out.get("answer", ""))
            else:
                print(printable(out.get("answer", ""), multiline=True))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="answer one question with citations")
    p.add_argument("question")
    p.add_argument("--session", default=None, type=session_name, help="the indexed session (default: default)")
    p.add_argument("--ref", metavar="REF", type=revision,
                   help="answer from the session indexed from this git revision (tag, branch or commit)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_ask)

    p = sub.add_parser("chat", help="multi-turn conversation (kept per thread in Postgres)")
    p.add_argument("--session", default="default", type=session_name)
    p.add_argument("--thread", type=chat_thread, help="resume a thread id")
    p.set_defaults(handler=_chat)
