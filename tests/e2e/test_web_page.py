"""The web page `lotsman serve` publishes, driven in a real headless Chromium (Debian's `chromium`, Playwright).

`langgraph dev` serves langgraph.json as `lotsman serve` does (its `http.app` mounts graph/web.py's routes) on
this test run's database; the page asks the server's own API (a thread, `runs/stream` of `lotsman`). Flow:
pick the session, ask, see the citations, expand one (the cited lines come from the index), vote (the vote
is in `rag_feedback`), ask a follow-up in the same thread. The test saves a screenshot of the page with an
expanded citation and prints its path (also copied to $LOTSMAN_SCREENSHOT_DIR when that is set).
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import CORS_DISABLE_LINES, CORS_DOC, SMALL_CORPUS, DevServer, running_dev_server, write_corpus
from tests.e2e.test_gigachat_path import INVENTED, QUESTION, Script
from tests.fakes.gigachat_server import Delay, FakeGigaChatServer, Text

ANSWER_TIMEOUT_MS = 120_000
"""The first answer loads the embedder inside the server: generous, it is a ceiling, not a measurement."""
WAIT_S = 60.0
"""Ceiling for server-side state the test waits for (a run starting, a run cancelled)."""

WIDGET_DOC = """# Виджет

Чтобы встроить виджет, вставьте на страницу строку:

<img src=x onerror="window.__xss = 1">

Виджет появится после перезагрузки.
"""
"""A document whose indexed text is HTML: the page must show it as text, never run it."""
WEB_CORPUS = {**SMALL_CORPUS, "docs/widget.md": WIDGET_DOC}


def doc_lines(text: str, start: int, end: int) -> list[str]:
    return text.split("\n")[start - 1:end]


@pytest.fixture(scope="module")
def web_session(db, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The small corpus plus the HTML widget page, indexed with the real offline `use` embedder."""
    from stores.embedders import make_embedder
    from stores.indexing.service import index_repository

    root = write_corpus(tmp_path_factory.mktemp("web-corpus"), WEB_CORPUS)
    name = f"e2e-web-{uuid.uuid4().hex[:8]}"
    report = index_repository(db, root, session_name=name, embedder=make_embedder("use"), incremental=False)
    assert report.files_indexed == len(WEB_CORPUS), report.counts()
    return name


@pytest.fixture(scope="module")
def server(offline_env: Callable[..., dict[str, str]], tmp_path_factory: pytest.TempPathFactory,
           db) -> Iterator[DevServer]:
    with running_dev_server(offline_env(LOTSMAN_EMBEDDER="use"), tmp_path_factory.mktemp("web-dev")) as srv:
        yield srv


TOKEN = "web-page-token-7c1e"


@pytest.fixture(scope="module")
def guarded_llm_server(offline_env: Callable[..., dict[str, str]], scripted_gigachat: FakeGigaChatServer,
                       tmp_path_factory: pytest.TempPathFactory, db) -> Iterator[DevServer]:
    """A server with a token and a chat model (the real GigaChat SDK against the scripted fake GigaChat)."""
    env = offline_env(LOTSMAN_EMBEDDER="use", LOTSMAN_AUTH_TOKEN=TOKEN, **scripted_gigachat.env())
    with running_dev_server(env, tmp_path_factory.mktemp("web-dev-llm")) as srv:
        yield srv


