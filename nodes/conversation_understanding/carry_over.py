"""Deterministic follow-up detection and carry-over of terms from earlier turns."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from nodes.layout import without_self_reference
from nodes.terms import STOPWORDS, key_terms
from nodes.tokens import (
    clean_token,
    is_endpoint_path,
    is_entity_name,
    is_file_name,
    is_identifier,
)

MAX_CARRIED_TERMS = 6
"""Terms of the earlier turns carried into a follow-up (user anchors, the answer's names, user topics)."""
MAX_ASSISTANT_ANCHORS = 3
"""Names of the last answer carried (backticked and code-like ones first)."""
MAX_ASSISTANT_FILES = 1
"""Files of the last answer carried on top of the terms (its lead citation first) when the follow-up has no
topic of its own: the router reads a path in the request as a file anchor, so retrieval looks it up by path."""
USER_TURNS_BACK = 3
"""How many earlier user turns a follow-up may reach back (a chain of follow-ups needs more than one)."""
SHORT_QUESTION_WORDS = 2


def _split(words: str) -> tuple[str, ...]:
    return tuple(words.split())


_LEADING = re.compile(r"^\W*(?:а|и|ну|тогда|ещё|еще|что\s+если|and|also|but|then|what\s+about|how\s+about"
                      r"|what\s+if)\b", re.I)
_DEFINITION = re.compile(r"\bчто\s+(?:это\s+)?такое\b", re.I)  # "что такое X" defines X, it points nowhere
# "What is X …", «Что такое X …» name their own topic: a pronoun later in the question points at X.
_NAMES_ITS_TOPIC = re.compile(
    r"^\W*(?:what\s+(?:is|are)|что\s+(?:это\s+)?такое)\s+(?!(?:it|its|this|that|these|those|they|them|there|"
    r"это|эт\w*|он\w*|его|её|ее|их|там|тут)\b)\w", re.I)
_WORD = re.compile(r"\w+", re.UNICODE)
_IDENT_PART = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_CITED_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z]{1,8}):\d+(?:\s*[-–]\s*\d+)?")
# Document text an answer quotes is data, not its topic: fenced code, and citation shapes of quoted documents
# that answer composition shows between ⟦ ⟧ (nodes.answer_composition.citations.neutralize_citations).
_FENCED = re.compile(r"(?ms)^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)")
_INERT = re.compile(r"⟦[^⟦⟧\n]*⟧")
_QUOTED_LINE = re.compile(r"(?m)^[ \t]*>.*$")  # a passage quoted from a document
_TITLE = re.compile(r"“[^”\n]*”|«[^»\n]*»")  # a document's heading named in the answer's own line
_BACKTICKED = re.compile(r"`([^`\n]{1,120})`")
_DEICTICS = frozenset(_split("""
это этого этому этим этом эту эта этой эти этих того тому тем том такое такой такая такие таким там тут
туда оттуда он она оно они его её ее ему ей им ним ней нём нем него неё нее них ими
it its this that these those there them they
"""))
# Determiners that point back at something named earlier ("этот параметр", "those processors"); English
# "that" is left out, since it as often opens a clause ("a function that returns").
_DEMONSTRATIVES = frozenset(_split("этот эта эту этой этим этом эти этих этого этому these those this"))
# Words that name an action or an aspect but no topic: a question made only of them needs an earlier turn
# ("Как это отключить?", "And how do I test it?"). Russian ones are prefixes so inflections fall in;
# English ones are whole words, since English prefixes collide with topics ("add" / "address").
_GENERIC_PREFIXES = _split("""
настр отключ выключ включ сдела добав использ провер тест пример значен умолч описан работ задат задав
измен убра удалить удаля делат делае получ вызв запуск запуст вариант способ случа нужн надо можн лучш
правил подробн ещё документ файл порядк разниц отлич почему зачем
""")
_GENERIC_WORDS = frozenset(_split("""
код кода коде коду кодом
configure configuring setup set enable enabled enabling disable disabled disabling turn off add adding
remove removing change changing make making get getting test tests testing tested example examples default
defaults value values way ways possible need needs want instead work works run runs running happen
happens order call calls check write create creating define declare return returns mean means differ
difference better best case cases more detail details other again else several many multiple inside
within without thing things just like
"""))
# Function words the shared STOPWORDS leave in (they are harmless there, but noise when carried over, and
# no topic when judging whether a question has one of its own).
_EXTRA_STOP = frozenset(_split("""
какому какую каком какого которые который которая которое которых после перед через около сначала потом
сейчас снова один одна одно
every each while before after later once still only also have has had know should must might may
really just even than then very much own
"""))
# Words asking where a thing is ("А где он определён?", "в каком файле это реализовано?", "where is it
# defined?"): a question made of them has no topic of its own. Kept out of `is_generic_term`, which the
# analysis and retrieval stages share.
_WHERE_PREFIXES = _split("реализ определ объявл")
_WHERE_WORDS = frozenset(_split("defined declared implemented located"))
# Russian verb endings (infinitive, present, past): verbs make poor retrieval terms when carried over.
_VERB_ENDINGS = ("ть", "ться", "тся", "чь", "ает", "яет", "ует", "еет", "ают", "яют", "уют", "ил", "ял")


