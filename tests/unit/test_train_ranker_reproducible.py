"""`make ranker` reproduces the shipped model byte for byte (issue 41, item 5): training from a feature file
is deterministic, and this test retrains a small committed feature file to a committed model.

The fixture is 48 dev questions (12 per pinned corpus, their first 30 candidates) cut from a feature file of
`python -m evals.train_ranker --collect`. When the trainer changes on purpose (PARAMS, ROUNDS, the prior
rule, the model's layout), write the expected model again and say why in the commit:

    python -c "from tests.unit.test_train_ranker_reproducible import write_expected; write_expected()"
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evals import train_ranker
from evals.train_ranker import Query, build_model, features_text, model_text, parse_features, read_features

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FEATURES_FILE = FIXTURES / "ranker-features-small.jsonl.gz"
EXPECTED = FIXTURES / "ranker-model-small.json"


def retrain(header: dict[str, Any], queries: list[Query], sha: str) -> dict[str, Any]:
    lgb = pytest.importorskip("lightgbm")
    return build_model(queries, lgb, seeds=(7,), features=header["features"], embedder=header["embedder"],
                       features_sha256=sha)


def write_expected() -> None:
    header, queries, sha = read_features(FEATURES_FILE)
    EXPECTED.write_text(model_text(retrain(header, queries, sha)), encoding="utf-8")


def test_the_small_feature_file_retrains_to_the_committed_model_byte_for_byte() -> None:
    header, queries, sha = read_features(FEATURES_FILE)
    got = model_text(retrain(header, queries, sha))
    assert got.encode("utf-8") == EXPECTED.read_bytes()
    data = json.loads(got)
    assert data["meta"]["features_sha256"] == sha and data["prior_weight"] in train_ranker.PRIOR_WEIGHTS
    assert "prior_weight_pinned" not in data["meta"]  # chosen by leave-one-corpus-out


def test_the_order_of_the_file_s_lines_does_not_matter() -> None:
    header, queries, sha = read_features(FEATURES_FILE)
    assert model_text(retrain(header, list(reversed(queries)), sha)).encode("utf-8") == EXPECTED.read_bytes()


def test_a_changed_feature_row_changes_the_model() -> None:
    header, queries, _ = read_features(FEATURES_FILE)
    changed = [Query(q.corpus, q.case_id, q.x.copy(), q.y.copy(), q.paths, q.gold) for q in queries]
    for q in changed[:12]:  # the graded rows of a corpus's questions move to their last candidate
        q.x[[0, -1]] = q.x[[-1, 0]]
    text = features_text(changed, {k: v for k, v in header.items() if k not in ("format", "queries")})
    header2, queries2 = parse_features(text, "changed")
    import hashlib

    data = retrain(header2, queries2, hashlib.sha256(text.encode("utf-8")).hexdigest())
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    assert data["trees"] != expected["trees"]
    assert model_text(data) != EXPECTED.read_text(encoding="utf-8")


def test_a_feature_file_is_the_same_bytes_every_time_and_reads_back_exactly(tmp_path: Path) -> None:
    header, queries, sha = read_features(FEATURES_FILE)
    header = {k: v for k, v in header.items() if k not in ("format", "queries")}
    a, b = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    assert train_ranker.write_features(queries, a, header) == sha
    assert train_ranker.write_features(list(reversed(queries)), b, header) == sha
    assert a.read_bytes() == b.read_bytes() == FEATURES_FILE.read_bytes()  # no date or name in the gzip
    _, back, sha_back = read_features(a)
    assert sha_back == sha and all(np.array_equal(p.x, q.x) and np.array_equal(p.y, q.y)
                                   for p, q in zip(back, queries, strict=True))


@pytest.mark.parametrize(("case", "damage"), [
    ("not a feature file", lambda t: '{"format": 1}\n'),
    ("cut short", lambda t: "".join(t.splitlines(keepends=True)[:-1])),
    ("a damaged line", lambda t: t[: len(t) // 2]),
])
def test_a_bad_feature_file_is_one_error_line(case: str, damage: Any, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("lightgbm")
    text = gzip.decompress(FEATURES_FILE.read_bytes()).decode("utf-8")
    path = tmp_path / "f.jsonl"
    path.write_text(damage(text), encoding="utf-8")
    assert train_ranker.main(["--features", str(path), "--out", str(tmp_path / "m.json")]) != 0, case
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and str(path) in err
    assert not (tmp_path / "m.json").exists()


def test_the_shipped_model_text_is_stable_json() -> None:
    data = {"b": 1.0, "a": [0.1, 1e-05, 3.0]}
    assert model_text(data) == '{"a":[0.1,1e-05,3.0],"b":1.0}\n'


def test_a_dev_split_edited_while_its_features_are_collected_is_refused(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from evals.suites import Suite

    dev = tmp_path / "dev.jsonl"
    dev.write_text('{"id": "d-1"}\n', encoding="utf-8")
    monkeypatch.setattr(train_ranker, "pinned_suites", lambda: [Suite("c", None, str(dev), None)])
    _, queries, _ = read_features(FEATURES_FILE)

    def collect(*_: Any) -> list[Query]:
        dev.write_text('{"id": "d-1"}\n{"id": "d-2"}\n', encoding="utf-8")  # an editor saves meanwhile
        return queries

    monkeypatch.setattr(train_ranker, "collect_queries", collect)
    out = tmp_path / "f.jsonl.gz"
    assert train_ranker.main(["--collect", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "error: the dev split of c changed while its features were collected; run again"
    assert not out.exists()