def csp_violations(tab: Any) -> list[str]:
    """Console lines in which Chromium reports something the page's Content-Security-Policy blocked."""
    seen: list[str] = []
    tab.on("console", lambda msg: seen.append(msg.text) if "Content Security Policy" in msg.text else None)
    return seen


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh tab; the test fails if a script of the page raised (a refused request is the test's to judge) or
    if the page did something its Content-Security-Policy blocks (the page must work under it as it is)."""
    tab = browser.new_page(viewport={"width": 1100, "height": 1300})
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    blocked = csp_violations(tab)
    yield tab
    tab.close()
    assert errors == [], "the page's script raised"
    assert blocked == [], "the page broke its own Content-Security-Policy"


def open_guarded_page(page: Any, server: DevServer, session: str) -> None:
    """Open the page of a server that needs a token: the page asks for it, then lists the sessions."""
    page.goto(f"{server.url}/lotsman/")
    page.locator("#token-form").wait_for()
    assert "this server needs a token" in page.inner_text("#notice")
    page.fill("#token", TOKEN)
    page.click("#token-form button[type=submit]")
    page.wait_for_selector("#session:not([disabled])")
    page.select_option("#session", session)


def wait_for_runs(server: DevServer, thread_id: str, done: Callable[[list[dict[str, Any]]], bool]) -> list[dict]:
    """The thread's runs once `done(runs)` holds (fails after WAIT_S)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        runs = httpx.get(f"{server.url}/threads/{thread_id}/runs", headers={"Authorization": f"Bearer {TOKEN}"},
                         timeout=10).json()
        if done(runs) or time.monotonic() > deadline:
            assert done(runs), runs
            return runs
        time.sleep(0.2)


def open_page(page: Any, server: DevServer, session: str) -> None:
    page.goto(f"{server.url}/lotsman/")
    page.wait_for_selector("#session:not([disabled])")
    page.select_option("#session", session)


def ask(page: Any, question: str, turn: int) -> Any:
    """Type `question`, send it with Enter, wait for turn `turn`'s answer; returns the answer's locator."""
    page.fill("#question", question)
    page.press("#question", "Enter")
    answer = page.locator(f".turn[data-turn='{turn}'] .answer")
    page.wait_for_selector(f".turn[data-turn='{turn}'] .answer:not(.pending) .vote", timeout=ANSWER_TIMEOUT_MS)
    assert "failed" not in (answer.get_attribute("class") or ""), answer.inner_text()
    return answer


def sources(answer: Any) -> list[dict[str, Any]]:
    """The answer's citation list as the page shows it."""
    return [{"path": a.get_attribute("data-path"), "start_line": int(a.get_attribute("data-start")),
             "end_line": int(a.get_attribute("data-end")), "label": a.inner_text()}
            for a in answer.locator(".sources a.citation").all()]


def expand(answer: Any, path: str) -> tuple[dict[str, Any], list[tuple[int, str]]]:
    """Click the first citation of `path` in the answer's list; returns it and the (number, text) lines shown."""
    index = next(i for i, s in enumerate(sources(answer)) if s["path"] == path)
    cite = sources(answer)[index]
    item = answer.locator(".sources > li").nth(index)
    item.locator("a.citation").click()
    item.locator(".lines .line .no").first.wait_for()
    rows = item.locator(".lines .line")
    shown = [(int(r.locator(".no").inner_text()), r.locator(".text").inner_text()) for r in rows.all()]
    return cite, shown


def vote(answer: Any, thumb: str, comment: str = "") -> None:
    """Click a thumb, write the comment, send; fails with the page's message if the vote was not stored."""
    answer.locator(f".thumb.{thumb}").click()
    if comment:
        answer.locator("textarea.comment").fill(comment)
    answer.locator("button.send").click()
    status = answer.locator(".vote .status.done, .vote .status.failed")
    status.wait_for()
    assert "done" in (status.get_attribute("class") or ""), status.inner_text()


def session_votes(db, session: str) -> set[tuple[str, int, str, str | None]]:
    with db.connection() as conn:
        return set(conn.execute("SELECT feedback_id, score, question, comment FROM rag_feedback "
                                "WHERE session_name = %s", (session,)).fetchall())


def save_screenshot(page: Any, folder: Path, name: str) -> Path:
    path = folder / name
    page.screenshot(path=str(path))
    extra = os.environ.get("LOTSMAN_SCREENSHOT_DIR")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / name)
    return path


