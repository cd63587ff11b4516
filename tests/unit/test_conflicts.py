"""Conflict notes only for real conflicts (issue 29 item 3).

The "not a conflict" rows are the notes the earlier rule printed on the dev splits (each read and labelled
false), reduced to the lines that produced them; the "conflict" rows state two values for one setting."""

from __future__ import annotations

import signal

import pytest

from nodes.context_analysis.conflicts import file_statements, find_conflicts, normalized_value, stated_values
from nodes.context_analysis.models import Span


def span(path: str, text: str, layer: str = "C0_SOURCE_CHUNKS") -> Span:
    return Span(path=path, start_line=1, end_line=text.count("\n") + 1, text=text, row_id=path, layer=layer)


@pytest.mark.parametrize(
    ("terms", "spans"),
    [
        pytest.param(["https"], [span("docs/https.md", "* https://en.wikipedia.org/wiki/TLS_termination_proxy"),
                                 span("docs/docker.md", "https://traefik.io/")], id="urls are not settings"),
        pytest.param(["slug"], [span("src/milestone.py", "def f(slug: str):\n    pass"),
                                span("src/epic.py", "slug = _epic_owner(x)")], id="annotation vs call"),
        pytest.param(["ttl"], [span("src/lease.py", "ttl: int = typer.Option(DEFAULT_TTL)"),
                               span("src/task.py", "ttl = DEFAULT_TTL")], id="names are not values"),
        pytest.param(["processors"], [span("src/_config.py", "def configure(processors=None):"),
                                      span("docs/stdlib.md", "processors=shared_processors,")],
                     id="a sentinel default vs an example argument"),
        pytest.param(["utc"], [span("CHANGELOG.md", "- `TimeStamper(utc=True)` is now faster"),
                               span("docs/start.md", 'structlog.processors.TimeStamper(fmt="iso", utc=False)')],
                     id="keyword arguments in calls are examples"),
        pytest.param(["request_id"], [span("docs/frameworks.md", "request_id=request.headers.get('x'),"),
                                      span("docs/contextvars.md", 'request_id="e08ddf0d-23a5"')],
                     id="example values in calls"),
        pytest.param(["mode"], [span("click/utils.py", 'def open_file(filename, mode: str = "r"):'),
                                span("click/types.py", "mode: str\n    The mode")],
                     id="one stated default and a docstring line"),
        pytest.param(["timeout"], [span("src/client.py", "def get(url, timeout=30):"),
                                   span("tests/test_client.py", "TIMEOUT = 5")], id="a test's variable"),
        pytest.param(["cap"], [span("docs/plan.md", "cap: это предел токенов"),
                               span("nodes/gate.py", "cap: int")], id="prose after a colon"),
        pytest.param(["fallback"], [span("docs/route.md", "fallback: routing_mode"),
                                    span("src/fallback.py", "fallback = None")], id="a name and None"),
        # a stress sample (every setting name a corpus states with two values in two files, read and
        # labelled): code never disagrees with itself, and a docs example's variable is not a setting
        pytest.param(["changed"], [span("src/hooks.py",
                                        "def run(x):\n    changed = False\n    if x:\n        changed = True"),
                                   span("src/sprint.py", "def plan():\n    changed = 0")],
                     id="a function's local variables"),
        pytest.param(["show_default"], [span("click/core.py", "def __init__(self, show_default: bool = False):"),
                                        span("click/termui.py", "def prompt(text, show_default: bool = True):")],
                     id="two functions' parameters are two settings"),
        pytest.param(["max_frames"], [span("src/dev.py", "MAX_FRAMES = 100"),
                                      span("src/tracebacks.py", "MAX_FRAMES = 50")],
                     id="two modules' constants"),
        pytest.param(["message"], [span("docs/proxy.md", 'message = "Hello World"', "D0_DOC_CHUNKS"),
                                   span("docs/path-params.md", 'message = "Deep Learning FTW!"', "D0_DOC_CHUNKS")],
                     id="example variables in docs"),
        # the review of that rule (session 13): each row was a false note
        pytest.param(["timeout"], [span("docs/client.md", "`timeout` defaults to `30` and `retries` defaults to `3`.",
                                        "D0_DOC_CHUNKS"),
                                   span("pkg/client.py", "def connect(timeout=30, retries=3):\n    pass")],
                     id="two defaults in one sentence"),
        pytest.param(["show_default"], [span("docs/options.md", "`show_default` defaults to `False`.", "D0_DOC_CHUNKS"),
                                        span("click/core.py", "def __init__(self, show_default: bool = False):"),
                                        span("click/termui.py", "def prompt(text, show_default: bool = True):")],
                     id="docs that state one definition's value"),
        pytest.param(["level"], [span("docs/levels.md", '`level` defaults to `"info"`.', "D0_DOC_CHUNKS"),
                                 span("src/projects.py", '# projects.add_cmd (continued)\n    if not slug:\n'
                                      '        emit(\n            action="created",\n            level="warn",\n'
                                      '        )\n')],
                     id="a chunk that starts inside a definition"),
        pytest.param(["status_code"], [span("docs/errors.md", "The `status_code` defaults to `200`.", "D0_DOC_CHUNKS"),
                                       span("pkg/errors.py", "def f():\n    raise HTTPException(\n"
                                            "        status_code=404,\n        detail='x',\n    )")],
                     id="a call's keyword argument in code"),
        pytest.param(["limit"], [span("docs/tutorial.md", "```python\n@app.get('/items/')\n"
                                      "async def read_items(skip: int = 0, limit: int = 10):\n    return items\n```",
                                      "D0_DOC_CHUNKS"),
                                 span("src/pagination.py", "def paginate(query, limit: int = 50):\n    return query")],
                     id="an example def in docs"),
        pytest.param(["max_age"], [span("docs/cors.md", "* `max_age` - время кэша. По умолчанию `600`.",
                                        "D0_DOC_CHUNKS"),
                                   span("examples/app.py", "app.add_middleware(\n    CORSMiddleware,\n"
                                        "    allow_origins=['*'],\n    max_age=3600,\n)")],
                     id="an example's call in code"),
        pytest.param(["timeout"], [span("docs/client.md", "`timeout` defaults to `5`.", "D0_DOC_CHUNKS"),
                                   span("pkg/client.py", "def connect(timeout: float = 5.0):\n    pass")],
                     id="5 and 5.0"),
        pytest.param(["timeout"], [span("docs/client.md", "```python\nTIMEOUT = 3\n```", "D0_DOC_CHUNKS"),
                                   span("pkg/client.py", "TIMEOUT = 5")],
                     id="a constant in a docs code block"),
        pytest.param(["cache_logger_on_first_use"],
                     [span("docs/getting-started.md", "    cache_logger_on_first_use=False,", "D0_DOC_CHUNKS"),
                      span("docs/performance.md", "    cache_logger_on_first_use=True,", "D0_DOC_CHUNKS")],
                     id="a call's keyword argument on its own line"),
    ],
)
def test_no_note_where_nothing_disagrees(terms: list[str], spans: list[Span]) -> None:
    assert find_conflicts(spans, [], terms) == []