class StandaloneRequest(BaseModel):
    """The request the rest of the graph works on (derived once per turn, read by every later stage)."""

    model_config = ConfigDict(frozen=True)

    text: str
    """What retrieval searches for: the question, plus carried-over terms for a follow-up (or the LLM's
    standalone rewrite)."""
    question: str = ""
    """The user's own words of this turn (its language is the answer's language)."""
    carried_terms: list[str] = Field(default_factory=list)
    """Terms taken from earlier turns, as written there (`CORS`, `FastAPI`, `max_age`)."""
    is_follow_up: bool = False
    """True when the question leans on earlier turns."""
    rewritten_by_llm: bool = False
    """True when `text` is the chat model's rewrite rather than the deterministic carry-over."""
    key_terms: list[str] = Field(default_factory=list)
    """Distinctive words of `text` plus the router's target terms (`nodes.terms.key_terms`): filled once
    by intent_routing (`with_route_terms`) and read by the gate and the analysis."""

    def with_route_terms(self, target_terms: Sequence[str]) -> StandaloneRequest:
        """This request with its key terms derived from its text and the router's target terms."""
        return self.model_copy(update={"key_terms": key_terms(self.text, target_terms)})


def is_generic_term(word: str) -> bool:
    """A lower-case key term that names an action or aspect but no topic (`настроить`, `default`)."""
    return word in _GENERIC_WORDS or (not word.isascii() and word.startswith(_GENERIC_PREFIXES))


def topic_terms(text: str) -> list[str]:
    """Key terms of `text` that name a topic rather than an action (lower-case, in text order)."""
    return [t for t in key_terms(text) if not is_generic_term(t) and t not in _EXTRA_STOP and t not in _DEICTICS
            and t not in _WHERE_WORDS and not t.startswith(_WHERE_PREFIXES)]


def _anchor(raw: str, sentence_start: bool) -> str | None:
    """The code-like or proper-name part of a token (`CORS`, `max_age`, `/docs`, `--proxy-headers`)."""
    token = clean_token(raw).lstrip("@")
    if not token.isascii() or not any(ch.isalpha() for ch in token) or token.lower() in STOPWORDS:
        return None
    if token.startswith("--") and len(token) > 3:
        return token.split("=", 1)[0]
    if is_file_name(token) or is_endpoint_path(token):
        return token
    if "-" in token and any(ch.isupper() for ch in token) and "(" not in token:
        return token  # header names: X-Forwarded-For
    if any(ch in token for ch in "(=\"'"):
        match = _IDENT_PART.match(token)
        token = match.group(0) if match else ""
    if not token or not token.replace("_", "").replace(".", "").isalnum():
        return None
    if is_identifier(token) or is_entity_name(token):
        return token
    if token.isupper() and len(token) >= 2:
        return token  # acronyms: CORS, UI, JWT
    if token[0].isupper() and len(token) >= 3 and not sentence_start:
        return token  # proper names mid-sentence: Swagger, Docker, Celery
    return None


def anchors_of(text: str) -> list[str]:
    """Identifiers, names, files, endpoints and options of `text`, as written, deduped in order."""
    found: dict[str, None] = {}
    tokens = text.split()
    for i, raw in enumerate(tokens):
        sentence_start = i == 0 or tokens[i - 1].endswith((".", "!", "?", ":"))
        anchor = _anchor(raw, sentence_start)
        if anchor:
            found.setdefault(anchor, None)
    return list(found)


def _points_back(text: str, *, relative_that: bool = False) -> bool:
    """A pronoun or deictic word comes before any name the question gives: "Which of them holds the HTTP
    routes?" points at an earlier turn, "What is `TestClient` … to use it?" at the name it gave.

    With `relative_that`, an English "that" after a content word is read as a relative pronoun ("a
    middleware that adds"), and only "that" after a function word or at the end points back ("about that",
    "before shipping that?").
    """
    tokens = text.split()
    for i, raw in enumerate(tokens):
        if _anchor(raw, i == 0 or tokens[i - 1].endswith((".", "!", "?", ":"))):
            return False
        words = [w.lower() for w in _WORD.findall(raw)]
        if relative_that and words == ["that"] and i + 1 < len(tokens) and i > 0:
            before = [w.lower() for w in _WORD.findall(tokens[i - 1])]
            if before and before[-1] not in STOPWORDS and before[-1] not in _EXTRA_STOP:
                continue
        if any(w in _DEICTICS for w in words):
            return True
    return False


