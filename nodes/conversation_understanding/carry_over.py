"""Deterministic follow-up detection and carry-over of terms from earlier turns."""

from __future__ import annotations

import re
from collections.abc import Sequence

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
MAX_ASSISTANT_ANCHORS = 3
USER_TURNS_BACK = 3
"""How many earlier user turns a follow-up may reach back (a chain of follow-ups needs more than one)."""
SHORT_QUESTION_WORDS = 2


def _split(words: str) -> tuple[str, ...]:
    return tuple(words.split())


_LEADING = re.compile(r"^\W*(?:а|и|ну|тогда|ещё|еще|and|also|but|then|what\s+about|how\s+about)\b", re.I)
_DEFINITION = re.compile(r"\bчто\s+(?:это\s+)?такое\b", re.I)  # "что такое X" defines X, it points nowhere
_WORD = re.compile(r"\w+", re.UNICODE)
_IDENT_PART = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_CITED_PATH = re.compile(r"([\w./-]+\.[A-Za-z]{1,8}):\d+(?:-\d+)?")
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
# Function words the shared STOPWORDS leave in (they are harmless there, but noise when carried over).
_EXTRA_STOP = frozenset(_split("какому какую каком какого которые который которая которое которых после "
                               "перед через около сначала потом сейчас снова один одна одно"))
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
    return [t for t in key_terms(text) if not is_generic_term(t) and t not in _EXTRA_STOP and t not in _DEICTICS]


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


def is_follow_up(question: str, history: Sequence[dict[str, str]]) -> bool:
    """Whether `question` needs earlier turns to be understood.

    Signals (Russian and English): a leading connective ("а ", "и ", "and ", "what about"), no topic
    terms of its own, a pronoun or deictic word ("это", "там", "it", "they") with few topic terms, a
    demonstrative before a noun ("эту настройку", "those processors"), or a very short question without
    anchors. Without an earlier user turn nothing can be carried over.
    """
    if not any(turn.get("role") == "user" and turn.get("content", "").strip() for turn in history):
        return False
    if _LEADING.match(question):
        return True
    topics = topic_terms(question)
    if not topics:
        return True
    tokens = [w.lower() for w in _WORD.findall(without_self_reference(_DEFINITION.sub(" ", question)))]
    if set(tokens) & _DEICTICS and len(topics) <= 2 and not anchors_of(question):
        return True  # (a pronoun after a name the question gives points at that name: "RagSession… у неё")
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


def _carry(question: str, history: Sequence[dict[str, str]]) -> list[str]:
    """Terms of earlier turns the question leaves out: user anchors, assistant anchors, user topics."""
    own = {w.lower()[:5] for w in _WORD.findall(question)} | {a.lower() for a in anchors_of(question)}
    user_anchors: list[str] = []
    user_topics: list[str] = []
    user_turns = [t.get("content", "") for t in history if t.get("role") == "user"]
    for text in reversed(user_turns[-USER_TURNS_BACK:]):
        user_anchors += anchors_of(text)
        user_topics += _surface_topics(text)
        if len(user_anchors) + len(user_topics) >= 2:
            break  # the latest substantive turn wins; older turns only fill in for bare follow-ups
    assistant = next((t.get("content", "") for t in reversed(history) if t.get("role") == "assistant"), "")
    cited = [m.group(1) for m in _CITED_PATH.finditer(assistant)][:1]
    # "Path:", "Sources:"-style labels in an answer are layout, not topic.
    assistant_text = _LABEL.sub(" ", _CITED_PATH.sub(" ", assistant))
    helper = [a for a in anchors_of(assistant_text) if not is_file_name(a)]
    helper = helper[:MAX_ASSISTANT_ANCHORS]
    out: dict[str, None] = {}
    for term in [*user_anchors, *helper, *user_topics, *cited]:
        low = term.lower()
        if low in own or (len(low) >= 5 and low[:5] in own and low.isalpha()):
            continue
        if low not in {t.lower() for t in out}:
            out.setdefault(term, None)
    terms = list(out)
    # The cited file of the last answer is the strongest pointer for "где это описано?": keep it in.
    if cited and cited[0] in terms and len(terms) > MAX_CARRIED_TERMS:
        terms.remove(cited[0])
        return [*terms[: MAX_CARRIED_TERMS - 1], cited[0]]
    return terms[:MAX_CARRIED_TERMS]


def standalone_request(question: str, history: Sequence[dict[str, str]]) -> StandaloneRequest:
    """Resolve a follow-up deterministically by carrying terms over from earlier turns.

    Args:
        question: The user's current turn.
        history: Earlier turns, oldest first, as `{"role": "user" | "assistant", "content": ...}`.

    Returns:
        The question unchanged when it stands alone; otherwise the question with the key terms and
        anchors of the latest earlier user turn (and anchors/the first cited file of the last answer)
        appended in parentheses, e.g. `"А как это отключить? (CORS FastAPI)"`.
    """
    question = question.strip()
    if not is_follow_up(question, history):
        return StandaloneRequest(text=question, question=question)
    carried = _carry(question, history)
    text = f"{question} ({' '.join(carried)})" if carried else question
    return StandaloneRequest(text=text, question=question, carried_terms=carried, is_follow_up=True)
