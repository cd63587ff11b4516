"""Signals of an absent topic and a near miss the relevance gate records (issue 41 item 3)."""

from __future__ import annotations

import pytest

from nodes.context_retrieval.gate import GateSignals, GateThresholds, decide, gate_signals, named_terms
from nodes.evidence import EvidenceRow


@pytest.mark.parametrize(("query", "names"), [
    # an English word in a Russian request is a term the index must hold
    ("Как ограничить частоту запросов (rate limiting) и возвращать 429?", ["rate", "limiting"]),
    ("Есть ли в Click автодополнение для оболочки nushell?", ["Click", "nushell"]),
    ("Как сгенерировать man-страницу для CLI на Click?", ["man", "CLI", "Click"]),
    # ... except an example value in quotes or backticks
    ("Что будет, если передать булевой опции значение вроде 'maybe'?", []),
    ("Что происходит, когда вывод направлен в пайп, например в `| head`?", []),
    # an English request keeps the old rule: plain lower-case words are not names
    ("How do I show a spinner in progressbar?", []),
    ("Как настроить CORS?", ["CORS"]),
    # a key chord is not a name (a dev question about Ctrl+C was refused: "not in the index: Ctrl+C")
    ("What does a Click program print when the user presses Ctrl+C at a prompt?", ["Click"]),
    ("Does it support C++ and C#?", ["C++"]),
    # nor is a placeholder of the kind every tutorial uses ("like MyClass.method" was refused)
    ("Can each log entry carry the method's name with its class, like MyClass.method?", []),
    ("Where is my_handler or foo_bar registered in FastAPI?", ["FastAPI"]),
    # ... but a product whose name starts like one is a name: the classic absent topic must keep its refusal
    ("Does Lotsman support MySQL?", ["Lotsman", "MySQL"]),
    ("Поддерживает ли проверку типов через MyPy и документацию на MyST?", ["MyPy", "MyST"]),
])
def test_latin_words_in_a_russian_request_are_names(query: str, names: list[str]) -> None:
    assert named_terms(query) == names


def row(rid: str, path: str, content: str, distance: float | None = None) -> EvidenceRow:
    scores = {"distance": distance} if distance is not None else {}
    return EvidenceRow(id=rid, path=path, layer="D0_DOC_CHUNKS", content=content, scores=scores)


def test_coverage_of_one_row_one_file_and_the_top_file() -> None:
    rows = [row("1", "docs/a.md", "progressbar shows a bar", 0.4),
            row("2", "docs/b.md", "the total is known", 0.5),
            row("3", "docs/a.md", "an animated label", 0.6),
            *[row(f"x{i}", f"docs/x{i}.md", "nothing here", 0.7 + i / 100) for i in range(10)]]
    s = gate_signals(rows, ["progressbar", "animated", "total", "spinner"], query="Can progressbar show a spinner?")
    assert s.terms == 4 and s.candidate_coverage == 0.75  # spinner nowhere
    assert s.row_coverage == 0.25  # no row names two of them together
    assert s.file_coverage == 0.5 and s.top_file_coverage == 0.5  # docs/a.md: progressbar and animated
    assert s.best_similarity == pytest.approx(0.6) and s.similarity_10th == pytest.approx(1 - 0.76)
    assert (s.query_ru, s.evidence_ru, s.names) == (False, False, 0)


def test_signals_of_no_rows_keep_the_request_side() -> None:
    s = gate_signals([], ["кафка"], query="Как подключить консьюмер Kafka?", absent_names=["Kafka"])
    assert (s.rows, s.terms, s.names, s.query_ru, s.absent_names) == (0, 1, 1, True, ("Kafka",))


# ---- the decision, from the request's text to the verdict (a fake index vocabulary stands in for the names lane) --

INDEX = {"click", "progressbar", "shell", "completion", "bash", "zsh", "fish", "prompt", "timeout", "cors"}


def verdict(query: str, rows: list[EvidenceRow], terms: list[str]) -> tuple[bool, str]:
    absent = [n for n in named_terms(query) if n.lower() not in INDEX]
    d = decide(gate_signals(rows, terms, query=query, absent_names=absent), GateThresholds())
    return d.passed, d.reason


ENGLISH_DOCS = [row("1", "docs/shell-completion.md", "Shell completion for bash, zsh and fish.", 0.45),
                row("2", "src/click/termui.py", "def progressbar(iterable, length=None): ...", 0.5)]


@pytest.mark.parametrize(("case", "query", "terms", "rows", "passed", "reason"), [
    ("an absent topic asked in Russian over English docs, named in English",
     "Как настроить rate limiting для команд?", ["настроить", "rate", "limiting", "команд"], ENGLISH_DOCS,
     False, "not in the index: rate, limiting"),
    ("an absent topic asked in Russian over English docs, in Russian words only",
     "Объясни, как работает блокчейн и майнинг", ["блокчейн", "майнинг"],
     [row("1", "docs/shell-completion.md", "Shell completion for bash.", 0.95)], False, "cross-lingual:"),
    ("a near miss of an existing word: completion exists, for nushell it does not",
     "Есть ли в Click автодополнение для оболочки nushell?", ["click", "автодополнение", "оболочки", "nushell"],
     ENGLISH_DOCS, False, "not in the index: nushell"),
    ("an answerable paraphrase in Russian over English docs",
     "Как включить автодополнение в zsh?", ["включить", "автодополнение", "zsh"], ENGLISH_DOCS, True,
     "cross-lingual"),
    ("an answerable question naming a key chord",
     "What does Click print when the user presses Ctrl+C at a prompt?", ["click", "print", "ctrl", "prompt"],
     [row("1", "src/click/termui.py", "def prompt(text): ... Aborted! click prints on ctrl", 0.5)], True, "key terms"),
])
def test_the_decision(case: str, query: str, terms: list[str], rows: list[EvidenceRow], passed: bool,
                      reason: str) -> None:
    got, why = verdict(query, rows, terms)
    assert got is passed, (case, why)
    assert why.startswith(reason) or reason in why, (case, why)


def test_a_same_language_request_with_few_of_its_words_among_the_candidates_passes() -> None:
    """libaudit la-022 (a Russian question over Russian docs, answerable): 0.29 of its key terms among the
    candidates was refused under the floor 0.30; the off-topic question with none of them still is."""
    few = GateSignals(rows=30, has_terms=True, terms=7, coverage=0.14, candidate_coverage=0.29, best_similarity=0.45)
    assert decide(few, GateThresholds()).passed
    none = GateSignals(rows=30, has_terms=True, terms=3, candidate_coverage=0.0, best_similarity=0.22)
    assert not decide(none, GateThresholds()).passed
