"""The one bootstrap that wires dependencies: database, repository, embedders, router, chat model.

Heavy objects are created lazily (the deployed graph is imported by the server before any request) and
cached per session *generation*, so a re-index is picked up by the next question.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from graph.settings import Settings, get_settings
from stores.database import Database


@dataclass(frozen=True)
class SessionBundle:
    """Everything a turn needs for one session."""

    session: Any  # stores.sessions.RagSession
    adapter: Any  # nodes.context_retrieval.adapter.RetrievalAdapter
    router: Any  # nodes.intent_routing.IntentRouter
    symbols: frozenset[str]


@dataclass
class GraphDeps:
    """Injected into `build_graph`: tests pass fakes (an embedder, a chat model, a database)."""

    settings: Settings = field(default_factory=get_settings)
    db: Database | None = None
    chat_model: Any = None
    """A LangChain chat model (GigaChat in production); None → deterministic router and extractive answers."""
    embedder: Any = None
    """Force one embedder (tests); by default each session's recorded embedder is built."""
    _bundles: dict[tuple[str, int], SessionBundle] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> GraphDeps:
        """Production wiring: GigaChat when credentials are set, offline otherwise."""
        settings = settings or get_settings()
        return cls(settings=settings, chat_model=make_chat_model(settings))

    def database(self) -> Database:
        with self._lock:
            if self.db is None:
                from stores.schema import ensure_tables

                self.db = Database.from_settings(self.settings)
                with self.db.connection() as conn:
                    ensure_tables(conn)
            return self.db

    def bundle(self, session_name: str) -> SessionBundle:
        """The session's adapter, router and symbols (rebuilt when the session's index changes)."""
        from nodes.context_retrieval.adapter import RetrievalAdapter
        from nodes.intent_routing import IntentRouter
        from stores.alias_index import load_alias_index
        from stores.embedders import make_embedder
        from stores.repository import RagRepository
        from stores.sessions import get_session

        db = self.database()
        with db.connection() as conn:
            session = get_session(conn, session_name)
        key = (session.rag_session_id, session.active_generation)
        cached = self._bundles.get(key)
        if cached is not None:
            return cached
        embedder = self.embedder or make_embedder(session.embedder, self.settings)
        session.check_embedder(embedder.name, embedder.dim)
        repository = RagRepository(db)
        router = IntentRouter(llm=self.chat_model, aliases=load_alias_index(repository, session),
                              timeout_s=self.settings.gigachat.router_timeout)
        # Sessions indexed before schema v5 have no stored stoplist yet: compute it once here.
        stop = session.stop_lexemes if session.stop_lexemes is not None else repository.frequent_lexemes(session)
        adapter = RetrievalAdapter(repository, embedder, stop_lexemes=stop)
        bundle = SessionBundle(session=session, adapter=adapter, router=router,
                               symbols=frozenset(repository.symbol_names(session)))
        with self._lock:
            self._bundles = {k: v for k, v in self._bundles.items() if k[0] != session.rag_session_id}
            self._bundles[key] = bundle
        return bundle


def make_chat_model(settings: Settings) -> Any:
    """GigaChat when `GIGACHAT_CREDENTIALS` and `GIGACHAT_MODEL` are set, else None (offline)."""
    gc = settings.gigachat
    if not gc.enabled:
        return None
    if not gc.model:
        from stores.errors import LotsmanError

        raise LotsmanError("GIGACHAT_CREDENTIALS is set but GIGACHAT_MODEL is not: set the chat model name")
    from langchain_gigachat import GigaChat

    assert gc.credentials is not None
    # streaming=True: without it .stream() and stream_mode="messages" return one chunk (SPEC §2.2).
    return GigaChat(
        credentials=gc.credentials.get_secret_value(), scope=gc.scope, model=gc.model, base_url=gc.base_url,
        auth_url=gc.auth_url, verify_ssl_certs=gc.verify_ssl_certs, timeout=gc.timeout,
        max_retries=gc.max_retries, streaming=True,
    )
