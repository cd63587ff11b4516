"""The one bootstrap that wires dependencies: database, repository, embedders, router, chat model.

Heavy objects are created lazily (the deployed graph is imported by the server before any request) and
cached per session *generation*, so a re-index is picked up by the next question while a turn that
began before it keeps reading one generation from start to end.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graph.context import Context
from graph.settings import Settings, get_settings
from graph.state import SessionRef
from nodes.context_retrieval.adapter import RetrievalAdapter
from nodes.context_retrieval.merge import RetrievalResult
from nodes.context_retrieval.strategy import retrieve_evidence
from nodes.conversation_understanding import StandaloneRequest
from nodes.intent_routing import IntentRouter, RouteResult
from nodes.intent_routing.alias_index import alias_index
from nodes.layout import discover_layout
from nodes.retrieval_policy import CodePlan, RetrievalPlan
from stores.artifacts import generation_artifacts, last_done_job
from stores.database import Database
from stores.embedders import LotsmanEmbeddings, make_embedder
from stores.errors import LotsmanError
from stores.repository import RagRepository
from stores.schema import ensure_tables
from stores.sessions import RagSession, get_session

if TYPE_CHECKING:  # the chat model's classes load with the model (`make_chat_model`), not with the graph
    from langchain_core.language_models import BaseChatModel
    from langchain_openai import ChatOpenAI

LANE_WORKERS = 6
"""Threads of the shared lane pool: each request runs up to five lane queries at once."""
EXACT_SCAN_MAX_ROWS = 10_000
"""Sessions with at most this many vectors are searched exactly: exact neighbours, and results that do not
depend on other sessions' rows in the shared HNSW index (measured: on a database holding five eval corpora,
16 of 51 atlas-pm cases got different evidence than on one holding it alone). The scan costs ~5 µs per
512-d vector on the shared 2 cores (24,675 stdlib vectors: p50 138 ms, against 9–22 ms through HNSW at
recall 0.98–0.99), so 20k made the largest exact sessions several times slower than HNSW; at 10k it stays
under ~50 ms. Every eval corpus (≤ ~2k vectors) is still exact. `make bench` (`scale`) reports both."""
LEXICAL_RANK_CAP = 2000
"""Sessions above `EXACT_SCAN_MAX_ROWS` rank at most this many lexical matches per set (`build_retrieve`
`rank_cap`): a common word matched 4,117 stdlib rows and ranking them all by `ts_rank_cd` took 85 ms. The
capped sets are picked from by the cheaper `ts_rank` (`PRE_RANK_CAPPED`), so 2,000 cost what 1,000 did before
(ranked SQL of 20 questions at 100k rows: 250-281 ms, against 288-323 ms at 1,000 by `ts_rank_cd`) and twice
as many matches compete. Small sessions (every eval corpus) still rank every match, so their results do not
change."""
SCOPE_AFTER_MATCH_ROWS = 250_000
SCOPE_AFTER_MATCH_SHARE = 0.5
"""A session with at least this many rows that is at least this share of its chunk table takes its lexical
matches from the GIN index alone and checks its scope on them (`RetrievalStatementBuilder`
`scope_after_match`). Otherwise the planner ANDs in a bitmap of the session's rows from the session index,
~65 ns a row (1M rows: 64-70 ms a match set, at any `work_mem`), to save the heap pages of the other
sessions' matches: a loss when those are few (1M-row session, 93% of the table: lexical SQL 107 -> 61 ms
per request), about even at 100k rows and 56% (27.4 vs 28.3 ms), and what narrows a small session's
matches when the table holds much else (statistics: `RagRepository.estimated_rows`)."""


def scope_after_match(session_rows: int, table_rows: int) -> bool:
    """Whether a session's lexical match sets should check its scope after the GIN match (see
    `SCOPE_AFTER_MATCH_ROWS`), by the planner's row estimates."""
    return session_rows >= SCOPE_AFTER_MATCH_ROWS and session_rows >= SCOPE_AFTER_MATCH_SHARE * table_rows


