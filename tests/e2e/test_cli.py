"""The real `lotsman` console script as subprocesses, on this test run's database (DATABASE_URL)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from graph.builder import STAGES
from tests.e2e.conftest import CORS_DISABLE_LINES, ROOT, SMALL_CORPUS, VENV_BIN, covers

LOTSMAN = VENV_BIN / "lotsman"
SESSION = f"cli-{uuid.uuid4().hex[:8]}"
Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def lotsman(offline_env: Callable[..., dict[str, str]]) -> Run:
    def run(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(LOTSMAN), *args], input=stdin, capture_output=True, text=True,
                              env=offline_env(), cwd=ROOT, timeout=timeout)

    return run


@pytest.fixture(scope="module")
def indexed(lotsman: Run, small_corpus: Path) -> str:
    proc = lotsman("index", str(small_corpus), "--session", SESSION, "--embedder", "use")
    assert proc.returncode == 0, proc.stderr
    assert f"session '{SESSION}'" in proc.stdout
    assert f"{len(SMALL_CORPUS)} files seen, {len(SMALL_CORPUS)} indexed" in proc.stdout
    return SESSION


def assert_one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    return lines[0]


def test_index_is_incremental_on_a_second_run(lotsman: Run, indexed: str, small_corpus: Path) -> None:
    proc = lotsman("index", str(small_corpus), "--session", indexed, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["kind"] == "changes"
    assert report["files_unchanged"] == len(SMALL_CORPUS) and report["files_indexed"] == 0


def test_ask_json(lotsman: Run, indexed: str, small_corpus: Path) -> None:
    proc = lotsman("ask", "Как настроить CORS в приложении?", "--session", indexed, "--json")

    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"answer", "citations", "route", "abstained", "answer_mode", "offline_reason", "revision",
                        "timings_ms", "llm_events"}
    assert out["llm_events"] == []  # offline: no model call to repair, re-ask or fall back from
    assert out["abstained"] is False and out["answer"].strip()
    assert out["revision"] is None  # a working tree's session (`index --ref` sessions name their commit)
    assert (out["answer_mode"], out["offline_reason"]) == ("offline", "no chat model configured")  # by design
    assert out["citations"]
    for cite in out["citations"]:
        assert set(cite) == {"path", "start_line", "end_line"}
        lines = (small_corpus / cite["path"]).read_text(encoding="utf-8").splitlines()
        assert 1 <= cite["start_line"] <= cite["end_line"] <= len(lines)
        assert f"{cite['path']}:{cite['start_line']}-{cite['end_line']}" in out["answer"]
    assert out["citations"][0]["path"] == "docs/cors.md"
    assert out["route"]["intent"] == "DOC_EXPLAIN" and out["route"]["routing_mode"] == "fallback"
    assert set(out["timings_ms"]) == set(STAGES)
    assert all(isinstance(ms, int | float) and ms >= 0 for ms in out["timings_ms"].values())


def test_ask_json_unanswerable_skips_analysis(lotsman: Run, indexed: str) -> None:
    proc = lotsman("ask", "Как подключить консьюмер Kafka?", "--session", indexed, "--json")

    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["abstained"] is True and out["citations"] == []
    assert "нет ответа" in out["answer"]
    # Nothing relevant: the conditional edge goes straight to composition, analysis never runs.
    assert set(out["timings_ms"]) == set(STAGES) - {"context_analysis"}


def test_ask_plain_text(lotsman: Run, indexed: str) -> None:
    proc = lotsman("ask", "Как настроить CORS в приложении?", "--session", indexed)
    assert proc.returncode == 0, proc.stderr
    assert "[docs/cors.md:" in proc.stdout
    assert "DOC_EXPLAIN" in proc.stderr  # the route and timing summary go to stderr


@pytest.mark.parametrize("question", ["", "   "])
def test_ask_empty_question(lotsman: Run, question: str) -> None:
    proc = lotsman("ask", question)
    assert proc.returncode == 2
    assert "empty" in assert_one_line_error(proc)
    assert proc.stdout == ""


def test_ask_unknown_session(lotsman: Run, indexed: str) -> None:
    proc = lotsman("ask", "x", "--session", "nope")
    line = assert_one_line_error(proc)
    assert "nope" in line and "lotsman index" in line


def test_retrieve_json(lotsman: Run, indexed: str) -> None:
    proc = lotsman("retrieve", "Как настроить CORS в приложении?", "--session", indexed, "--json")

    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["relevant"] is True and out["route"]["intent"] == "DOC_EXPLAIN"
    rows = out["rows"]
    assert rows and rows[0]["path"] == "docs/cors.md"
    for row in rows:
        assert {"path", "lines", "layer", "lanes", "fused_score"} <= set(row)
        assert row["lanes"] and all(isinstance(rank, int) and rank >= 1 for rank in row["lanes"].values())
        assert isinstance(row["fused_score"], float) and row["fused_score"] > 0
    scores = [row["fused_score"] for row in rows]
    assert scores[0] == max(scores)


def _answers(stdout: str) -> list[str]:
    """`chat` prints a `you> ` prompt before each input: the answers sit between prompts."""
    return [part.strip() for part in stdout.split("you> ") if part.strip()]


def test_chat_two_turns_and_resume(lotsman: Run, indexed: str) -> None:
    turns = "Как настроить CORS в приложении?\nА как это отключить?\n"
    proc = lotsman("chat", "--session", indexed, stdin=turns)

    assert proc.returncode == 0, proc.stderr
    first, second = _answers(proc.stdout)
    assert "[docs/cors.md:" in first
    cited = [(m[1], int(m[2]), int(m[3])) for m in re.finditer(r"\[([\w./-]+):(\d+)-(\d+)\]", second)]
    assert covers([{"path": p, "start_line": s, "end_line": e} for p, s, e in cited],
                  "docs/cors.md", CORS_DISABLE_LINES[0]), second
    thread = re.search(r"thread (\w+)", proc.stderr)
    assert thread, proc.stderr

    # The Postgres checkpointer keeps the thread across processes.
    resumed = lotsman("chat", "--session", indexed, "--thread", thread[1], stdin="А где это описано?\n")
    assert resumed.returncode == 0, resumed.stderr
    [third] = _answers(resumed.stdout)
    assert "docs/cors.md" in third and "нет ответа" not in third


def test_chat_ends_on_empty_input(lotsman: Run, indexed: str) -> None:
    proc = lotsman("chat", "--session", indexed, stdin="")
    assert proc.returncode == 0, proc.stderr
    assert _answers(proc.stdout) == []


def test_answer_does_not_quote_index_labels(lotsman: Run, indexed: str) -> None:
    proc = lotsman("ask", "Как настроить CORS?", "--session", indexed)
    assert proc.returncode == 0, proc.stderr
    assert not re.search(r"\bPath: \S+ Type: ", proc.stdout), "index labels are quoted as document text"


# --- issue 14: hostile input --------------------------------------------------------------------------
def test_chat_with_nul_bytes_answers(lotsman: Run, indexed: str) -> None:
    """Item 4: the Postgres checkpointer cannot store NUL; chat removes it like `ask` and the graph do."""
    proc = lotsman("chat", "--session", indexed, stdin="Как настроить\x00 CORS?\n\x00\n\n")
    assert proc.returncode == 0, proc.stderr
    [answer] = _answers(proc.stdout)
    assert "[docs/cors.md:" in answer
    assert "error" not in proc.stderr


ESC = "\x1b[31m"
CONTROL_CORPUS = {f"docs/red{ESC}cors.md": "# Красный CORS\n\nCORS настраивается через `CORSMiddleware`.\n"}
FORGED = "docs/bin\nskipped docs/forged.md: fake.md"
"""A binary file whose name, printed raw, would add a fake `skipped` line to the report."""


@pytest.fixture(scope="module")
def control_session(lotsman: Run, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, subprocess.CompletedProcess]:
    from tests.e2e.conftest import write_corpus

    root = write_corpus(tmp_path_factory.mktemp("control-names"), CONTROL_CORPUS)
    (root / FORGED).parent.mkdir(parents=True, exist_ok=True)
    (root / FORGED).write_bytes(b"\x00\x01binary")
    name = f"ctl-{uuid.uuid4().hex[:6]}"
    proc = lotsman("index", str(root), "--session", name, "--embedder", "fake")
    assert proc.returncode == 0, proc.stderr
    return name, proc


def assert_no_raw_controls(text: str) -> None:
    assert not any(ch in text for ch in "\x1b\x00\x9b"), repr(text)


def test_index_report_escapes_file_names(control_session: tuple[str, subprocess.CompletedProcess]) -> None:
    """Item 7: the skip list cannot be forged by a file name."""
    _, proc = control_session
    assert_no_raw_controls(proc.stdout)
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("skipped ")]
    assert skipped == ["skipped docs/bin\\nskipped docs/forged.md: fake.md: binary file (NUL byte)"]


def test_retrieve_table_and_answers_escape_file_names(
        lotsman: Run, control_session: tuple[str, subprocess.CompletedProcess]) -> None:
    name, _ = control_session
    table = lotsman("retrieve", "Как настроить CORS?", "--session", name)
    answer = lotsman("ask", "Как настроить CORS?", "--session", name)
    chat = lotsman("chat", "--session", name, stdin="Как настроить CORS?\n")

    for proc in (table, answer, chat):
        assert proc.returncode == 0, proc.stderr
        assert_no_raw_controls(proc.stdout)
        assert "docs/red\\x1b[31mcors.md" in proc.stdout


# --- issue 25, item 3: bytes that are not UTF-8 ------------------------------------------------------------
def _run_bytes(offline_env: Callable[..., dict[str, str]], *args: bytes,
               stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([bytes(LOTSMAN), *args], input=stdin, capture_output=True, env=offline_env(), cwd=ROOT,
                          timeout=120)


@pytest.mark.parametrize("args", [
    (b"ask", b"caf\xe9 CORS?", b"--session", b"no-such-session"),
    (b"ask", b"CORS?", b"--session", b"\xff"),
    (b"retrieve", b"caf\xe9", b"--session", b"no-such-session"),
    (b"sessions", b"--delete", b"caf\xe9"),
], ids=["ask-question", "ask-session", "retrieve-question", "sessions-delete"])
def test_text_that_is_not_utf8_is_refused_before_any_work(offline_env: Callable[..., dict[str, str]],
                                                          args: tuple[bytes, ...]) -> None:
    """`lotsman ask $'caf\\xe9'` ran the whole graph, then exited 1 (`--session $'\\xff'`: exit 3 or 4)."""
    proc = _run_bytes(offline_env, *args)
    err = proc.stderr.decode("utf-8")  # and the error line itself is UTF-8
    assert proc.returncode == 2, err  # a graph run on `no-such-session` would be exit 4
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "not valid UTF-8 (byte \\x" in lines[0], err
    assert proc.stdout == b""


def test_chat_reports_a_line_that_is_not_utf8_and_goes_on(offline_env: Callable[..., dict[str, str]],
                                                          indexed: str) -> None:
    """A chat line with a byte that is not UTF-8 used to end the conversation."""
    turns = b"caf\xe9 CORS?\n" + "Как настроить CORS в приложении?\n".encode()
    proc = _run_bytes(offline_env, b"chat", b"--session", indexed.encode(), stdin=turns)
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 0, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "not valid UTF-8 (byte \\xe9)" in errors[0], err
    [answer] = _answers(proc.stdout.decode("utf-8"))
    assert "[docs/cors.md:" in answer
    assert "Traceback" not in err


# --- issue 25, item 9: an answer that could not be written is not a success ---------------------------------
@pytest.mark.parametrize("command", ["ask", "retrieve"])
def test_a_reader_that_left_is_exit_141(offline_env: Callable[..., dict[str, str]], indexed: str,
                                        command: str) -> None:
    """`lotsman ask q | true`: the answer was lost and the exit status was 0."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the answer is written, every time
    try:
        proc = subprocess.run([str(LOTSMAN), command, "Как настроить CORS в приложении?", "--session", indexed],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, env=offline_env(), cwd=ROOT,
                              timeout=120)
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert lines == ["error: stdout was closed before all output was written (its reader exited): "
                     "the output is lost"], proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_a_closed_stdout_is_refused_before_any_work(offline_env: Callable[..., dict[str, str]]) -> None:
    """`lotsman ask q >&-`: the graph ran, the answer went nowhere, exit 0."""
    proc = subprocess.run(["sh", "-c", 'exec "$0" "$@" >&-', str(LOTSMAN), "ask", "Как настроить CORS?",
                           "--session", "no-such-session"], stderr=subprocess.PIPE, text=True, env=offline_env(),
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc.stderr  # a graph run on `no-such-session` would be exit 4
    assert proc.stderr.splitlines() == ["error: stdout is closed, so the output would be lost: "
                                        "redirect it instead (e.g. > answer.txt or > /dev/null)"]