def is_follow_up(question: str, history: Sequence[dict[str, str]]) -> bool:
    """Whether `question` needs earlier turns to be understood.

    Signals (Russian and English): a leading connective ("а ", "и ", "and ", "what about", "what if"), no
    topic terms of its own, a pronoun or deictic word ("это", "там", "it", "they") with few topic terms and
    before any name of the question's own, a demonstrative before a noun ("эту настройку", "those
    processors"), or a very short question without anchors. Without an earlier user turn nothing can be
    carried over.
    """
    if not any(turn.get("role") == "user" and turn.get("content", "").strip() for turn in history):
        return False
    if _LEADING.match(question):
        return True
    topics = topic_terms(question)
    if not topics:
        return True
    text = without_self_reference(_DEFINITION.sub(" ", question))
    tokens = [w.lower() for w in _WORD.findall(text)]
    if len(topics) <= 3 and not _NAMES_ITS_TOPIC.match(question) and _points_back(text, relative_that=len(topics) > 2):
        return True
    if any(a in _DEMONSTRATIVES and b not in _DEICTICS for a, b in zip(tokens, tokens[1:], strict=False)):
        return True  # "this option", "эту настройку": a thing of an earlier turn, however long the question
    return len(question.split()) <= SHORT_QUESTION_WORDS and len(topics) <= 1 and not anchors_of(question)


def _surface_topics(text: str) -> list[str]:
    """Topic words of a user turn as written there; Russian verbs are left behind."""
    topics = set(topic_terms(text))
    out: dict[str, None] = {}
    for match in _WORD.finditer(text):
        word, low = match.group(0), match.group(0).lower()
        if low in topics and not (not low.isascii() and low.endswith(_VERB_ENDINGS)):
            # A capital that only opens a sentence is not a name: carried on as "Пишу" into the middle of
            # the request, it read as a proper name the index lacks, and the gate refused the question.
            out.setdefault(low if _opens_sentence(text, match.start()) else word, None)
    return list(out)


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in ".!?:"


_LABEL = re.compile(r"\b\w+:(?=\s)")


@dataclass(frozen=True)
class AnswerTopic:
    """What an assistant answer is about, as far as retrieval can use it."""

    files: tuple[str, ...] = ()
    """Files it cites (`path:lines`, its lead citation first), then files it names in its own words."""
    names: tuple[str, ...] = ()
    """Names it gives: backticked ones first, then code-like tokens of its prose (`max_age`, `app.websocket`,
    `RetryPolicy`, `--reload`, `/docs`), then names in plain words (`Swagger`, `JWT`)."""


def _code_name(raw: str) -> str | None:
    """The code-like part of a token of an answer (plain capitalised words and acronyms come after these:
    an answer's headings and sentences are full of them)."""
    anchor = _anchor(raw, True)
    if anchor is None or is_file_name(anchor):
        return None
    if anchor.startswith(("-", "/")) or is_identifier(anchor) or is_entity_name(anchor):
        return anchor
    return None


def answer_topic(text: str) -> AnswerTopic:
    """The files and code names of an assistant answer, read from its own words only.

    Fenced code, quoted lines (`> …`) and ⟦inert⟧ citation shapes are document text the answer quotes:
    data, not the answer's topic, so nothing in them is taken (an instruction planted in a document cannot
    reach the request); the rest is read for tokens only, never as instructions.
    """
    prose = _QUOTED_LINE.sub(" ", _INERT.sub(" ", _FENCED.sub(" ", text)))
    files: dict[str, None] = {m.group(1): None for m in _CITED_PATH.finditer(prose)}
    names: dict[str, None] = {}
    for match in _BACKTICKED.finditer(prose):
        inner = match.group(1).strip()
        if is_file_name(clean_token(inner)):
            files.setdefault(clean_token(inner), None)
        elif len(inner.split()) == 1 and (name := _anchor(inner, True) or _plain_name(inner)):
            names.setdefault(name, None)
    rest = _LABEL.sub(" ", _BACKTICKED.sub(" ", _CITED_PATH.sub(" ", prose)))  # "Path:" labels are layout
    for raw in rest.split():
        token = clean_token(raw)
        if is_file_name(token) and "/" in token:
            files.setdefault(token, None)
        elif name := _code_name(raw):
            names.setdefault(name, None)
    for line in rest.splitlines():  # then names in plain words (`Request`, `Swagger`, `JWT`); a line opens
        for name in anchors_of(_TITLE.sub(" ", line)):  # a sentence, and a heading's words are no names
            if not is_file_name(name):
                names.setdefault(name, None)
    lowered = {f.lower() for f in files}
    return AnswerTopic(files=tuple(files),
                       names=tuple(n for n in names if n.lower() not in lowered and not spells_a_route(n)))