GENERATIONS_KEPT = 2
"""Bundles kept per session: the current generation and the one a turn in flight may still read."""


@dataclass(frozen=True)
class SessionBundle:
    """Everything a turn needs for one session generation."""

    session: RagSession
    adapter: RetrievalAdapter
    router: IntentRouter
    symbols: frozenset[str]
    """Symbol names of the session's code (the code plan's identifiers)."""
    last_job: str | None = None
    """The session's last finished index job the bundle was built after (`stores.artifacts.last_done_job`)."""

    @property
    def ref(self) -> SessionRef:
        s = self.session
        revision = ({"repo": s.repo_path or "", "ref": s.git_ref or "", "commit": s.commit_sha}
                    if s.commit_sha else None)
        return SessionRef(rag_session_id=s.rag_session_id, name=s.name, generation=s.active_generation,
                          revision=revision)


RetrieveFn = Callable[[SessionBundle, StandaloneRequest, RouteResult, RetrievalPlan, CodePlan | None, Context],
                      RetrievalResult]
"""How context_retrieval turns a turn's plans into evidence (tests may inject another)."""


def full_retrieval(bundle: SessionBundle, request: StandaloneRequest, route: RouteResult, plan: RetrievalPlan,
                   code_plan: CodePlan | None, ctx: Context) -> RetrievalResult:
    """The run context's retriever: `full` (every lane of the plan and the code plan, fused, gated and
    capped) or a plain baseline lane (`vector`, `bm25`)."""
    return retrieve_evidence(bundle.adapter, bundle.session, request.text, plan, code_plan,
                             retriever=ctx.retriever, ranker=ctx.ranker, file_names=route.anchors.file_names,
                             gate_terms=request.key_terms, top_k=ctx.top_k, token_cap=ctx.token_cap)


