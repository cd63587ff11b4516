"""Units inside the top files (issue 38, items 2-3): splitting rows into units, their features, the pack."""

from __future__ import annotations

import numpy as np
import pytest

from nodes.context_retrieval.gate import row_tokens
from nodes.context_retrieval.rank_features import RankQuery
from nodes.context_retrieval.units import (
    UNIT_FEATURES,
    UNIT_MARK,
    UnitContext,
    heuristic_scores,
    kept_core,
    pack_units,
    split_code,
    split_doc,
    split_rows,
    unit_features,
)
from nodes.evidence import EvidenceRow

CODE = '''def confirm(
    text: str,
    default: bool | None = False,
) -> bool:
    """Prompts for confirmation.

    :param text: the question to ask.
    :param default: the default value.
    """
    prompt = _build_prompt(
        text, "y/n" if default is None else ("Y/n" if default else "y/N"),
    )
    # comment one
    # comment two
    while True:
        if value in ("y", "yes"):
            rv = True
        else:
            echo(_("Error: invalid input"), err=err)'''


@pytest.mark.parametrize(("kind", "start", "end", "text"), [
    ("def", 10, 13, "def confirm(\n    text: str,\n    default: bool | None = False,\n) -> bool:"),
    ("docstring", 14, 14, '    """Prompts for confirmation.'),
    ("docstring", 16, 16, "    :param text: the question to ask."),
    ("docstring", 17, 18, '    :param default: the default value.\n    """'),
    ("statement", 19, 21, '    prompt = _build_prompt(\n        text, "y/n" if default is None else ("Y/n" if default '
     'else "y/N"),\n    )'),
    ("comment", 22, 23, "    # comment one\n    # comment two"),
    ("statement", 25, 25, '        if value in ("y", "yes"):'),
    ("statement", 28, 28, '            echo(_("Error: invalid input"), err=err)'),
])
def test_code_is_cut_into_statements(kind: str, start: int, end: int, text: str) -> None:
    assert (kind, start, end, text) in split_code(CODE, 10)


def test_a_long_statement_is_cut_into_windows() -> None:
    body = "x = call(\n" + "".join(f"    arg{i}={i},\n" for i in range(20)) + ")"
    units = split_code(body, 1)
    assert [(a, b) for _, a, b, _ in units] == [(1, 8), (9, 16), (17, 22)]


DOC = """# Title { #t }

First sentence here. Second sentence follows! Третье предложение.
Wrapped line continues.

- item one
  continued
- item two

| a | b |
|---|---|
| x | y |

```python
code = 1
```
"""


@pytest.mark.parametrize(("kind", "start", "end", "text"), [
    ("heading", 1, 1, "# Title { #t }"),
    ("sentence", 3, 3, "First sentence here."),
    ("sentence", 3, 3, "Третье предложение."),
    ("sentence", 4, 4, "Wrapped line continues."),
    ("list_item", 6, 7, "- item one\n  continued"),
    ("list_item", 8, 8, "- item two"),
    ("table_row", 10, 10, "| a | b |"),
    ("table_row", 12, 12, "| x | y |"),
    ("code_block", 14, 16, "```python\ncode = 1\n```"),
])
def test_docs_are_cut_into_sentences_items_rows_and_blocks(kind: str, start: int, end: int, text: str) -> None:
    assert (kind, start, end, text) in split_doc(DOC, 1)


def test_a_table_rule_is_no_unit() -> None:
    assert all("---" not in t for _, _, _, t in split_doc(DOC, 1))


def rows() -> list[dict]:
    return [
        {"id": "c0", "path": "pkg/client.py", "layer": "C0_SOURCE_CHUNKS", "title": "pkg.client.Client",
         "content": "# class Client (continued)\n    def __init__(self, timeout: float = 5.0):\n"
                    "        self.timeout = timeout",
         "span_start": 40, "span_end": 41, "metadata": {}},
        {"id": "f1", "path": "pkg/client.py", "layer": "C7_CODE_FACTS",
         "title": "parameter `timeout` of `pkg.client.Client.__init__` defaults to `5.0`",
         "content": "    def __init__(self, timeout: float = 5.0):", "span_start": 40, "span_end": 40,
         "metadata": {"fact_kind": "parameter", "name": "timeout", "sentence_ru": "параметр `timeout` ..."}},
        {"id": "d0", "path": "docs/usage.md", "layer": "D0_DOC_CHUNKS", "title": "Usage", "content":
         "# Usage\n\nInstall it. The client retries three times.", "span_start": 1, "span_end": 3, "metadata": {}},
        {"id": "c1", "path": "docs/usage.md", "layer": "C1_SYMBOL_CATALOG", "title": "x", "content": "x",
         "span_start": 1, "span_end": 1, "metadata": {}},
    ]


