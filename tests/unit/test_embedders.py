"""Bulk embedding with a thread limit: what index jobs rely on to keep the embedder at full speed."""

from __future__ import annotations

import numpy as np
import threadpoolctl

from stores.embedders import FakeEmbeddings, UseEmbeddings
from stores.indexing import service


def _blas_threads() -> int:
    return max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")


def test_use_embed_batch_runs_on_the_given_threads_and_gives_the_same_vectors():
    use = UseEmbeddings(threads=2)
    texts = ["Как вернуть файл пользователю?", "def read_config(path): ..."]
    full = np.asarray(use.embed_documents(texts))
    backend = use._model._model
    seen: list[int] = []
    encode = backend._encode
    backend._encode = lambda batch: (seen.append(_blas_threads()), encode(batch))[1]
    try:
        limited = np.asarray(use.embed_batch(texts, threads=1))
        unlimited = np.asarray(use.embed_batch(texts))
    finally:
        backend._encode = encode
    assert seen[0] == 1  # the limit reached BLAS
    assert seen[1] == min(2, seen[1]) and backend.threads == 2  # and was given back
    np.testing.assert_allclose(limited, full, atol=1e-5)
    np.testing.assert_allclose(unlimited, full, atol=1e-5)


def test_models_without_a_thread_setting_embed_as_usual():
    fake = FakeEmbeddings()
    assert fake.embed_batch(["a b"], threads=1) == fake.embed_documents(["a b"])


def test_the_index_job_embeds_with_its_own_thread_count():
    calls: list[int | None] = []

    class Recording(FakeEmbeddings):
        def embed_batch(self, texts, *, threads=None):
            calls.append(threads)
            return super().embed_batch(texts, threads=threads)

    emb = service._Embedder(Recording(), batch_size=2, progress=None)
    item = service._Prepared(source=None, key="k", records=[])  # type: ignore[arg-type]
    emb.add(item, ["one", "two", "three"])
    emb.close()
    assert item.resolve().shape == (3, 64)
    assert calls == [service.INDEX_EMBED_THREADS] * 2