@dataclass
class GraphDeps:
    """Injected into `build_graph`: tests pass fakes (an embedder, a chat model, a database)."""

    settings: Settings = field(default_factory=get_settings)
    db: Database | None = None
    chat_model: BaseChatModel | None = None
    """A LangChain chat model (GigaChat, or `ChatOpenAI` with `LOTSMAN_LLM_PROVIDER=openai`); None → deterministic
    router and extractive answers."""
    embedder: LotsmanEmbeddings | None = None
    """Force one embedder (tests); by default each session's recorded embedder is built."""
    retrieve: RetrieveFn = full_retrieval
    """The retrieval strategy of context_retrieval."""
    _bundles: dict[tuple[str, int], SessionBundle] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _lane_pool: ThreadPoolExecutor | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> GraphDeps:
        """Production wiring: the configured chat model (`make_chat_model`), offline without one."""
        settings = settings or get_settings()
        return cls(settings=settings, chat_model=make_chat_model(settings))

    def database(self) -> Database:
        with self._lock:
            if self.db is None:
                self.db = Database.from_settings(self.settings)
                with self.db.connection() as conn:
                    ensure_tables(conn)
            return self.db

    def lane_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._lane_pool is None:
                self._lane_pool = ThreadPoolExecutor(max_workers=LANE_WORKERS, thread_name_prefix="lotsman-lane")
            return self._lane_pool

    def close(self) -> None:
        """Release the pool of lane threads and the database pool (the CLI calls it before exiting)."""
        with self._lock:
            pool, self._lane_pool = self._lane_pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        if self.db is not None:
            self.db.close()

    def bundle(self, session_name: str) -> SessionBundle:
        """The bundle of the session's current generation and rows (two short reads: the session row and its
        last finished job; a changes job keeps the generation but rebuilds the bundle)."""
        with self.database().connection() as conn:
            session = get_session(conn, session_name)
            job = last_done_job(conn, session.rag_session_id)
        return self._cached(session, job)

    def bundle_for(self, ref: SessionRef) -> SessionBundle:
        """The bundle a turn pinned in `SessionRef`: no round trip while its generation is cached."""
        cached = self._bundles.get((ref.rag_session_id, ref.generation))
        return cached if cached is not None else self.bundle(ref.rag_session_id)

    def _cached(self, session: RagSession, job: str | None) -> SessionBundle:
        key = (session.rag_session_id, session.active_generation)
        cached = self._bundles.get(key)
        if cached is not None and cached.last_job == job:
            return cached
        bundle = self._build(session)
        with self._lock:
            mine = sorted((k for k in self._bundles if k[0] == session.rag_session_id), key=lambda k: k[1])
            for old in mine[: max(0, len(mine) - GENERATIONS_KEPT + 1)]:
                del self._bundles[old]
            self._bundles[key] = bundle
        return bundle

    def _build(self, session: RagSession) -> SessionBundle:
        embedder = self.embedder or make_embedder(session.embedder, self.settings)
        session.check_embedder(embedder.name, embedder.dim)
        repository = RagRepository(self.database())
        # The generation's session-wide facts, stored with it at index time (one short read; computed and
        # stored here for a generation that has none yet).
        with self.database().connection() as conn:
            facts = generation_artifacts(conn, session.rag_session_id, session.active_generation, session.table)
        layout = discover_layout(facts.files)
        router = IntentRouter(llm=self.chat_model, aliases=alias_index(facts.catalog, layout.packages),
                              timeout_s=self.settings.gigachat.router_timeout)
        # Sessions indexed before schema v5 have no stored stoplist yet: compute it once here.
        stop = session.stop_lexemes if session.stop_lexemes is not None else repository.frequent_lexemes(session)
        # The adapter's reads run under the lane budget; the one-off reads above (catalogs, symbols) do not.
        lanes_repository = RagRepository(self.database(), statement_budget_ms=self.settings.lane_budget_ms or None)
        exact = facts.embedded_rows <= EXACT_SCAN_MAX_ROWS
        if not exact:  # a large session: rank at most this many lexical matches per set (small ones rank all)
            lanes_repository.lexical_rank_cap = LEXICAL_RANK_CAP
        lanes_repository.scope_after_match = scope_after_match(*repository.estimated_rows(session))
        adapter = RetrievalAdapter(lanes_repository, embedder, executor=self.lane_pool(), stop_lexemes=stop,
                                   layout=layout, symbols=facts.symbols,
                                   exact_vectors=exact, present_layers=facts.present_layers)
        return SessionBundle(session=session, adapter=adapter, router=router, symbols=facts.symbols,
                             last_job=facts.last_job)


