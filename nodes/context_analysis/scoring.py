"""How well a candidate passage answers the question: meaning, key terms, identifiers, heading, file rank.

Weights were set on the fastapi-ru dev questions (see the module's tests for the intended orderings):
meaning carries most of the signal when an embedder is given, stemmed key terms most of it otherwise. A learned
score in their place, and a learned correction of them, lost key facts leave-one-corpus-out (issue 29, session
13: docs/logic/context_analysis_and_answer.md, "Выученного выбора passages тоже нет").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nodes.context_analysis.passages import Candidate, fold_identifier
from nodes.context_analysis.text import hits, stems_of

Embed = Callable[[list[str]], list[list[float]]]
"""The session's embedder over a batch of texts (`Embeddings.embed_documents`)."""

WITH_MEANING = {"meaning": 0.45, "terms": 0.35, "identifiers": 0.1, "heading": 0.1}
LEXICAL_ONLY = {"meaning": 0.0, "terms": 0.6, "identifiers": 0.2, "heading": 0.2}
KIND_FACTOR = {"prose": 1.0, "item": 1.0, "source": 1.0, "code": 0.9, "table": 0.85,
               "D1_DOCUMENT_CATALOG": 0.3}
"""Verbatim text over paraphrase: a catalog card names a whole document and answers little."""
SYNTHESIZED_FACTOR = 0.6
"""Facts, entities, symbol cards and other derived rows: the verbatim lines they come from win."""
SHORT_CHARS = 30
SHORT_FACTOR = 0.6
"""A one-phrase paragraph ("Tip", "Например:") rarely answers anything on its own."""
FILE_RANK_DECAY = 0.15
MAX_EMBEDDED = 12
"""Candidates embedded per question (the lexically best ones): USE costs ~5 ms a short text on 2 cores."""

USES_FOR_FULL = 3
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL_PARTS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_CODE_SHAPED = re.compile(r"[_.]|[a-z][A-Z]|^[A-Z]{2,}|^[A-Z][a-z]+[A-Z]")
_CYRILLIC = re.compile(r"[А-Яа-яЁё]")


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


def file_weight(file_rank: int) -> float:
    return 1.0 / (1.0 + FILE_RANK_DECAY * (file_rank - 1))


def term_share(text: str, q: Question) -> tuple[float, list[str]]:
    """idf-weighted share of the terms found in `text` (by stem), and the key terms among them."""
    found = hits(q.stems, stems_of(text))
    total = sum(q.idf.values())
    return (sum(q.idf[t] for t in found) / total if total else 0.0), [t for t in found if t not in q.soft]


def identifier_share(text: str, q: Question) -> float:
    if not q.identifiers:
        return 0.0
    present = set()
    for word in _IDENT.findall(text):
        present.add(fold_identifier(word))
        present.update(part.lower() for part in _CAMEL_PARTS.split(word.replace("_", "")) if len(part) >= 3)
    return sum(1 for name in q.identifiers if name in present) / len(q.identifiers)


def identifier_use(text: str, q: Question) -> float:
    """How much a definition works with the asked-about names: present, and used more than once.

    The function that computes a value names it in several statements; a model field that holds it
    names it once.
    """
    if not q.identifiers:
        return 0.0
    words = [fold_identifier(w) for w in _IDENT.findall(text)]
    uses = sum(1 for w in words if w in q.identifiers)
    return 0.5 * identifier_share(text, q) + 0.5 * min(1.0, uses / USES_FOR_FULL)


def heading_share(heading: str, q: Question) -> float:
    if not heading or not q.stems:
        return 0.0
    return len(hits(q.stems, stems_of(heading))) / len(q.stems)


def name_match(name: str, q: Question) -> float:
    """1 when a definition's name contains an asked-about name whole (`get_openapi` for `openapi`): five
    letters of `operationId` must not make class `Operation` its definition."""
    folded = fold_identifier(name)
    return 1.0 if folded and any(ident in folded for ident in q.identifiers) else 0.0


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    score: float
    terms: list[str]
    lexical: float
    """The score without meaning (used to choose which candidates are embedded)."""


def _kind_factor(c: Candidate) -> float:
    factor = KIND_FACTOR.get(c.kind, SYNTHESIZED_FACTOR)
    if c.kind in ("prose", "item") and len(c.text.strip()) < SHORT_CHARS:
        factor *= SHORT_FACTOR
    return factor


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def score_candidates(candidates: Sequence[Candidate], file_rank: dict[str, int], q: Question,
                     embed: Embed | None = None) -> list[Scored]:
    """Score every candidate; with `embed`, the MAX_EMBEDDED lexically best are embedded in one batch
    together with the question and their cosine similarity (relative to the best one) joins the score.

    Returns:
        Scored candidates, best first. An embedder failure leaves the lexical scores (logged by nobody:
        the answer is still grounded, only less well chosen).
    """
    parts = []
    for c in candidates:
        terms, found = term_share(c.text, q)
        code = c.kind == "source" or c.kind.startswith("C")  # a definition, or a symbol/entrypoint card
        names = identifier_use(c.text, q) if code else identifier_share(c.text, q)
        features = {"terms": terms, "identifiers": names,
                    "heading": name_match(c.heading, q) if code else heading_share(c.heading, q)}
        weight = _kind_factor(c) * file_weight(file_rank.get(c.row.path, len(file_rank) + 1))
        lexical = weight * sum(LEXICAL_ONLY[k] * v for k, v in features.items())
        parts.append((c, features, weight, found, lexical))
    meaning: dict[int, float] = {}
    if embed is not None and parts:
        order = sorted(range(len(parts)), key=lambda i: -parts[i][4])[:MAX_EMBEDDED]
        try:
            vectors = embed([q.text, *(parts[i][0].embed_text for i in order)])
        except Exception:  # noqa: BLE001 - any embedder failure has one handling: lexical scores only
            vectors = []
        if len(vectors) == len(order) + 1:
            sims = [max(0.0, _cosine(vectors[0], v)) for v in vectors[1:]]
            best = max(sims, default=0.0) or 1.0
            meaning = {i: s / best for i, s in zip(order, sims, strict=True)}
    weights = WITH_MEANING if meaning else LEXICAL_ONLY
    out = []
    for i, (c, features, weight, found, lexical) in enumerate(parts):
        features = {**features, "meaning": meaning.get(i, 0.0)}
        score = weight * sum(weights[k] * v for k, v in features.items())
        out.append(Scored(candidate=c, score=round(score, 4), terms=found, lexical=lexical))
    out.sort(key=lambda s: (-s.score, file_rank.get(s.candidate.row.path, 0), s.candidate.start_line))
    return out