def test_ask_expand_vote_and_follow_up(page: Any, server: DevServer, web_session: str, db,
                                       tmp_path_factory: pytest.TempPathFactory,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    open_page(page, server, web_session)
    page.press("#question", "Enter")  # an empty question is not sent
    assert page.locator(".turn").count() == 0

    question = "Как настроить CORS в приложении?"
    first = ask(page, question, 1)
    assert first.locator(".answer-text a.citation").count() >= 1, "citations in the answer's text are links"
    assert "docs/cors.md" in {s["path"] for s in sources(first)}, sources(first)

    cite, shown = expand(first, "docs/cors.md")
    expected = doc_lines(CORS_DOC, cite["start_line"], cite["end_line"])
    assert shown == list(zip(range(cite["start_line"], cite["end_line"] + 1), expected, strict=True))
    shot = save_screenshot(page, tmp_path_factory.mktemp("web-page-screenshots"), "web-page-expanded-citation.png")
    with capsys.disabled():
        print(f"\nscreenshot of the page with an expanded citation: {shot}")

    # --- a vote with a comment ------------------------------------------------------------------------------
    before = {vote_id for vote_id, *_ in session_votes(db, web_session)}
    vote(first, "down", "не хватает примера")
    with db.connection() as conn:
        rows = conn.execute("SELECT score, question, comment, run_id, thread_id, citations, answer FROM rag_feedback "
                            "WHERE session_name = %s AND NOT feedback_id = ANY(%s)",
                            (web_session, list(before))).fetchall()
    assert len(rows) == 1, "one vote, stored once"
    score, voted_question, comment, run_id, thread_id, citations, answer = rows[0]
    assert (score, voted_question, comment) == (-1, question, "не хватает примера")
    assert run_id and thread_id and "docs/cors.md" in answer
    assert {"path": cite["path"], "start_line": cite["start_line"], "end_line": cite["end_line"]} in citations

    # --- a follow-up in the same thread ---------------------------------------------------------------------
    second = ask(page, "А как это отключить?", 2)
    assert any(s["path"] == "docs/cors.md" and s["start_line"] <= CORS_DISABLE_LINES[0] <= s["end_line"]
               for s in sources(second)), sources(second)
    state = httpx.get(f"{server.url}/threads/{thread_id}/state", timeout=30).json()
    assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai", "human", "ai"]


def test_index_text_is_shown_as_text_never_run(page: Any, server: DevServer, web_session: str) -> None:
    open_page(page, server, web_session)
    answer = ask(page, "Как встроить виджет?", 1)
    _, shown = expand(answer, "docs/widget.md")
    assert (5, '<img src=x onerror="window.__xss = 1">') in shown
    assert page.locator(".answer img").count() == 0
    assert page.evaluate("window.__xss") is None


def test_citation_view_shows_the_cited_lines(page: Any, server: DevServer, web_session: str) -> None:
    """Where the Markdown links of chat answers lead (`/lotsman/read?session&path&start&end`)."""
    start, end = CORS_DISABLE_LINES
    page.goto(f"{server.url}/lotsman/read?session={web_session}&path=docs/cors.md&start={start}&end={end}")
    page.locator("#citation-lines .line.cited").first.wait_for()
    cited = [t.inner_text() for t in page.locator("#citation-lines .line.cited .text").all()]
    assert cited == doc_lines(CORS_DOC, start, end)
    assert page.locator("#citation-lines .line").count() > len(cited), "a few lines around it for context"

    page.goto(f"{server.url}/lotsman/read?session={web_session}&path=docs/missing.md&start=1&end=2")
    page.locator("#citation-lines.error").wait_for()
    assert "docs/missing.md is not in session" in page.inner_text("#citation-lines")


def test_token_then_a_streamed_llm_answer(page: Any, guarded_llm_server: DevServer, web_session: str,
                                          scripted_gigachat: FakeGigaChatServer, db) -> None:
    """With LOTSMAN_AUTH_TOKEN set the page asks for it, then sends it on every request (its own endpoints and
    the LangGraph API); on the LLM path the answer arrives token by token."""
    scripted_gigachat.chat_handler = Script()
    open_guarded_page(page, guarded_llm_server, web_session)

    answer = ask(page, QUESTION, 1)
    assert int(answer.get_attribute("data-streamed-chunks") or 0) >= 5, "the answer arrives token by token"
    assert answer.locator(".answer-text").inner_text().startswith("Чтобы настроить CORS")
    cited = {s["path"] for s in sources(answer)}
    assert "docs/cors.md" in cited and "docs/secret.md" not in cited, sources(answer)
    assert INVENTED.strip("[]") not in {a.inner_text() for a in answer.locator("a.citation").all()}
    _, shown = expand(answer, "docs/cors.md")
    assert shown and all(text == CORS_DOC.split("\n")[number - 1] for number, text in shown)

    before = session_votes(db, web_session)
    vote(answer, "up")
    added = session_votes(db, web_session) - before
    assert [(score, question, comment) for _, score, question, comment in added] == [(1, QUESTION, None)]


def test_a_session_gone_since_the_list_shows_one_error_line(page: Any, server: DevServer, web_session: str) -> None:
    """A session deleted after the page listed it: the run fails and the answer card says why, in one line."""
    open_page(page, server, web_session)
    page.evaluate("""() => {
        const select = document.getElementById("session");
        select.append(new Option("deleted-meanwhile", "deleted-meanwhile"));
        select.value = "deleted-meanwhile";
        select.dispatchEvent(new Event("change"));
    }""")
    page.fill("#question", "Что такое CORS?")
    page.press("#question", "Enter")
    failed = page.locator(".turn[data-turn='1'] .answer.failed")
    failed.wait_for(timeout=ANSWER_TIMEOUT_MS)
    text = failed.inner_text()
    assert text.startswith("Ошибка: ") and "no session 'deleted-meanwhile'" in text and "lotsman index" in text
    assert "\n" not in text.strip() and "Traceback" not in text


def test_stop_cancels_the_run_and_the_thread_goes_on(page: Any, guarded_llm_server: DevServer, web_session: str,
                                                     scripted_gigachat: FakeGigaChatServer) -> None:
    """«Остановить» closes the stream; the server cancels the run (on_disconnect=cancel) and the next question
    is answered in the same thread."""
    scripted_gigachat.chat_handler = Script(answer=Delay(60, Text("слишком поздний ответ")))
    open_guarded_page(page, guarded_llm_server, web_session)
    page.fill("#question", QUESTION)
    page.press("#question", "Enter")
    page.wait_for_selector("#conversation[data-thread]")
    thread_id = page.get_attribute("#conversation", "data-thread")
    wait_for_runs(guarded_llm_server, thread_id, lambda runs: any(r["status"] == "running" for r in runs))

    page.click("#stop")
    stopped = page.locator(".turn[data-turn='1'] .answer.stopped")
    stopped.wait_for()
    assert "Остановлено" in stopped.inner_text() and "слишком поздний" not in stopped.inner_text()
    runs = wait_for_runs(guarded_llm_server, thread_id,
                         lambda runs: bool(runs) and all(r["status"] not in ("pending", "running") for r in runs))
    assert [r["status"] for r in runs] == ["interrupted"], runs
    assert page.is_visible("#ask") and not page.is_visible("#stop")

    scripted_gigachat.chat_handler = Script()
    answer = ask(page, QUESTION, 2)
    assert "docs/cors.md" in {s["path"] for s in sources(answer)}
    assert page.get_attribute("#conversation", "data-thread") == thread_id, "the same thread"


def test_the_page_runs_under_a_strict_content_security_policy(browser: Any, server: DevServer,
                                                               web_session: str) -> None:
    """The page and the citation view are served with a CSP that allows only the server's own script, styles and
    API: the page works under it (the other tests run under it too), and a script that an injection managed to
    put into the page does not run."""
    tab = browser.new_page()
    blocked = csp_violations(tab)
    try:
        for url in (f"{server.url}/lotsman/", f"{server.url}/lotsman/read?session={web_session}&path=docs/cors.md"
                                               "&start=1&end=2"):
            response = tab.goto(url)
            policy = response.headers.get("content-security-policy", "")
            assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy, (url, policy)
            assert response.headers.get("x-content-type-options") == "nosniff"
            assert response.headers.get("referrer-policy") == "no-referrer"
        tab.locator("#citation-lines .line.cited").first.wait_for()
        assert blocked == [], "the citation view works under its policy"

        tab.evaluate("""() => {
            const s = document.createElement("script");
            s.textContent = "window.__injected = 1";
            document.body.append(s);
        }""")
        assert tab.evaluate("window.__injected") is None, "an inline script does not run"
        tab.wait_for_function("() => true")
        assert any("script-src" in line for line in blocked), blocked
    finally:
        tab.close()
