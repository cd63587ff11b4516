"""Item 4 of issue 14: every entry point treats NUL bytes in a question the same way (removed)."""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from graph.cli_commands import clean_question
from graph.nodes import split_conversation
from stores.errors import InvalidQuestionError


@pytest.mark.parametrize(("raw", "clean"), [("a\x00b", "ab"), ("  вопрос\x00 ", "вопрос"), ("\x00x\x00", "x")])
def test_cli_removes_nul(raw: str, clean: str) -> None:
    assert clean_question(raw) == clean


@pytest.mark.parametrize("raw", ["", "  ", "\x00", "\x00 \x00"])
def test_cli_rejects_what_is_empty_without_nul(raw: str) -> None:
    with pytest.raises(InvalidQuestionError):
        clean_question(raw)


def test_graph_input_removes_nul_like_the_cli() -> None:
    question, history = split_conversation([HumanMessage("a\x00b"), AIMessage("ok"), HumanMessage(" c\x00d ")])
    assert question == clean_question(" c\x00d ") == "cd"
    assert history[0]["role"] == "user"


# --- issue 25, item 3: bytes that are not UTF-8 are refused before any work --------------------------------
@pytest.mark.parametrize(("raw", "byte"), [("caf\udce9", "\\xe9"), ("\udcff", "\\xff"), ("ok \ud800", "\\ud800")])
def test_cli_rejects_text_that_is_not_utf8(raw: str, byte: str) -> None:
    with pytest.raises(InvalidQuestionError, match=rf"not valid UTF-8 \(byte {re.escape(byte)}\)"):
        clean_question(raw)


@pytest.mark.parametrize("text", ["caf\udce9", "\udcff", "ok \udcc3\udca9 ok"])
def test_graph_input_refuses_text_that_is_not_utf8(text: str) -> None:
    """An in-process caller can hand the graph argv-style lone surrogates; the run stops at once with one
    line instead of failing later in PostgreSQL or the checkpointer."""
    from stores.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=r"not valid UTF-8 \(byte \\x"):
        split_conversation([HumanMessage(text)])