@pytest.mark.parametrize(
    ("terms", "spans", "note"),
    [
        pytest.param(["max_age"], [span("docs/cors.md", "* `max_age` - кэширование. По умолчанию `600`."),
                                   span("docs/middleware.md", "* `max_age` - время кэша. По умолчанию `3600`.")],
                     "max_age: 600 (docs/cors.md) ≠ 3600 (docs/middleware.md)", id="two prose defaults"),
        pytest.param(["timeout"], [span("src/client.py", "def get(url,\n    timeout: float = 5.0,\n    verify=True):"),
                                   span("docs/usage.md", "The `timeout` defaults to `30`.")],
                     "timeout: 30 (docs/usage.md) ≠ 5 (src/client.py)", id="signature default vs docs"),
        pytest.param(["retries"], [span("config/default.yml", "retries: 3"),
                                   span("src/settings.py", "RETRIES = 5")],
                     "retries: 3 (config/default.yml) ≠ 5 (src/settings.py)", id="config vs constant, any case"),
        pytest.param(["debug"], [span("docs/a.md", "DEBUG=true"), span("src/app.py", "DEBUG = False")],
                     "DEBUG: true (docs/a.md) ≠ false (src/app.py)", id="booleans in one case"),
        pytest.param(["compresslevel"],
                     [span("docs/gzip.md",
                           "* `compresslevel` - уровень сжатия. Целое число от 1 до 9. По умолчанию — `9`.",
                           "D0_DOC_CHUNKS"), span("pkg/gzip.py", "def gzip(app, compresslevel: int = 6):")],
                     "compresslevel: 9 (docs/gzip.md) ≠ 6 (pkg/gzip.py)", id="the name two sentences back"),
        pytest.param(["timeout"], [span("docs/t.md", "| `timeout` | float | The timeout. Defaults to `30`. |",
                                        "D0_DOC_CHUNKS"),
                                   span("pkg/c.py", "class Client:\n    timeout = 10\n    def get(self):\n"
                                        "        timeout = 3\n")],
                     "timeout: 30 (docs/t.md) ≠ 10 (pkg/c.py)", id="a table row and a class attribute"),
        pytest.param(["max_frames"], [span("src/dev.py", "def render(exc, max_frames: int = 100):"),
                                      span("docs/exceptions.md", "`max_frames` defaults to `50`.")],
                     "max_frames: 50 (docs/exceptions.md) ≠ 100 (src/dev.py)", id="the docs disagree with the code"),
    ],
)
def test_a_note_where_two_files_state_different_values(terms: list[str], spans: list[Span], note: str) -> None:
    assert find_conflicts(spans, [], terms) == [note]


