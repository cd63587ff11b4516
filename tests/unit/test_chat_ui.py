"""Issue 27 item 3: the graph as chat UIs use it — content-block messages, linked citations, no-stream tags,
the question-log hook."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from graph.nodes import split_conversation, turn_record
from graph.state import RetrievalReport
from nodes.answer_composition import Answer, Citation
from nodes.answer_composition.links import citation_href, link_citations
from nodes.context_analysis import Analysis
from nodes.conversation_understanding import StandaloneRequest
from nodes.conversation_understanding.messages import content_text, unlink_citations
from nodes.intent_routing import RouteResult

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


# --- content blocks ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("content", "text"), [
    ("Как настроить CORS?", "Как настроить CORS?"),
    ([{"type": "text", "text": "Как настроить CORS?"}], "Как настроить CORS?"),
    ([{"type": "text", "text": "Как настроить CORS?"}, IMAGE], "Как настроить CORS?"),
    ([IMAGE, {"type": "text", "text": "что на картинке"}], "что на картинке"),
    ([{"type": "text", "text": "первое"}, {"type": "text", "text": "второе"}], "первое\nвторое"),
    (["строка", {"type": "text", "text": "блок"}], "строка\nблок"),
    # an attached text file is a file, not the question
    ([{"type": "text", "text": "вопрос"}, {"type": "text-plain", "text": "FILE BODY", "mime_type": "text/plain"}],
     "вопрос"),
    ([{"type": "file", "source_type": "base64", "data": "AAAA", "mime_type": "application/pdf"}], ""),
    ([{"type": "reasoning", "reasoning": "думаю"}, {"type": "text", "text": "ответ"}], "ответ"),
    ([{"type": "text"}, {"type": "text", "text": None}], ""),
    ([IMAGE], ""),
])
def test_content_text_reads_text_blocks_only(content: Any, text: str) -> None:
    assert content_text(content) == text


def test_split_conversation_reads_block_messages_like_strings() -> None:
    """What agent-chat-ui sends: every human turn as a list of blocks."""
    blocks = [HumanMessage(content=[{"type": "text", "text": "Как настроить CORS?"}, IMAGE]),
              AIMessage(content="Добавьте CORSMiddleware [docs/cors.md:7-8]."),
              HumanMessage(content=[{"type": "text", "text": "А как это отключить?"},
                                    {"type": "text-plain", "text": "x", "mime_type": "text/plain"}])]
    plain = [HumanMessage("Как настроить CORS?"), AIMessage("Добавьте CORSMiddleware [docs/cors.md:7-8]."),
             HumanMessage("А как это отключить?")]
    assert split_conversation(blocks) == split_conversation(plain)
    assert split_conversation(blocks)[0] == "А как это отключить?"


def test_a_turn_with_no_text_block_is_an_empty_question() -> None:
    assert split_conversation([HumanMessage(content=[IMAGE])]) == ("", [])


def test_linked_answers_in_history_read_as_their_citations() -> None:
    """The graph's own linked AIMessage comes back as history on the next turn: the carry-over must see
    `[docs/cors.md:7-8]`, not a URL full of query words."""
    href = citation_href(Citation(path="docs/cors.md", start_line=7, end_line=8), "s", "http://h:2024")
    linked = f"Добавьте CORSMiddleware [docs/cors.md:7-8]({href})."
    _, history = split_conversation([HumanMessage("q"), AIMessage(linked), HumanMessage("и что дальше?")])
    assert history[1]["content"] == "Добавьте CORSMiddleware [docs/cors.md:7-8]."
    assert unlink_citations("[a link](https://example.com/x)") == "[a link](https://example.com/x)"


# --- linked citations ---------------------------------------------------------------------------------------
CORS = Citation(path="docs/cors.md", start_line=7, end_line=8)
MAIN = Citation(path="app/main.py", start_line=6, end_line=7)


def href(cite: Citation) -> str:
    return citation_href(cite, "docs", "")


@pytest.mark.parametrize(("text", "cites", "linked"), [
    ("Добавьте X [docs/cors.md:7-8].", [CORS],
     "Добавьте X [docs/cors.md:7-8](/lotsman/read?session=docs&path=docs/cors.md&start=7&end=8)."),
    ("см. [docs/cors.md:7-8, app/main.py:6-7]", [CORS, MAIN],
     "см. [docs/cors.md:7-8](/lotsman/read?session=docs&path=docs/cors.md&start=7&end=8), "
     "[app/main.py:6-7](/lotsman/read?session=docs&path=app/main.py&start=6&end=7)"),
    ("bare docs/cors.md:7-8 here", [CORS],
     "bare [docs/cors.md:7-8](/lotsman/read?session=docs&path=docs/cors.md&start=7&end=8) here"),
    # not a verified citation: stays text
    ("[docs/other.md:1-2]", [CORS], "[docs/other.md:1-2]"),
    # quoted document text (inert) and fenced code are data, not the answer's citations
    ("⟦docs/cors.md:7-8⟧", [CORS], "⟦docs/cors.md:7-8⟧"),
    ("```\n[docs/cors.md:7-8]\n```", [CORS], "```\n[docs/cors.md:7-8]\n```"),
    # a link the model wrote is left as written
    ("[docs/cors.md:7-8](https://x)", [CORS], "[docs/cors.md:7-8](https://x)"),
    ("no citations", [], "no citations"),
])
def test_link_citations(text: str, cites: list[Citation], linked: str) -> None:
    assert link_citations(text, cites, href) == linked


def test_mixed_group_keeps_its_brackets() -> None:
    out = link_citations("[docs/cors.md:7-8, note]", [CORS], href)
    assert out == f"[[docs/cors.md:7-8]({href(CORS)}), note]"


@pytest.mark.parametrize(("session", "path", "base", "url"), [
    ("docs", "docs/a b.md", "", "/lotsman/read?session=docs&path=docs/a%20b.md&start=1&end=2"),
    ("мой проект", "x(1).md", "http://127.0.0.1:2024/",
     "http://127.0.0.1:2024/lotsman/read?session=%D0%BC%D0%BE%D0%B9%20%D0%BF%D1%80%D0%BE%D0%B5%D0%BA%D1%82"
     "&path=x%281%29.md&start=1&end=2"),
])
def test_citation_href_is_one_markdown_safe_url(session: str, path: str, base: str, url: str) -> None:
    """No spaces or parentheses: a Markdown link target ends at either."""
    assert citation_href(Citation(path=path, start_line=1, end_line=2), session, base) == url


def test_extractive_answer_links_every_citation_it_states() -> None:
    """The extractive answer's own citation lines (quote blocks end with `[path:a-b]`) all become links."""
    from nodes.answer_composition import compose_extractive
    from nodes.context_analysis import FileEvidence, Span

    span = Span(row_id="r1", path="docs/cors.md", start_line=7, end_line=8, text="Добавьте `CORSMiddleware`.\nИ всё.",
                section="Как включить CORS")
    analysis = Analysis(spans=[span], passages=[span], sufficient=True, language="ru",
                        files=[FileEvidence(path="docs/cors.md", start_line=7, end_line=8, best_rank=1)])
    answer = compose_extractive("Как включить CORS?", analysis, RouteResult(user_query="q"))
    linked = link_citations(answer.text, answer.citations, href)
    assert answer.citations and all(f"[{c}]({href(c)})" in linked for c in answer.citations)
    assert linked.replace(f"({href(CORS)})", "") == answer.text


