"""Text helpers of context_analysis: request language, term matching by stem, distinctive tokens."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from nodes.context_analysis.models import Language
from nodes.terms import STEM_CHARS

_WORD = re.compile(r"\w+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Identifiers (snake_case, dotted, camelCase, PascalCase, CORSMiddleware), options and paths.
_CODE_TOKEN = re.compile(r"[\w.]*[_.][\w.]*\w|[A-Za-z]*[a-z][A-Z]\w*|\b[A-Z]{2,}[a-z]\w*|--[\w-]+|/[\w{}/-]+")
_MARKUP = re.compile(r"^(?:#{1,6}\s+|[*+-]\s+|>\s*|\d+[.)]\s+)+")
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_CYRILLIC = re.compile(r"[а-яё]", re.I)
_DOC_TAG = re.compile(r"<(/?\s*(?:documents?|passages?)\b)", re.I)


def stems_of(text: str) -> set[str]:
    """Stems of the words of `text`, and of the parts of snake_case and CamelCase words (`max_age` →
    `max`, `age`; `CORSMiddleware` → `cors`, `middl`)."""
    out: set[str] = set()
    for word in _WORD.findall(text):
        lower = word.lower()
        out.add(lower[:STEM_CHARS])
        if "_" in word.strip("_"):
            out.update(part[:STEM_CHARS] for part in lower.split("_") if part)
        if _CAMEL.search(word):
            out.update(part.lower()[:STEM_CHARS] for part in _CAMEL.split(word.replace("_", "")) if len(part) >= 3)
    return out


def term_stems(terms: Iterable[str]) -> dict[str, str]:
    """Term → the stem it is matched by (a multi-word term by its first word)."""
    out: dict[str, str] = {}
    for term in terms:
        words = _WORD.findall(term.lower())
        if words:
            out[term] = words[0][:STEM_CHARS] if len(words) == 1 else term.lower()[:STEM_CHARS]
    return out


def hits(stems: dict[str, str], text_stems: set[str]) -> list[str]:
    """Terms whose stem occurs in `text_stems`, in term order."""
    return [term for term, s in stems.items() if s in text_stems]


def idf_weights(stems: dict[str, str], texts: Sequence[str]) -> dict[str, float]:
    """Rarer terms among the evidence weigh more: `fastapi` is in every FastAPI page, `max_age` is not."""
    n = len(texts)
    sets = [stems_of(t) for t in texts]
    return {term: 1.0 + math.log((n + 1) / (sum(1 for s in sets if st in s) + 1))
            for term, st in stems.items()}


def first_hit_offset(text: str, stems: Iterable[str]) -> int:
    """Character offset of the first word whose stem is one of `stems` (0 when none)."""
    wanted = set(stems)
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        if word[:STEM_CHARS] in wanted or any(p[:STEM_CHARS] in wanted for p in word.split("_") if p):
            return match.start()
    return 0


def detect_language(text: str) -> Language:
    """`ru` when Cyrillic letters make up at least 30% of the prose letters, else `en`.

    Code-like tokens (identifiers, paths, options) are left out: a Russian question about
    `jsonable_encoder` in `fastapi.encoders` is still Russian.
    """
    prose = _CODE_TOKEN.sub(" ", text)
    letters = _LETTER.findall(prose)
    if not letters:
        return "ru" if _CYRILLIC.search(text) else "en"
    cyrillic = sum(1 for ch in letters if _CYRILLIC.match(ch))
    return "ru" if cyrillic / len(letters) >= 0.3 else "en"


def strip_markup(line: str) -> str:
    """`line` without leading markdown (heading hashes, list markers, quote marks): noise in a quote."""
    return _MARKUP.sub("", line)


def fence_content(content: str) -> str:
    """Neutralise `<document>` / `<passage>` tags inside evidence so it cannot close its fence."""
    return _DOC_TAG.sub(r"&lt;\1", content)
