"""The HTML eval report opened in a real headless Chromium (Debian's `chromium`, Playwright), from file://.

Every request the page makes is routed: anything not file:// fails the test (the page must load nothing).
No console error, no script error; the filters show the cases they should; HTML in a question or an answer
stays text. The page is written to the test's tmp_path, the screenshots to out/ (not committed); the test
prints the page's size. `browser` (headless Chromium) comes from tests/e2e/conftest.py.

By default the page is made from the committed fixture runs (RRF vs learned, click and structlog, 8 cases
each); `LOTSMAN_EVAL_RUNS=BASE.json,NEW.json` makes it from real runs instead (the dev-suite report).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from evals.html_report import write_runs
from evals.html_report.model import load_run, outcome
from tests.eval_report_runs import BASE, NEW, hostile_report

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out"


class Opened:
    """A tab on a file:// page, with every console error, script error and non-file request recorded."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.errors: list[str] = []
        self.left: list[str] = []
        self.tab = browser.new_page(viewport={"width": 1280, "height": 1500})
        self.tab.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.tab.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.tab.route("**/*", self._route)
        self.tab.goto(path.resolve().as_uri(), wait_until="load")

    def _route(self, route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            self.left.append(route.request.url)
            route.abort()

    def shown(self) -> int:
        return int(self.tab.inner_text("#shown"))

    def filter(self, name: str, value: str) -> None:
        self.tab.select_option(f'select[data-filter="{name}"]', value)


def runs() -> list[Path]:
    given = os.environ.get("LOTSMAN_EVAL_RUNS")
    return [Path(p) for p in given.split(",")] if given else [BASE, NEW]


def test_the_report_works_offline_and_its_filters_show_the_right_cases(browser: Any, tmp_path: Path) -> None:
    paths = runs()
    OUT.mkdir(exist_ok=True)
    html = tmp_path / "eval-report.html"
    size = write_runs(paths, html)
    print(f"\nreport {html}: {size} bytes ({size / 1024:.0f} KB) from {', '.join(map(str, paths))}")
    page = Opened(browser, html)
    loaded = [load_run(p) for p in paths]
    new = loaded[-1]
    everyone = {(c, r["id"]) for run in loaded for c in run.corpora for r in run.rows(c)}
    assert page.shown() == len(everyone)
    page.tab.screenshot(path=str(OUT / "eval-report.png"))

    corpus = list(new.corpora)[-1]
    page.filter("corpus", corpus)
    assert page.shown() == len({cid for c, cid in everyone if c == corpus})
    visible = page.tab.eval_on_selector_all("details.case:not([hidden])", "els => els.map(e => e.dataset.corpus)")
    assert set(visible) == {corpus}
    kinds = [r for r in new.rows(corpus) if outcome(r) == "no facts"]
    page.filter("outcome", f"r{len(loaded) - 1}:no-facts")
    assert page.shown() == len(kinds)
    if kinds:
        page.tab.click("details.case:not([hidden]) >> nth=0 >> summary")
        page.tab.locator("details.case[open]").first.scroll_into_view_if_needed()
    page.tab.screenshot(path=str(OUT / "eval-report-cases.png"))
    print(f"screenshots: {OUT / 'eval-report.png'}, {OUT / 'eval-report-cases.png'}")
    page.filter("outcome", "")
    page.filter("corpus", "")
    assert page.shown() == len(everyone)
    assert page.errors == [] and page.left == []


def test_html_in_a_case_stays_text_in_the_browser(browser: Any, tmp_path: Path) -> None:
    run = tmp_path / "hostile.json"
    run.write_text(json.dumps(hostile_report(), ensure_ascii=False), encoding="utf-8")
    html = tmp_path / "hostile.html"
    write_runs([run], html)
    page = Opened(browser, html)
    case = 'details.case[data-corpus="c-x"] >> nth=0'  # the hostile case, in corpus `c<x>"`
    page.tab.click(f"{case} >> summary")
    assert page.tab.evaluate("window.__xss") is None
    assert page.tab.locator("img").count() == 0  # the onerror image is text, so nothing asked for `x` either
    assert "<script>window.__xss = 1</script> Как?" in page.tab.inner_text(f"{case} >> summary")
    assert '<img src=x onerror="window.__xss = 2">' in page.tab.inner_text(f"{case} >> pre.answer")
    assert page.errors == [] and page.left == []
