"""The eval command end to end: `python -m evals DATASET --corpus PATH`, and several corpora in one run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from evals.runner import run_jobs
from evals.suites import EvalJob, Suite
from graph.deps import GraphDeps
from graph.settings import Settings
from tests.e2e.conftest import ROOT

SMALL_CASES = [
    {"id": "s1", "question": "Как включить CORS?", "history": [], "expected_route": "DOC_EXPLAIN/SUMMARY",
     "gold_paths": ["docs/cors.md"], "key_facts": ["CORSMiddleware"], "answerable": True, "tags": ["ru"]},
    {"id": "s2", "question": "Как настроить Kafka?", "history": [], "expected_route": "DOC_EXPLAIN/SUMMARY",
     "gold_paths": [], "key_facts": [], "answerable": False, "tags": ["ru", "unanswerable"]},
]
OTHER_CASES = [
    {"id": "o1", "question": "Где настраиваются кросс-доменные запросы?", "history": [],
     "expected_route": "DOC_EXPLAIN/FIND_FILES", "gold_paths": ["guides/cross-origin.md"],
     "key_facts": ["cors_origins"], "answerable": True, "tags": ["ru", "find_files"]},
]
ROW_FIELDS = {"id", "route", "evidence_paths", "evidence_rows", "gate", "abstained", "recall_at_5",
              "key_fact_coverage", "lead_citation_in_gold", "lead_citation_in_gold_answered", "passage_precision",
              "passage_precision_answered", "answer_mode", "wall_ms"}


def write_jsonl(path: Path, cases: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in cases), encoding="utf-8")
    return path


def test_python_m_evals_single_dataset_form(offline_env: Callable[..., dict[str, str]], small_corpus: Path,
                                            tmp_path: Path) -> None:
    dataset = write_jsonl(tmp_path / "small.jsonl", SMALL_CASES)
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "evals", str(dataset), "--corpus", str(small_corpus),
                           "--embedder", "fake", "--out", str(out)],
                          capture_output=True, text=True, env=offline_env(), cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "small" in proc.stdout and "macro" in proc.stdout and "legacy" not in proc.stdout
    assert "… of answered cases" in proc.stdout and "case wall" in proc.stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    corpus = report["corpora"]["small"]
    assert corpus["session"] == f"eval-{small_corpus.name}-fake" and corpus["cases"] == 2
    assert set(corpus["results"][0]) >= ROW_FIELDS and "key_fact_coverage_legacy" not in corpus["results"][0]
    assert corpus["citations_removed_share"] is None and corpus["llm_fallbacks"] is None  # offline: n/a
    assert {r["answer_mode"] for r in corpus["results"]} <= {"extractive", "not_found", "find_files"}
    assert report["macro"]["cases"] == 2


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("", "small.jsonl: no cases (an empty dataset measures nothing)"),
        (json.dumps({**SMALL_CASES[0], "key_facts": "CORSMiddleware"}),
         "small.jsonl:1: field 'key_facts' must be a list of strings, got str \"CORSMiddleware\""),
        ("\n" + json.dumps({**SMALL_CASES[0], "history": [["user", "hi"]]}),
         "small.jsonl:2: field 'history' must be a list of {role: user|assistant, content: string}, "
         "got list [[\"user\", \"hi\"]]"),
    ],
    ids=["empty", "facts-not-a-list", "history-not-turns"],
)
def test_a_bad_dataset_is_one_line_naming_the_line_and_field(offline_env: Callable[..., dict[str, str]],
                                                             small_corpus: Path, tmp_path: Path, content: str,
                                                             error: str) -> None:
    dataset = tmp_path / "small.jsonl"
    dataset.write_text(content, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "evals", str(dataset), "--corpus", str(small_corpus),
                           "--embedder", "fake"], capture_output=True, text=True, env=offline_env(), cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and line.endswith(error), line


def test_python_m_evals_errors_are_one_line(offline_env: Callable[..., dict[str, str]]) -> None:
    proc = subprocess.run([sys.executable, "-m", "evals", "--corpus-set", "nope"], capture_output=True, text=True,
                          env=offline_env(), cwd=ROOT, timeout=120)
    assert proc.returncode == 1 and proc.stderr.strip().startswith("error: unknown corpus nope")
    assert "Traceback" not in proc.stderr


def test_several_corpora_each_in_its_own_session(db, small_corpus: Path, other_corpus: Path,
                                                 tmp_path: Path) -> None:
    suites = {n: Suite(n, None, f"{n}.jsonl", None) for n in ("e2e-small", "e2e-other")}
    jobs = [EvalJob("small", write_jsonl(tmp_path / "s.jsonl", SMALL_CASES), small_corpus, suites["e2e-small"]),
            EvalJob("other", write_jsonl(tmp_path / "o.jsonl", OTHER_CASES), other_corpus, suites["e2e-other"])]
    deps = GraphDeps(settings=Settings(), db=db)
    report = run_jobs(jobs, settings=Settings(), cache_dir=tmp_path, embedder="fake", deps=deps)

    small, other = report["corpora"]["small"], report["corpora"]["other"]
    assert (small["session"], other["session"]) == ("eval-e2e-small-fake", "eval-e2e-other-fake")
    other_files = {p for r in other["results"] for p in r["evidence_paths"]}
    assert other_files <= {"guides/cross-origin.md"}, "a corpus's cases see only its own session"
    assert small["results"][0]["recall_at_5"] == 1.0
    assert report["macro"]["cases"] == 3 and report["macro"]["answerable"] == 2
    assert report["macro"]["recall_at_5"] == (small["recall_at_5"] + other["recall_at_5"]) / 2
    assert small["index_kind"] == "snapshot"
    again = run_jobs(jobs[:1], settings=Settings(), cache_dir=tmp_path, embedder="fake", deps=deps)
    assert again["corpora"]["small"]["index_kind"] == "changes", "a second run reuses the session's index"


def test_eval_with_llm_answers_through_gigachat(offline_env: Callable[..., dict[str, str]], small_corpus: Path,
                                                tmp_path: Path) -> None:
    """`--llm` measures the GigaChat path (here the fake server speaking its protocol); the report says so."""
    from tests.e2e.test_gigachat_path import Script
    from tests.fakes.gigachat_server import FakeGigaChatServer

    dataset = write_jsonl(tmp_path / "small.jsonl", SMALL_CASES[:1])
    out = tmp_path / "report.json"
    with FakeGigaChatServer() as server:
        server.chat_handler = script = Script()
        proc = subprocess.run([sys.executable, "-m", "evals", str(dataset), "--corpus", str(small_corpus),
                               "--embedder", "fake", "--llm", "--out", str(out)],
                              capture_output=True, text=True, env=offline_env(**server.env()), cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "answers=llm" in proc.stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["answers"] == "llm" and report["corpora"]["small"]["answers"] == "llm"
    assert {"route", "analysis", "answer"} <= set(script.kinds), "router, analysis and answer went to GigaChat"
    [case] = report["corpora"]["small"]["results"]
    assert case["answer"].startswith("Чтобы настроить CORS") and case["key_fact_coverage"] == 1.0
    assert case["answer_mode"] == "llm" and report["corpora"]["small"]["llm_fallbacks"] == 0


def test_eval_with_llm_counts_an_extractive_fallback_and_its_reason(
        offline_env: Callable[..., dict[str, str]], small_corpus: Path, tmp_path: Path) -> None:
    """The model answers, but only with a citation outside the evidence: the verifier removes it, the
    extractive answer is used, and the report counts a fallback with its reason instead of a clean 0."""
    from tests.e2e.test_gigachat_path import Script
    from tests.fakes.gigachat_server import FakeGigaChatServer, Text

    dataset = write_jsonl(tmp_path / "small.jsonl", SMALL_CASES[:1])
    out = tmp_path / "report.json"
    with FakeGigaChatServer() as server:
        server.chat_handler = Script(answer=Text("Добавьте CORSMiddleware [docs/secret.md:1-9]."))
        proc = subprocess.run([sys.executable, "-m", "evals", str(dataset), "--corpus", str(small_corpus),
                               "--embedder", "fake", "--llm", "--out", str(out)],
                              capture_output=True, text=True, env=offline_env(**server.env()), cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    small = json.loads(out.read_text(encoding="utf-8"))["corpora"]["small"]
    [case] = small["results"]
    assert case["answer_mode"] == "extractive fallback"
    assert case["answer_mode_reason"] == "model reply unusable (no verified citation or empty text)"
    assert small["llm_fallbacks"] == 1 and small["citations_removed_share"] is None
    assert "fallback small: 1 × model reply unusable" in proc.stdout


def test_eval_with_llm_but_no_credentials_is_one_line(offline_env: Callable[..., dict[str, str]], small_corpus: Path,
                                                      tmp_path: Path) -> None:
    dataset = write_jsonl(tmp_path / "small.jsonl", SMALL_CASES)
    proc = subprocess.run([sys.executable, "-m", "evals", str(dataset), "--corpus", str(small_corpus),
                           "--embedder", "fake", "--llm"], capture_output=True, text=True, env=offline_env(),
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: --llm needs a chat model: set GIGACHAT_CREDENTIALS and GIGACHAT_MODEL, or LOTSMAN_LLM_PROVIDER=openai "
        "with OPENAI_BASE_URL and LOTSMAN_LLM_MODEL (without --llm the eval runs offline)")