def client_limits(timeout_s: float, max_retries: int, deadline_s: float) -> tuple[float, int]:
    """The chat model client's own HTTP timeout and retries, so that its worst case alone —
    (retries + 1) × timeout against an endpoint that accepts and never answers — fits in one request's LLM
    deadline: the timeout is at most the deadline, and retries are dropped that would not fit.

    The graph's per-call limit (min(own timeout, time left), `nodes.llm_budget.allot`) is what bounds a
    request; these keep the SDK from planning past it (measured before: 30 s timeout × 2 attempts a call).
    """
    if deadline_s <= 0:  # no LLM time at all: the graph makes no call, the client's values do not matter
        return timeout_s, 0
    timeout = min(timeout_s, deadline_s)
    if timeout <= 0:
        return timeout_s, 0
    fitting = int(deadline_s // timeout) - 1
    return timeout, max(0, min(max_retries, fitting))


OPENAI_NO_KEY = "no-key"
"""The key sent to an OpenAI-compatible server when `OPENAI_API_KEY` is unset: the SDK refuses to start without
one, and local servers (llama.cpp, vLLM, Ollama) accept any."""


def make_chat_model(settings: Settings) -> BaseChatModel | None:
    """The chat model of `LOTSMAN_LLM_PROVIDER`, or None (offline).

    `gigachat` (default): GigaChat when `GIGACHAT_CREDENTIALS` and `GIGACHAT_MODEL` are set, else None.
    `openai`: LangChain's `ChatOpenAI` on `OPENAI_BASE_URL` with `LOTSMAN_LLM_MODEL` (both checked at start-up,
    `graph.settings.llm_provider_problems`). Both stream (`streaming=True`) and get the same client limits,
    cut to the request's LLM deadline (`client_limits`).
    """
    gc = settings.gigachat
    timeout, retries = client_limits(gc.timeout, gc.max_retries, gc.request_deadline)
    if settings.llm_provider == "openai":
        return _openai_chat_model(settings, timeout, retries)
    if not gc.enabled:
        return None
    if not gc.model:
        raise LotsmanError("GIGACHAT_CREDENTIALS is set but GIGACHAT_MODEL is not: set the chat model name")
    from langchain_gigachat import GigaChat  # imported only when configured: it pulls in the whole SDK

    assert gc.credentials is not None
    # streaming=True: without it .stream() and stream_mode="messages" return one chunk (SPEC §2.2).
    return GigaChat(
        credentials=gc.credentials.get_secret_value(), scope=gc.scope, model=gc.model, base_url=gc.base_url,
        auth_url=gc.auth_url, verify_ssl_certs=gc.verify_ssl_certs, timeout=timeout,
        max_retries=retries, streaming=True,
    )


def _openai_chat_model(settings: Settings, timeout: float, retries: int) -> BaseChatModel:
    if not (settings.openai_base_url or "").strip() or not (settings.llm_model or "").strip():
        raise LotsmanError("LOTSMAN_LLM_PROVIDER=openai needs OPENAI_BASE_URL and LOTSMAN_LLM_MODEL")
    from pydantic import SecretStr  # ChatOpenAI is imported only when configured, like GigaChat's SDK

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
    chat_class: type[ChatOpenAI] = per_loop_chat_openai()
    return chat_class(
        model=(settings.llm_model or "").strip(), base_url=(settings.openai_base_url or "").strip(),
        api_key=SecretStr(key or OPENAI_NO_KEY), timeout=timeout, max_retries=retries, streaming=True,
    )


@functools.cache
def per_loop_chat_openai() -> type[ChatOpenAI]:
    """`ChatOpenAI` with an async client of its own for each event loop it is called from.

    `lotsman eval --llm` runs each corpus in its own `asyncio.run` with one chat model (so does any caller
    running turns in `asyncio.run` one by one): ChatOpenAI's async HTTP client (shared by every instance on
    the same URL) kept a connection of the first loop, and the next loop's first call failed with
    `RuntimeError: Event loop is closed`. A call from another loop than the last one now builds a fresh
    `AsyncOpenAI` and HTTP client for it (the sync client, which the router's thread uses, has no loop).
    """
    import asyncio

    import openai
    from langchain_openai import ChatOpenAI
    from pydantic import PrivateAttr, SecretStr

    class PerLoopChatOpenAI(ChatOpenAI):
        _loop: Any = PrivateAttr(default=None)

        def _client_for_this_loop(self) -> None:
            loop = asyncio.get_running_loop()
            if self._loop is loop:
                return
            key = self.openai_api_key
            limit = self.request_timeout
            timeout = float(limit) if isinstance(limit, int | float) else None  # `make_chat_model` sets a float
            client = openai.AsyncOpenAI(
                api_key=key.get_secret_value() if isinstance(key, SecretStr) else OPENAI_NO_KEY,
                base_url=self.openai_api_base, timeout=timeout, max_retries=self.max_retries or 0,
                organization=self.openai_organization, default_headers=self.default_headers,
                default_query=self.default_query, http_client=openai.DefaultAsyncHttpxClient(timeout=timeout))
            self.root_async_client = client
            self.async_client = client.chat.completions
            self._loop = loop

        async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            self._client_for_this_loop()
            async for chunk in super()._astream(*args, **kwargs):
                yield chunk

        async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
            self._client_for_this_loop()
            return await super()._agenerate(*args, **kwargs)

    PerLoopChatOpenAI.__name__ = PerLoopChatOpenAI.__qualname__ = "ChatOpenAI"  # what traces and tests show
    return PerLoopChatOpenAI
