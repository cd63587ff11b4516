"""Bulk embedding on single-threaded workers: what index jobs rely on to keep the embedder at full speed."""

from __future__ import annotations

import numpy as np
import threadpoolctl

from stores.embedders import FakeEmbeddings, UseEmbeddings
from stores.indexing import service


def _blas_threads() -> int:
    return max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")


TEXTS = ["Как вернуть файл пользователю?", "def read_config(path): ...", "retry the request", "ёлка", "x"]


def test_use_embed_batch_splits_over_single_threaded_workers_and_keeps_the_order():
    use = UseEmbeddings(threads=2)
    whole = np.asarray(use.embed_documents(TEXTS))
    default = _blas_threads()
    seen: list[tuple[int, int]] = []
    clones = use._single_thread_clones(2)
    for backend, _ in clones:
        encode = backend._encode
        backend._encode = lambda batch, encode=encode: (seen.append((len(batch), _blas_threads())), encode(batch))[1]
    split = np.asarray(use.embed_batch(TEXTS, workers=2))
    np.testing.assert_allclose(split, whole, atol=1e-5)  # same vectors, same order
    assert sorted(n for n, _ in seen) == [2, 3]  # two slices, one per worker
    assert {t for _, t in seen} == {1}  # each on one BLAS thread
    assert _blas_threads() == default  # the process-wide limit was given back
    assert use._model._model.threads == 2  # the shared model keeps its own setting


def test_one_worker_or_one_text_is_the_plain_call():
    use = UseEmbeddings(threads=2)
    np.testing.assert_allclose(np.asarray(use.embed_batch(TEXTS[:1], workers=2)),
                               np.asarray(use.embed_documents(TEXTS[:1])), atol=1e-6)
    assert use.embed_batch([], workers=2) == []


def test_models_without_workers_embed_as_usual():
    fake = FakeEmbeddings()
    assert fake.embed_batch(["a b"], workers=2) == fake.embed_documents(["a b"])


def test_the_index_job_embeds_on_its_workers():
    calls: list[int] = []

    class Recording(FakeEmbeddings):
        def embed_batch(self, texts, *, workers=1):
            calls.append(workers)
            return super().embed_batch(texts, workers=workers)

    emb = service._Embedder(Recording(), batch_size=2, progress=None)
    item = service._Prepared(source=None, key="k", records=[])  # type: ignore[arg-type]
    emb.add(item, ["one", "two", "three"])
    emb.close()
    assert item.resolve().shape == (3, 64)
    assert calls == [service.INDEX_EMBED_WORKERS] * 2

