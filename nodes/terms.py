"""Shared text helpers of the stages: stop words, the 5-letter stem, and a request's key terms.

conversation_understanding, context_retrieval (the gate) and context_analysis all ask "which words of
this request name its topic?"; they must answer the same way, so the answer lives here. The router keeps
its own seed 002 vocabulary (`nodes/intent_routing/lexicon.py`): those lists are sorted by role (question
words, intent words, fillers) because the router detects markers with them, not only drops them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

STEM_CHARS = 5
"""The first 5 letters absorb Russian inflection when stages compare a request's words with evidence."""

MAX_KEY_TERMS = 12

WORD = re.compile(r"\w+", re.UNICODE)

# Words that say nothing about the topic (question words, fillers, generic verbs), Russian and English.
STOPWORDS = frozenset("""
как какой какая какие каким каких какое что чем чего где когда зачем почему кто кому кем чему куда откуда сколько ли
это этот эта эти этого этой тот там тут так также такое такой можно нужно надо ли или и в во на по с со
к ко о об от до из за для при про без над под через между мне меня мой моя мои нам нас наш ваш вы ты
он она оно они его её их сам себя свой есть быть был была были будет будут является делать сделать
работает работают работать использовать используется использовать сделать скажи расскажи объясни опиши
покажи найди дай подскажи пожалуйста вообще всё все всего ещё уже только очень более менее чтобы если
то же бы не нет да а но документации документация документе документ файл файле файлы описано описан
how what which where when why who whom whose does do did is are was were be been being the a an of to in
on for with by from at as about into over this that these those there here it its can could should would
use used using work works explain describe show find tell me please file files doc docs documentation
described documented page pages and or not no yes any some all my your our their
""".split())


def stem(word: str) -> str:
    """The first STEM_CHARS letters of the lower-cased word."""
    return word.lower()[:STEM_CHARS]


def key_terms(text: str, extra: Iterable[str] = ()) -> list[str]:
    """Distinctive words of a request (≥ 3 letters, not stopwords), plus given terms, deduped.

    Args:
        text: the request.
        extra: terms known from elsewhere (the router's target terms); their words come first.
    """
    out: dict[str, None] = {}
    for term in extra:
        for w in WORD.findall(term.lower()):
            if len(w) >= 3 and w not in STOPWORDS:
                out.setdefault(w, None)
    for w in WORD.findall(text.lower()):
        if len(w) >= 3 and w not in STOPWORDS and not w.isdigit():
            out.setdefault(w, None)
    return list(out)[:MAX_KEY_TERMS]


_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)


def cyrillic_share(text: str) -> float:
    """Share of the letters of `text` that are Cyrillic (0.0 for no letters)."""
    letters = _LETTER.findall(text)
    if not letters:
        return 0.0
    return sum(1 for ch in letters if _CYRILLIC.match(ch)) / len(letters)