ROUTE_WORDS = frozenset({"DOCS", "GENERAL", "DOC_EXPLAIN", "GENERAL_QA", "SUMMARY", "FIND_FILES"})
"""Seed 002's route vocabulary (domains, intents, subintents; spelled here, not imported: this stage runs before
intent_routing). A name of an earlier answer that spells a route (`DOC_EXPLAIN.FIND_FILES`) is no topic, and
carried into the request it would read to an LLM router like a route chosen for it."""


def spells_a_route(name: str) -> bool:
    """`name` is made of seed 002's route words only, as the catalog writes them (`FIND_FILES`,
    `DOC_EXPLAIN/FIND_FILES`, `GENERAL.SUMMARY`); `/docs` or `summary` are ordinary names."""
    parts = [p for p in re.split(r"[/.:\s]+", name) if p]
    return bool(parts) and all(p in ROUTE_WORDS for p in parts)


def _plain_name(inner: str) -> str | None:
    """A backticked lower-case word is code (`confirm`, `lifespan`): the backticks say so."""
    word = clean_token(inner)
    return word if re.fullmatch(r"[A-Za-z_]\w{2,}", word) and word.lower() not in STOPWORDS else None


def last_answer(history: Sequence[dict[str, str]]) -> str:
    """The answer the question follows: the last turn, when it is the assistant's."""
    return history[-1].get("content", "") if history and history[-1].get("role") == "assistant" else ""


def _carry(question: str, history: Sequence[dict[str, str]]) -> list[str]:
    """Terms of earlier turns the question leaves out: user anchors, the answer's names, user topics, and
    the answer's lead file on top."""
    own = {w.lower()[:5] for w in _WORD.findall(question)} | {a.lower() for a in anchors_of(question)}
    user_anchors: list[str] = []
    user_topics: list[str] = []
    user_turns = [t.get("content", "") for t in history if t.get("role") == "user"]
    for text in reversed(user_turns[-USER_TURNS_BACK:]):
        user_anchors += anchors_of(text)
        user_topics += _surface_topics(text)
        if len(user_anchors) + len(user_topics) >= 2:
            break  # the latest substantive turn wins; older turns only fill in for bare follow-ups
    topic = answer_topic(last_answer(history))

    def fresh(terms: Sequence[str], taken: Sequence[str]) -> list[str]:
        """`terms` the question and `taken` do not have yet (case-insensitive; a 5-letter stem for words)."""
        kept: list[str] = []
        seen = {t.lower() for t in taken}
        for term in terms:
            low = term.lower()
            if low in own or low in seen or (len(low) >= 5 and low[:5] in own and low.isalpha()):
                continue
            seen.add(low)
            kept.append(term)
        return kept

    names = fresh(topic.names, user_anchors)[:MAX_ASSISTANT_ANCHORS]
    terms = fresh([*user_anchors, *names, *user_topics], ())[:MAX_CARRIED_TERMS]
    if topic_terms(question):
        # A follow-up with a topic of its own ("what if it fails?", "а если за Nginx?") is as often answered
        # in a neighbouring file: the answer's file, seeded by path, pushed that one down (measured on the
        # dev follow-ups with Lotsman's own answers as the earlier turn, docs/logic/conversation_understanding.md).
        return terms
    # A bare follow-up ("где это описано?", "and how do I test it?") leans on the answer as a whole: its lead
    # file is the best pointer. The router reads it as a file anchor and retrieval looks it up by path.
    return [*terms, *fresh(topic.files, terms)[:MAX_ASSISTANT_FILES]]


def standalone_request(question: str, history: Sequence[dict[str, str]]) -> StandaloneRequest:
    """Resolve a follow-up deterministically by carrying terms over from earlier turns.

    Args:
        question: The user's current turn.
        history: Earlier turns, oldest first, as `{"role": "user" | "assistant", "content": ...}`.

    Returns:
        The question unchanged when it stands alone; otherwise the question with the key terms and
        anchors of the latest earlier user turn, and the code names and lead file of the answer it
        follows (`answer_topic`), appended in parentheses, e.g. `"А как это отключить? (CORS FastAPI
        CORSMiddleware docs/tutorial/cors.md)"`.
    """
    question = question.strip()
    if not is_follow_up(question, history):
        return StandaloneRequest(text=question, question=question)
    carried = _carry(question, history)
    text = f"{question} ({' '.join(carried)})" if carried else question
    return StandaloneRequest(text=text, question=question, carried_terms=carried, is_follow_up=True)
