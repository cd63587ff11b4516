"""The ranker's trainer (issue 29): cached candidates retrain to the same features, and a model that loses
to RRF on a held-out corpus is not written."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals import train_ranker
from evals.suites import Suite
from evals.train_ranker import (
    Candidates,
    beats_rrf_everywhere,
    cache_header,
    featurize,
    load_candidates,
    save_candidates,
)
from nodes.context_retrieval.rank_features import FEATURES, RankQuery
from nodes.evidence import EvidenceRow

ROWS = [
    EvidenceRow(id="1", path="docs/cors.md", layer="D0_DOC_CHUNKS", title="CORS > Пример",
                content="app.add_middleware(CORSMiddleware)", lanes={"semantic": 1, "lexical": 3},
                scores={"lexical_score": 0.4, "distance": 0.3}, fused_score=0.09, span_start=3, span_end=9),
    EvidenceRow(id="2", path="src/app.py", layer="C1_SYMBOL_CATALOG", title="app.make", content="def make(): ...",
                lanes={"code": 2}, fused_score=0.05, metadata={"kind": "function"}),
]


HEADER = {"format": 1, "corpora": {"c": None}, "datasets": {"c": "abc"}, "embedder": "use",
          "features": list(FEATURES)}


def candidates(n: int = 1) -> list[Candidates]:
    return [Candidates("c", f"c-{i}", ROWS, RankQuery("Как включить CORSMiddleware?", ["cors"], code_plan=True),
                       {"1": 0.3, "2": 0.5}, [2, 0], {"docs/cors.md"}) for i in range(n)]


def test_cached_candidates_give_the_features_they_were_collected_with(tmp_path: Path) -> None:
    [got] = candidates()
    save_candidates([got], tmp_path / "cands.jsonl", HEADER)
    [back] = load_candidates(tmp_path / "cands.jsonl", HEADER)
    assert back.rows == got.rows and back.query == got.query and back.gold == got.gold
    a, b = featurize(got), featurize(back)
    assert (a.x == b.x).all() and list(a.y) == list(b.y) and a.paths == b.paths


def _table(*gains: float, macro_gain: float | None = None) -> dict[str, dict[str, float]]:
    table = {f"c{i}": {"rrf_mrr": 0.6, "learned_mrr": 0.6 + g} for i, g in enumerate(gains)}
    m = sum(gains) / len(gains) if macro_gain is None else macro_gain
    table["macro"] = {"rrf_mrr": 0.6, "learned_mrr": 0.6 + m}
    return table


@pytest.mark.parametrize(("table", "written"), [
    (_table(0.02, 0.01, 0.03), True),
    (_table(0.05, 0.0, 0.01), True),          # a corpus that stays equal does not block
    (_table(0.05, -0.001, 0.04), False),      # any corpus that loses does
    (_table(0.0, 0.0, 0.0), False),           # nothing gained: keep the order we have
])
def test_a_model_is_written_only_when_no_held_out_corpus_loses(table: dict[str, dict[str, float]],
                                                                written: bool) -> None:
    assert beats_rrf_everywhere(table) is written


def test_every_label_has_a_gain() -> None:
    from evals.train_ranker import PARAMS

    assert len(PARAMS["label_gain"]) == 3  # 0 other, 1 a row of a gold file, 2 one holding a key fact


@pytest.mark.parametrize(("case", "changed", "says"), [
    ("another embedder", {"embedder": "e5"}, "embedder"),
    ("a dev split edited since", {"datasets": {"c": "def"}}, "datasets"),
    ("another set of corpora", {"corpora": {"c": None, "d": None}}, "corpora"),
])
def test_a_cache_of_other_settings_is_refused(case: str, changed: dict[str, object], says: str,
                                              tmp_path: Path) -> None:
    path = tmp_path / "cands.jsonl"
    save_candidates(candidates(), path, HEADER)
    with pytest.raises(train_ranker.LotsmanError) as err:
        load_candidates(path, HEADER | changed)
    assert says in str(err.value) and "delete" in str(err.value) and "--cache" in str(err.value), case


@pytest.mark.parametrize(("case", "content"), [
    ("a cache written before the header", '{"corpus": "c", "case_id": "c-1"}\n'),
    ("a write cut short mid-line", None),
    ("a write cut short between lines", "lines"),
    ("an empty file", ""),
])
def test_a_damaged_cache_is_refused(case: str, content: str | None, tmp_path: Path) -> None:
    path = tmp_path / "cands.jsonl"
    save_candidates(candidates(3), path, HEADER)
    text = path.read_text(encoding="utf-8")
    if content is None:
        path.write_text(text[: len(text) - 40], encoding="utf-8")
    elif content == "lines":
        path.write_text("".join(text.splitlines(keepends=True)[:-1]), encoding="utf-8")
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(train_ranker.LotsmanError) as err:
        load_candidates(path, HEADER)
    assert "delete" in str(err.value) and "--cache" in str(err.value), case


def test_an_interrupted_save_leaves_the_old_cache_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cands.jsonl"
    save_candidates(candidates(2), path, HEADER)
    before = path.read_bytes()

    def cut(*_: object, **__: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(train_ranker.json, "dumps", cut)
    with pytest.raises(KeyboardInterrupt):
        save_candidates(candidates(5), path, HEADER)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["cands.jsonl"]


def test_the_header_names_the_settings_a_cache_depends_on(tmp_path: Path) -> None:
    (tmp_path / "dev.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")
    suites = [Suite("c", None, "dev.jsonl", "holdout.jsonl")]
    header = cache_header(suites, "use", root=tmp_path)
    assert header["embedder"] == "use" and header["features"] == list(FEATURES) and list(header["corpora"]) == ["c"]
    (tmp_path / "dev.jsonl").write_text('{"id": "b"}\n', encoding="utf-8")
    assert cache_header(suites, "use", root=tmp_path)["datasets"] != header["datasets"]


def test_a_bad_cache_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("lightgbm")
    path = tmp_path / "cands.jsonl"
    path.write_text('{"corpus": "c"', encoding="utf-8")
    assert train_ranker.main(["--cache", str(path), "--dry-run"]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and str(path) in err


def test_a_feature_change_retrains_from_the_cache_and_says_so(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Features are read from the cached rows when loaded: retraining a feature change is what the cache is for."""
    path = tmp_path / "cands.jsonl"
    save_candidates(candidates(2), path, HEADER | {"features": [*FEATURES[:-1], "old_feature"]})
    assert len(load_candidates(path, HEADER)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("note: ") and f"added: {FEATURES[-1]}" in err and "removed: old_feature" in err


def _loco(atlas: float, click: float) -> dict[str, dict[str, float]]:
    return {"atlas-pm": {"cases": 79, "rrf_mrr": 0.6, "learned_mrr": atlas},
            "click": {"cases": 55, "rrf_mrr": 0.7, "learned_mrr": click}}


@pytest.mark.parametrize(("tables", "expected"), [
    ([_loco(0.68, 0.72)], _loco(0.68, 0.72)),                                   # one seed: as it is, no spread
    ([_loco(0.66, 0.72), _loco(0.70, 0.73)],
     {"atlas-pm": {"cases": 79, "rrf_mrr": 0.6, "learned_mrr": 0.68, "learned_mrr_spread": 0.04},
      "click": {"cases": 55, "rrf_mrr": 0.7, "learned_mrr": 0.725, "learned_mrr_spread": 0.01}}),
])
def test_seed_tables_are_averaged_with_their_spread(tables: list[dict[str, dict[str, float]]],
                                                    expected: dict[str, dict[str, float]]) -> None:
    got = train_ranker.mean_tables(tables)
    assert got.keys() == expected.keys()
    for corpus, row in expected.items():
        assert got[corpus] == pytest.approx(row)


@pytest.mark.parametrize(("text", "seeds"), [("7", (7,)), ("7,11,23", (7, 11, 23)), ("7,7,11", (7, 11))])
def test_seeds_are_read_from_a_comma_list(text: str, seeds: tuple[int, ...]) -> None:
    assert train_ranker.seed_list(text) == seeds


@pytest.mark.parametrize("text", ["", "7,,11", "seven"])
def test_a_bad_seed_list_is_a_usage_error(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("lightgbm")
    with pytest.raises(SystemExit) as exc:
        train_ranker.main(["--seeds", text, "--dry-run"])
    assert exc.value.code == 2
    assert "seeds are comma-separated integers" in capsys.readouterr().err


TABLES = {1.0: _table(0.02, 0.01), 2.0: _table(0.03, 0.02), 4.0: _table(0.03, 0.02, macro_gain=0.03)}


@pytest.mark.parametrize(("pinned", "chosen"), [
    (None, 4.0),  # the worst corpus gains as much at 2 and 4: the better macro decides
    (1.0, 1.0),   # --prior-weight wins over the rule, even for a weight the rule would not take
    (2.0, 2.0),
])
def test_the_prior_weight_is_chosen_by_the_worst_corpus_unless_pinned(pinned: float | None, chosen: float) -> None:
    assert train_ranker.choose_prior(TABLES, pinned) == chosen


@pytest.mark.parametrize("text", ["5", "two"])
def test_a_prior_weight_outside_the_tabled_ones_is_a_usage_error(text: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("lightgbm")
    with pytest.raises(SystemExit) as exc:
        train_ranker.main(["--prior-weight", text, "--dry-run"])
    assert exc.value.code == 2
    assert "--prior-weight" in capsys.readouterr().err
