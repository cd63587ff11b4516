"""What a request asks about: its key terms (stems, idf), soft words and code-shaped names, and how much of it
a text names (`term_share`): the sufficiency of the evidence and the terms a quote covers. Which passage is
quoted is the unit scorer's choice (`units.py`), no longer a weighted sum of these."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from nodes.context_analysis.text import hits, stems_of

_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CODE_SHAPED = re.compile(r"[_.]|[a-z][A-Z]|^[A-Z]{2,}|^[A-Z][a-z]+[A-Z]")
_CYRILLIC = re.compile(r"[А-Яа-яЁё]")


def fold_identifier(word: str) -> str:
    """`operationId`, `operation_id` and `OperationID` all fold to `operationid`."""
    return word.replace("_", "").lower()


@dataclass(frozen=True)
class Question:
    """What every candidate of one analysis is scored against."""

    text: str
    stems: dict[str, str]
    """Key term → its stem."""
    idf: dict[str, float]
    identifiers: frozenset[str]
    """Folded ASCII names of the question (`operationid`, `maxage`, `cors`)."""
    soft: frozenset[str] = frozenset()
    """Terms of `stems` that only help choose passages (words like `файл` the retrieval stoplist drops):
    they never make a passage count as answering."""

    @property
    def wanted(self) -> set[str]:
        """Folded identifiers and term stems: what a code line must use to be shown."""
        return set(self.identifiers) | set(self.stems.values())


SOFT_WEIGHT = 0.5
FUNCTION_WORDS = frozenset("""
как какой какая какие каким каких какое что чем чего где когда зачем почему кто куда откуда сколько
это этот эта эти этого этой также такое такой можно нужно надо для при про без над под через между
меня есть быть будет является делать делает сделать работает использовать скажи расскажи объясни опиши
покажи найди подскажи пожалуйста вообще всего только очень более менее чтобы если описано описан
how what which where when does this that these those there here could should would explain describe
show find tell please described documented about into over with from have
""".split())
"""Question and function words: they say what kind of answer is wanted, not what it is about."""


def soft_terms(request: str, terms: Sequence[str]) -> list[str]:
    """Content words of the request (≥ 4 letters) that the key terms left out."""
    have = {t.lower() for t in terms}
    words = [w for w in re.findall(r"\w+", request.lower()) if len(w) >= 4 and not w.isdigit()]
    return list(dict.fromkeys(w for w in words if w not in have and w not in FUNCTION_WORDS))


def question_identifiers(text: str, terms: Sequence[str]) -> frozenset[str]:
    """Names the question asks about: code-shaped tokens (`max_age`, `operationId`, `CORS`, `a.b`), and in
    a Russian question any Latin word (`retrieval`, `Lotsman`) — there they are names, not prose."""
    cyrillic = bool(_CYRILLIC.search(text))
    words = [w for w in _ASCII_NAME.findall(text) if cyrillic or _CODE_SHAPED.search(w)]
    words += [t for t in terms if t.isascii() and _IDENT.fullmatch(t) and (cyrillic or _CODE_SHAPED.search(t))]
    names = {fold_identifier(part) for word in words for part in word.split(".")}
    return frozenset(n for n in names if len(n) >= 3 and n not in FUNCTION_WORDS)


def term_share(text: str, q: Question) -> tuple[float, list[str]]:
    """idf-weighted share of the terms found in `text` (by stem), and the key terms among them."""
    found = hits(q.stems, stems_of(text))
    total = sum(q.idf.values())
    return (sum(q.idf[t] for t in found) / total if total else 0.0), [t for t in found if t not in q.soft]
