"""The dataset checker's two rules across splits (issue 41, item 5): no dev case twins a held-out case, and
one gold-labelling rule (every indexable file that states all of a case's key facts is gold) for both."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from evals.suites import REPO_ROOT, Suite

sys.path.insert(0, str(REPO_ROOT / "evals" / "datasets"))
import check_dataset  # noqa: E402


def case(cid: str, gold: list[str], facts: list[str], question: str = "How is it set?",
         tags: list[str] | None = None) -> dict[str, Any]:
    return {"id": cid, "question": question, "history": [], "expected_route": "DOC_EXPLAIN/SUMMARY",
            "gold_paths": gold, "key_facts": facts, "answerable": True,
            "tags": tags or ["en", *(["multi_gold"] if len(gold) > 1 else [])]}


def write(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "docs").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / ".hidden").mkdir()
    (root / "docs/cors.md").write_text("Use `allow_origins=[\"*\"]` and max_age 600.\n", encoding="utf-8")
    (root / "docs/other.md").write_text("The port is 8080; status 422 on errors.\n", encoding="utf-8")
    (root / "pkg/cors.py").write_text("ALLOW = 'allow_origins=[\"*\"]'  # max_age 600\n", encoding="utf-8")
    (root / "pkg/half.py").write_text("max_age 600 only\n", encoding="utf-8")
    (root / "LICENSE.txt").write_text('allow_origins=["*"] max_age 600\n', encoding="utf-8")  # not indexed
    (root / ".hidden/x.md").write_text('allow_origins=["*"] max_age 600\n', encoding="utf-8")  # not indexed
    return root


# ---- twins ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("a", "b", "same"), [
    ("status_code=422", "Status_Code 422", True),        # folded alike
    ("--forwarded-allow-ips", "с опцией --forwarded-allow-ips", True),  # one holds the other
    ("422", "4220", False),                              # whole words only
    ("max_age", "max_age_seconds", False),
    ("'*'", "*", False),                                 # nothing left after folding
])
def test_two_facts_are_the_same_after_folding_or_when_one_holds_the_other(a: str, b: str, same: bool) -> None:
    assert check_dataset.same_fact(a, b) is same and check_dataset.same_fact(b, a) is same


def test_a_twin_shares_a_gold_file_and_a_key_fact() -> None:
    held = [case("h-1", ["docs/cors.md"], ["max_age 600"])]
    dev = [case("d-1", ["docs/cors.md", "pkg/cors.py"], ["600"]),       # a twin: gold and fact shared
           case("d-2", ["docs/cors.md"], ["allow_origins"]),           # same file, another fact
           case("d-3", ["docs/other.md"], ["max_age 600"])]            # same fact, another file
    assert check_dataset.twins(dev, held) == [("d-1", "h-1", "docs/cors.md", "600", "max_age 600")]


def test_the_normal_check_fails_on_a_twin_from_either_side(corpus: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    both = ["docs/cors.md", "pkg/cors.py"]
    dev = write(tmp_path / "c.jsonl", [case("d-1", both, ['allow_origins=["*"]', "max_age 600"]),
                                       case("d-2", ["docs/other.md"], ["8080"], "Which port?")])
    held = write(tmp_path / "c_holdout.jsonl", [case("h-1", both, ["600"], "What is the cache time?")])
    assert check_dataset.main([str(dev), "--corpus", str(corpus), "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "PROBLEM d-1: twins held-out h-1 (c_holdout.jsonl: gold docs/cors.md, key fact 'max_age 600' ~ '600'): "
        "remove it from dev"]
    assert check_dataset.main([str(held), "--corpus", str(corpus), "--quiet"]) == 1
    assert "PROBLEM h-1: twinned by dev d-1" in capsys.readouterr().out
    write(dev, [case("d-2", ["docs/other.md"], ["8080"], "Which port?")])
    assert check_dataset.main([str(dev), "--corpus", str(corpus), "--quiet"]) == 0


def test_an_id_in_both_splits_is_a_problem(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dev = write(tmp_path / "c.jsonl", [case("x-1", ["docs/other.md"], ["8080"], "Which port?")])
    write(tmp_path / "c_holdout.jsonl", [case("x-1", ["docs/other.md"], ["status 422"], "What status?")])
    assert check_dataset.main([str(dev), "--corpus", str(corpus), "--quiet"]) == 1
    assert capsys.readouterr().out.strip() == "PROBLEM x-1: id used in both c.jsonl and c_holdout.jsonl"


def test_the_twins_command_lists_every_registered_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    both = ["docs/cors.md", "pkg/cors.py"]
    write(tmp_path / "a.jsonl", [case("a-1", both, ["max_age 600"], "How long is it cached?"),
                                 case("a-2", ["docs/other.md"], ["8080"], "Which port?")])
    write(tmp_path / "a_holdout.jsonl", [case("ah-1", ["pkg/cors.py"], ["600"], "What is max_age?")])
    write(tmp_path / "b.jsonl", [case("b-1", ["docs/other.md"], ["8080"], "Which port?")])
    write(tmp_path / "b_holdout.jsonl", [case("bh-1", ["docs/other.md"], ["status 422"], "Which status?")])
    monkeypatch.setattr(check_dataset, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(check_dataset, "SUITES", {
        "a": Suite("a", None, "a.jsonl", "a_holdout.jsonl"), "b": Suite("b", None, "b.jsonl", "b_holdout.jsonl"),
        "self": Suite("self", None, "self.jsonl", None)})
    assert check_dataset.main(["--twins"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "TWIN a: dev a-1 ~ held-out ah-1: gold pkg/cors.py; key fact 'max_age 600' ~ '600'",
        "a: dev 2 cases, held-out 1 cases: 1 twin pairs (1 dev cases to remove)",
        "b: dev 1 cases, held-out 1 cases: 0 twin pairs",
        "1 twin pair(s)"]
    assert check_dataset.main(["--twins", "--corpus-set", "b"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "OK: no dev case twins a held-out case"


# ---- the gold rule -------------------------------------------------------------------------------------------

def test_every_indexable_file_stating_all_key_facts_must_be_gold(corpus: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # docs/cors.md and pkg/cors.py state both facts; pkg/half.py one; LICENSE.txt and a hidden file are not indexed
    dataset = write(tmp_path / "g.jsonl", [case("g-1", ["docs/cors.md"], ['allow_origins=["*"]', "max_age 600"])])
    assert check_dataset.main([str(dataset), "--corpus", str(corpus), "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "PROBLEM g-1: gold rule: not gold but states every key fact: pkg/cors.py (--fix-gold adds them)"]


def test_fix_gold_adds_the_files_original_first_and_keeps_other_lines(corpus: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    untouched = '{"id": "g-2", "question": "Which port?",  "history": [], "expected_route": "DOC_EXPLAIN/SUMMARY", ' \
                '"gold_paths": ["docs/other.md"], "key_facts": ["8080"], "answerable": true, "tags": ["en"]}\n'
    dataset = write(tmp_path / "g.jsonl", [case("g-1", ["pkg/cors.py"], ['allow_origins=["*"]', "max_age 600"])])
    dataset.write_text(dataset.read_text(encoding="utf-8") + untouched, encoding="utf-8")
    assert check_dataset.main(["--fix-gold", str(dataset), "--corpus", str(corpus)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "FIXED g-1: + docs/cors.md" and "1 case(s) widened, 0 refused" in out[-1]
    first, second = dataset.read_text(encoding="utf-8").splitlines(keepends=True)
    assert json.loads(first)["gold_paths"] == ["pkg/cors.py", "docs/cors.md"]
    assert json.loads(first)["tags"] == ["en", "multi_gold"]  # 2+ gold files are tagged as the checker asks
    assert second == untouched  # byte for byte, its odd spacing too
    assert check_dataset.main([str(dataset), "--corpus", str(corpus), "--quiet"]) == 0


def test_fix_gold_refuses_a_case_whose_facts_are_too_generic(corpus: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(6):
        (corpus / f"docs/p{i}.md").write_text("The default is 30 seconds.\n", encoding="utf-8")
    dataset = write(tmp_path / "g.jsonl", [case("g-1", ["docs/p0.md"], ["30 seconds"])])
    before = dataset.read_bytes()
    assert check_dataset.main(["--fix-gold", str(dataset), "--corpus", str(corpus)]) == 1
    out = capsys.readouterr().out
    assert "REFUSED g-1: 6 files state every key fact ['30 seconds']" in out and "make the key facts specific" in out
    assert dataset.read_bytes() == before
    assert check_dataset.main([str(dataset), "--corpus", str(corpus), "--quiet"]) == 1
    assert "gold would grow to 6 > 5" in capsys.readouterr().out


def test_a_gold_file_the_indexer_does_not_take_is_a_problem(corpus: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write(tmp_path / "g.jsonl", [case("g-1", ["LICENSE.txt", "docs/cors.md", "pkg/cors.py"],
                                                ['allow_origins=["*"]'])])
    assert check_dataset.main([str(dataset), "--corpus", str(corpus), "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "PROBLEM g-1: gold path 'LICENSE.txt' is not a file the indexer takes (.md/.py, not hidden)"]


def test_the_fast_path_finds_what_the_matcher_finds(corpus: Path) -> None:
    from evals.facts import fact_in_text

    (corpus / "docs/q.md").write_text("> Use `--all`\n> and `Content-Type`: `application/json`.\n"
                                      "Зависимости: 30 секунд\n", encoding="utf-8")
    view = check_dataset.Corpus(corpus)
    for facts in (["--all"], ["--all-tags"], ["Content-Type: application/json"], ["зависимости"], ["30 секунд"],
                  ["allow_origins"], ['allow_origins=["*"]', "max_age 600"], ["Use --all and"], ["'*'"]):
        slow = [rel for rel, text in view.indexable().items() if all(fact_in_text(f, text) for f in facts)]
        assert view.stating(facts) == slow, facts


def test_an_unanswerable_case_may_say_which_kind_it_is(corpus: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    def unanswerable(cid: str, tags: list[str]) -> dict[str, Any]:
        return {**case(cid, [], [], f"How do I use Kafka {cid}?"), "answerable": False,
                "tags": ["en", "unanswerable", *tags]}

    dataset = write(tmp_path / "u.jsonl", [unanswerable("u-1", ["absent_topic"]), unanswerable("u-2", ["near_miss"])])
    (tmp_path / "u.absent.json").write_text('{"u-1": ["kafka"], "u-2": ["kafka consumer"]}', encoding="utf-8")
    assert check_dataset.main([str(dataset), "--corpus", str(corpus), "--quiet"]) == 0
    write(dataset, [unanswerable("u-1", ["absent_topic", "near_miss"]),
                    {**case("u-2", ["docs/other.md"], ["8080"], "Which port?"), "tags": ["en", "near_miss"]}])
    assert check_dataset.main([str(dataset), "--corpus", str(corpus), "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "PROBLEM u-1: an unanswerable case is either an absent topic or a near miss, not both",
        "PROBLEM u-2: answerable case has absent terms",
        "PROBLEM u-2: tag 'near_miss' belongs to unanswerable cases"]


# ---- the same question in both splits, and the checker's size -----------------------------------------------

def test_a_question_in_both_splits_under_another_id_is_a_problem(corpus: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    dev = write(tmp_path / "c.jsonl", [case("d-1", ["docs/other.md"], ["8080"], "Which port is the default?")])
    write(tmp_path / "c_holdout.jsonl", [case("h-1", ["docs/other.md"], ["status 422"], "which PORT is the default")])
    assert check_dataset.main([str(dev), "--corpus", str(corpus), "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "PROBLEM question 'which port is the default' asked in both c.jsonl and c_holdout.jsonl"]
    monkeypatch.setattr(check_dataset, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(check_dataset, "SUITES", {"c": Suite("c", None, "c.jsonl", "c_holdout.jsonl")})
    assert check_dataset.main(["--twins"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "SHARED c: question 'which port is the default' in both splits",
        "c: dev 1 cases, held-out 1 cases: 0 twin pairs, 1 ids or questions in both splits",
        "0 twin pair(s), 1 id(s) or question(s) in both splits"]


def test_no_function_of_the_checker_passes_80_lines() -> None:
    import ast

    from tests.unit.test_architecture import MAX_FUNCTION_LINES

    tree = ast.parse(Path(check_dataset.__file__).read_text(encoding="utf-8"))
    long = {f.name: f.end_lineno - f.lineno + 1 for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef) and f.end_lineno and f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES}
    assert not long, long
