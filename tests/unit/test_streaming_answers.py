"""Issue 27 item 4: `lotsman ask` / `chat` print the LLM answer as it streams, and what ends up printed is the
checked answer the non-streamed command prints."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from graph.cli_commands import AnswerPrinter, streams
from nodes.answer_composition.citations import verify_citations
from nodes.evidence import EvidenceRow

SHOWN = [EvidenceRow(id="p1", path="docs/cors.md", layer="D0_DOC_CHUNKS", content="x", span_start=5, span_end=9)]


class Recorder(io.StringIO):
    """stdout that remembers each write (a token printed as it came is a write of its own)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


def run(tokens: list[str], final: str | None = None) -> tuple[Recorder, Recorder, str]:
    out, err = Recorder(), Recorder()
    printer = AnswerPrinter(out, err)
    printer.shown = SHOWN
    for token in tokens:
        printer.feed(token)
    answer = final if final is not None else verify_citations("".join(tokens), SHOWN)[0]
    printer.finish(answer)
    return out, err, answer


def split(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("text", [
    "Добавьте `CORSMiddleware` [docs/cors.md:7-8].",
    "  Ведущие пробелы и хвост  \n\n",
    "Ещё есть секретный файл [docs/secret.md:1-99]. И всё [docs/cors.md:5-6].",
    "Группа [docs/cors.md:5-6, docs/secret.md:1-2] и текст.",
    "- пункт [docs/other.md:1-2]\n- второй [docs/cors.md:5-9]",
    "Не ссылка [см. выше] и индекс arr[0] и [ссылка](https://example.com).",
    "Открытая скобка [без конца\nи дальше текст.",
    "```python\nx = a[1]\n```\n[docs/cors.md:5-9]",
    "",
])
@pytest.mark.parametrize("size", [1, 3, 12])
def test_printed_text_is_the_checked_answer(text: str, size: int) -> None:
    out, err, answer = run(split(text, size))
    assert out.getvalue() == answer + "\n"
    assert err.getvalue() == ""


def test_tokens_are_printed_as_they_come() -> None:
    out, _, answer = run(split("Первое предложение. Второе предложение [docs/cors.md:7-8]. Третье.", 4))
    assert len([w for w in out.writes if w.strip()]) > 5
    assert out.getvalue() == answer + "\n"


def test_an_invalid_citation_is_never_printed() -> None:
    out, _, _ = run(split("Секрет [docs/secret.md:1-99] тут.", 2))
    assert "secret" not in out.getvalue()


def test_a_replaced_answer_is_printed_in_full_with_a_note() -> None:
    """The stream broke half-way and the extractive answer replaced it: said once, the checked one follows."""
    out, err, _ = run(["Начало ответа, кото"], final="Ответ — в `docs/cors.md`:\n\n> цитата [docs/cors.md:5-9]")
    assert out.getvalue().endswith("\nОтвет — в `docs/cors.md`:\n\n> цитата [docs/cors.md:5-9]\n")
    assert err.getvalue().count("\n") == 1 and err.getvalue().startswith("note: ")


def test_nothing_streamed_prints_the_answer_at_once() -> None:
    out, _, _ = run([], final="Файлы:\n1. `a.md`")
    assert out.writes[0] == "Файлы:\n1. `a.md`" and out.getvalue() == "Файлы:\n1. `a.md`\n"


def test_control_characters_are_escaped_as_in_the_plain_output() -> None:
    out, _, _ = run(["a\x1b[31mb"], final="a\x1b[31mb")
    assert "\x1b" not in out.getvalue()


@pytest.mark.parametrize(("model", "as_json", "expected"), [
    (object(), False, True), (object(), True, False), (None, False, False), (None, True, False)])
def test_streams_only_on_the_llm_path_and_not_for_json(model: object, as_json: bool, expected: bool) -> None:
    assert streams(SimpleNamespace(chat_model=model), as_json=as_json) is expected