def test_the_same_value_twice_is_no_conflict() -> None:
    spans = [span("docs/a.md", "`max_age` defaults to `600`"), span("src/b.py", "def f(max_age=600):")]
    assert find_conflicts(spans, [], ["max_age"]) == []


@pytest.mark.parametrize(
    ("raw", "value"),
    [('"r"', "r"), ("30", "30"), ("5.0,", "5"), ("1e6", "1000000"), ("1_000_000", "1000000"), (".5", "0.5"),
     ("True", "true"), ("None", None), ('""', None), ("...", None),
     ("MISSING", None), ("str", None), ("opts.get", None), ("-1", "-1")],
)
def test_normalized_value(raw: str, value: str | None) -> None:
    assert normalized_value(raw) == value


@pytest.mark.parametrize(("text", "values"), [
    ('def f(msg="a\\"(b", timeout=30):\n    pass\nX = 1', [("timeout", "30"), ("X", "1")]),  # an escaped quote
    ('def f(a="abc,\n      timeout=30):\n    pass\nTIMEOUT = 3', [("timeout", "30"), ("TIMEOUT", "3")]),
    ('"""Docs.\n\n    timeout = 99\n"""\nTIMEOUT = 3', [("TIMEOUT", "3")]),  # a docstring's example
    ("def get(\n    url: str,\n    timeout=30,\n):\n    pass", [("timeout", "30")]),  # review G1
    ("def f(request: Request, debug=True): pass", [("debug", "true")]),
    ("def f(key=lambda x: x, timeout=30): pass", [("timeout", "30")]),
    ("def f(a: int | None = 3, b: Annotated[int, Doc('x')] = 4): pass", [("a", "3"), ("b", "4")]),
    ("`skip`, представляющий собой `int`, по умолчанию `0`", [("skip", "0")]),
    ("Set `timeout` (seconds). It defaults to `30`.", [("timeout", "30")]),
    ("`log_level` (str): log level, defaults to `\"info\"`.", [("log_level", "info")]),
    ("| `IndexInput` | `rebuild` | `true`; snapshot (по умолчанию `false`) |", []),
])
def test_stated_values(text: str, values: list[tuple[str, str]]) -> None:
    assert stated_values(text) == values


def test_long_runs_of_spaces_do_not_hang() -> None:
    """A setting-shaped line padded with spaces once took a minute (three adjacent quantifiers matching spaces),
    hours at 100 kB; a line longer than MAX_SETTING_LINE is not read as a setting at all. A hang detector, not
    a timing: the alarm (60 s; each input takes milliseconds) turns a regression into a failure."""
    def hung(signum: int, frame: object) -> None:
        raise AssertionError("stated_values did not return within 60 s: a regex backtracks")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        for text in ("x:" + " " * 20000 + "y", "def f(x:" + " " * 20000 + "y): pass",
                     "`x` defaults to `1`. " * 5000):
            stated_values(text)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_docs_code_blocks_are_examples() -> None:
    assert file_statements("Text\n\n    TIMEOUT = 60\n", "docs/a.md") == []  # an indented code block
    assert file_statements("```\nTIMEOUT = 60\n```\nDEBUG=true\n", "docs/a.md") == [("DEBUG", "true")]


def test_stated_values_reads_multiline_signatures_but_not_calls() -> None:
    text = "def send(self, request,\n    follow_redirects: bool = True,\n    auth=None):\n    x = call(timeout=3)\n"
    assert stated_values(text) == [("follow_redirects", "true")]
