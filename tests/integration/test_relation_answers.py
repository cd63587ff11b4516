"""Issue 29: "who uses X?" over module cards with relation fields lists every user the index holds an edge for,
each with the frontmatter line that states it, and no edge of another relation (asked through the real CLI,
indexed with the real embedder)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import graph.cli as cli
from stores.database import Database
from tests.integration.conftest import indexed_session

CARD = """---
id: {id}
title: {title}
doc_type: module
domain: {domain}
status: active
{fields}
---

# {title}

{body}
"""
MODULES = {
    "store.md": ("core.store", "Core store", "core", "writes_db: [rows]\nused_by: [mod.alpha]",
                 "The store keeps rows on disk."),
    "alpha.md": ("mod.alpha", "Alpha module", "alpha", "uses_logic: [core.store]", "Alpha renders reports."),
    "beta.md": ("mod.beta", "Beta module", "beta", "uses_logic: [core.store]\nemits_events: [beta.done]",
                "Beta sends notifications."),
    "gamma.md": ("mod.gamma", "Gamma module", "gamma", "uses_logic: [core.store, core.cache]",
                 "Gamma imports archives."),
}


@pytest.fixture(scope="module")
def modules_session(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from stores.embedders import make_embedder

    root = tmp_path_factory.mktemp("modules")
    (root / "docs" / "modules").mkdir(parents=True)
    for name, (mid, title, domain, fields, body) in MODULES.items():
        (root / "docs" / "modules" / name).write_text(
            CARD.format(id=mid, title=title, domain=domain, fields=fields, body=body), encoding="utf-8")
    (root / "README.md").write_text("# Modules\n\nFour modules and how they depend on each other.\n", encoding="utf-8")
    for session in indexed_session(db, root, "it-relations", make_embedder("use")):
        yield session.name


def _line(name: str, text: str) -> int:
    mid, title, domain, fields, body = MODULES[name]
    lines = CARD.format(id=mid, title=title, domain=domain, fields=fields, body=body).split("\n")
    return next(i for i, line in enumerate(lines, 1) if text in line)


@pytest.mark.usefixtures("cli_on_test_db")
@pytest.mark.parametrize("question", ["Who uses core.store?", "кто использует core.store?"])
def test_who_uses_lists_every_user_with_its_edge(question: str, modules_session: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ask", question, "--session", modules_session, "--json"]) == 0, capsys.readouterr().err
    answer = json.loads(capsys.readouterr().out)
    assert answer["abstained"] is False, answer["answer"]
    for user in ("mod.alpha", "mod.beta", "mod.gamma"):
        assert user in answer["answer"], answer["answer"]
    cited = {(c["path"], c["start_line"]) for c in answer["citations"]}
    # beta and gamma only state it in their own cards; alpha in its card or in the store's `used_by`
    assert ("docs/modules/beta.md", _line("beta.md", "uses_logic")) in cited, cited
    assert ("docs/modules/gamma.md", _line("gamma.md", "uses_logic")) in cited, cited
    assert cited & {("docs/modules/alpha.md", _line("alpha.md", "uses_logic")),
                    ("docs/modules/store.md", _line("store.md", "mod.alpha"))}, cited
    # edges of other relations answer another question
    assert "beta.done" not in answer["answer"] and "writes" not in answer["answer"], answer["answer"]