def test_split_rows_numbers_lines_past_a_continued_chunks_context_line() -> None:
    units = split_rows(rows())
    code = [u for u in units if u.layer == "C0_SOURCE_CHUNKS"]
    assert [(u.kind, u.start, u.end) for u in code] == [("def", 40, 40), ("statement", 41, 41)]
    fact = next(u for u in units if u.layer == "C7_CODE_FACTS")
    assert (fact.kind, fact.fact_kind, fact.name, fact.start) == ("fact", "parameter", "timeout", 40)
    assert "параметр" in fact.context
    assert [(u.kind, u.start, u.end, u.text) for u in units if u.layer == "C1_SYMBOL_CATALOG"] == [
        ("card", 1, 1, "x")]
    assert [u.text for u in units if u.kind == "sentence"] == ["Install it.", "The client retries three times."]


def context(query: str, terms: list[str]) -> UnitContext:
    return UnitContext(query=RankQuery(query, terms), files=["pkg/client.py", "docs/usage.md"])


def col(name: str) -> int:
    return UNIT_FEATURES.index(name)


@pytest.mark.parametrize(("query", "terms", "feature", "unit_text", "expected"), [
    ("What is the default timeout of Client?", ["timeout", "client"], "terms_share",
     "        self.timeout = timeout", 0.5),
    ("Does the client retry three times?", ["clients", "three"], "terms_stems_share",
     "The client retries three times.", 1.0),
    ("What is the default timeout of Client?", ["timeout", "client"], "name_in_query",
     "    def __init__(self, timeout: float = 5.0):", 1.0),
    ("What is the default timeout of Client?", ["timeout"], "file_rank", "Install it.", 1.0),
    ("What is the default timeout of Client?", ["timeout"], "has_number",
     "    def __init__(self, timeout: float = 5.0):", 1.0),
    ("Какой таймаут у клиента?", ["таймаут"], "query_cyrillic", "Install it.", 1.0),
])
def test_unit_features(query: str, terms: list[str], feature: str, unit_text: str, expected: float) -> None:
    r = rows()
    units = split_rows(r)
    x = unit_features(units, r, context(query, terms))
    assert x.shape == (len(units), len(UNIT_FEATURES))
    i = next(k for k, u in enumerate(units) if u.text == unit_text and (feature != "name_in_query" or u.name))
    assert x[i, col(feature)] == pytest.approx(expected)


def test_units_of_the_pack_fill_join_adjacent_lines_and_respect_the_cap() -> None:
    r = rows()
    units = split_rows(r)
    core = [EvidenceRow(id="d0", path="docs/usage.md", layer="D0_DOC_CHUNKS", content="# Usage", span_start=1,
                        span_end=3)]
    scores = heuristic_scores(unit_features(units, r, context("What is the default timeout?", ["timeout"])))
    packed = pack_units(core, units, scores, r, core, 4096)
    added = packed[1:]
    assert all(p.metadata.get(UNIT_MARK) for p in added)
    # the D0 row is in the core: its sentences are not added again; the code lines 40-41 become one row
    assert [(p.path, p.span_start, p.span_end) for p in added] == [("pkg/client.py", 40, 41)]
    assert "timeout: float = 5.0" in added[0].content and "self.timeout = timeout" in added[0].content
    tight = pack_units(core, units, scores, r, core, row_tokens(core[0]) + 5)
    assert tight == core


def test_no_units_no_features() -> None:
    assert unit_features([], [], context("q", [])).shape == (0, len(UNIT_FEATURES))
    assert np.array_equal(heuristic_scores(np.zeros((0, len(UNIT_FEATURES)))), np.zeros(0))


def test_the_kept_core_keeps_every_file_of_the_core() -> None:
    core = [EvidenceRow(id=str(i), path=p, layer="D0_DOC_CHUNKS")
            for i, p in enumerate(["a.md", "a.md", "b.md", "a.md", "c.md", "b.md", "d.md", "d.md"])]
    assert [r.id for r in kept_core(core, 3)] == ["0", "1", "2", "4", "6"]
    assert kept_core(core, 20) == core