# --- the question log -----------------------------------------------------------------------------------
def test_turn_record_takes_the_servers_run_id_and_cited_files() -> None:
    answer = Answer(text="t", citations=[CORS, MAIN, CORS])
    record = turn_record({"metadata": {"run_id": "r-1"}}, "docs", StandaloneRequest(text="q (x)", question="q"),
                         RetrievalReport(relevant=True, coverage=0.7), answer, Analysis())
    assert record == {"session_name": "docs", "question": "q", "run_id": "r-1", "abstained": False,
                      "confidence": 0.7, "top_files": ["docs/cors.md", "app/main.py"], "source": "server"}


def test_turn_record_of_a_refusal_names_the_nearest_files_and_the_cli() -> None:
    from nodes.context_analysis import FileEvidence

    analysis = Analysis(files=[FileEvidence(path="docs/a.md", start_line=1, end_line=2, best_rank=1)])
    record = turn_record({"run_id": "u-2", "metadata": {"lotsman_source": "cli"}}, "s",
                         StandaloneRequest(text="q", question="q"), None, Answer(text="no", abstained=True),
                         analysis)
    assert (record["run_id"], record["source"], record["top_files"], record["abstained"], record["confidence"]) == \
        ("u-2", "cli", ["docs/a.md"], True, None)


def test_graph_logs_each_turn_when_logging_is_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph calls `record_turn` once per answered turn with logging on, never with it off, and a log
    failure does not cost the answer."""
    from graph import question_logging
    from graph.builder import build_graph
    from graph.context import Context
    from graph.deps import GraphDeps
    from graph.settings import Settings

    calls: list[dict[str, Any]] = []

    def record(settings: Any, **kwargs: Any) -> None:
        calls.append(kwargs)
        raise RuntimeError("log table gone")

    monkeypatch.setattr(question_logging, "record_turn", record)
    question = [HumanMessage(content=[IMAGE])]  # an empty question: answered without a database
    for on in (False, True):
        graph = build_graph(GraphDeps(settings=Settings(log_questions=on)))
        out = asyncio.run(graph.ainvoke({"messages": question}, {"metadata": {"run_id": "run-7"}},
                                        context=Context(rag_session_id="docs")))
        assert out["abstained"] is True and out["answer"]
    assert len(calls) == 1
    assert calls[0]["run_id"] == "run-7" and calls[0]["session_name"] == "docs" and calls[0]["source"] == "server"


def test_turn_record_reads_the_run_id_where_the_server_puts_it() -> None:
    record = turn_record({"configurable": {"run_id": "srv-1"}, "metadata": {}}, "s", StandaloneRequest(text="q"),
                         None, Answer(text="a"), Analysis())
    assert record["run_id"] == "srv-1"


@pytest.mark.parametrize(("config", "base"), [
    ({"metadata": {"lotsman_base_url": "http://127.0.0.1:2024/"}}, "http://127.0.0.1:2024"),
    ({"configurable": {"lotsman_base_url": "https://docs.example.com"}}, "https://docs.example.com"),
    ({"metadata": {"lotsman_base_url": "javascript:alert(1)"}}, ""),  # a link target a client could run
    ({}, ""),
])
def test_link_base(config: dict[str, Any], base: str) -> None:
    from graph.nodes import link_base

    assert link_base(config) == base  # type: ignore[arg-type]


def test_assistant_metadata_key_is_the_graphs() -> None:
    from graph import cli_assistants, nodes

    assert cli_assistants.BASE_URL_KEY == nodes.BASE_URL_KEY
    spec = cli_assistants.assistant_spec("docs", "http://127.0.0.1:2024/")
    assert spec["context"] == {"rag_session_id": "docs"} and "config" not in spec
    assert spec["metadata"][nodes.BASE_URL_KEY] == "http://127.0.0.1:2024"
    assert cli_assistants.assistant_id("docs") == cli_assistants.assistant_id("docs") != \
        cli_assistants.assistant_id("docs2")