def test_a_cancelled_unit_read_falls_back_to_the_rows_fill() -> None:
    from nodes.context_retrieval.merge import GatheredLanes, MergeSpec, merge_lanes
    from nodes.context_retrieval.units import UnitScorer
    from stores.errors import LaneBudgetExceeded

    def cancelled(files, embedding):  # type: ignore[no-untyped-def]
        raise LaneBudgetExceeded("statement timeout")

    row = {"id": "d0", "path": "docs/usage.md", "layer": "D0_DOC_CHUNKS", "title": "Usage",
           "content": "The client retries three times.", "span_start": 1, "span_end": 1}
    scorer = UnitScorer.__new__(UnitScorer)
    spec = MergeSpec(query="retries", key_terms=["retries"], top_k=1, plan_limit=1, read_units=cancelled,
                     unit_scorer=scorer)
    result = merge_lanes(GatheredLanes(lanes={"exact": [row]}), spec)
    assert [r.id for r in result.rows] == ["d0"] and result.core == 1


def test_the_unit_fill_keeps_the_core_ahead_and_counts_it() -> None:
    from nodes.context_retrieval.merge import GatheredLanes, MergeSpec, merge_lanes
    from nodes.context_retrieval.units import load_unit_scorer

    r = rows()

    def read(files, embedding):  # type: ignore[no-untyped-def]
        return [x for x in r if x["path"] in files], {}

    head = dict(r[2], content="# Usage", span_end=1)
    spec = MergeSpec(query="What is the default timeout of the client?", key_terms=["timeout", "client"],
                     top_k=1, plan_limit=1, read_units=read, unit_scorer=load_unit_scorer())
    code = {**r[0], "id": "c0"}
    result = merge_lanes(GatheredLanes(lanes={"exact": [head, code]}), spec)
    assert result.core == 1 and result.rows[0].id == "d0"  # the core (top_k 1) stays first and is counted
    assert all(x.metadata.get(UNIT_MARK) for x in result.rows[result.core:])
    assert any("The client retries three times." in x.content for x in result.rows[result.core:])


C3_CARD = "POST /heroes → app.main.create_hero\nrequest_model: HeroCreate\nauth: get_current_user"


@pytest.mark.parametrize(("row", "unit"), [
    # an entrypoint row (seed 003's C3): the whole card is one unit, citing its declaration's lines
    ({"layer": "C3_ENTRYPOINTS", "title": "POST /heroes", "content": C3_CARD, "span_start": 17, "span_end": 20,
      "metadata": {"entry_type": "http"}}, ("card", 17, 19, C3_CARD)),
    # a one-line schedule registration: its line
    ({"layer": "C3_ENTRYPOINTS", "title": "scheduled task purge_sessions (0 3 * * *)",
      "content": "scheduled task purge_sessions (0 3 * * *) → app.tasks.purge_sessions\ntask.cron: 0 3 * * *",
      "span_start": 30, "span_end": 30, "metadata": {}},
     ("card", 30, 30, "scheduled task purge_sessions (0 3 * * *) → app.tasks.purge_sessions\ntask.cron: 0 3 * * *")),
    # a symbol card spans its whole definition: the unit cites the lines at its top that the card stands for
    ({"layer": "C1_SYMBOL_CATALOG", "title": "pkg.client.Client.get", "content": "def get(self, url) -> Response\n"
      "Send a GET request.", "span_start": 50, "span_end": 90, "metadata": {"kind": "method"}},
     ("card", 50, 51, "def get(self, url) -> Response\nSend a GET request.")),
], ids=["c3-route", "c3-schedule-one-line", "c1-symbol"])
def test_a_card_is_one_unit_citing_its_lines(row: dict, unit: tuple[str, int, int, str]) -> None:
    units = split_rows([{"id": "k", "path": "app/main.py", **row}])
    assert [(u.kind, u.start, u.end, u.text) for u in units] == [unit]
    assert units[0].context == row["title"]


def test_a_modules_card_is_no_unit() -> None:
    row = {"id": "m", "path": "app/main.py", "layer": "C1_SYMBOL_CATALOG", "title": "app.main",
           "content": "module app.main\nDefines: app", "span_start": 1, "span_end": 200, "metadata": {"kind": "module"}}
    assert split_rows([row]) == []


def test_a_card_unit_has_its_layer_and_kind_features() -> None:
    r = [{"id": "k", "path": "app/main.py", "layer": "C3_ENTRYPOINTS", "title": "POST /heroes", "content": C3_CARD,
          "span_start": 17, "span_end": 20, "metadata": {}}]
    x = unit_features(split_rows(r), r, UnitContext(query=RankQuery("Which routes need auth?", ["auth"]),
                                                    files=["app/main.py"]))
    assert x[0, col("kind_card")] == 1.0 and x[0, col("layer_C3")] == 1.0 and x[0, col("layer_C0")] == 0.0
