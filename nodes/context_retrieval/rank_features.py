"""Features of the learned ranker (pure): one vector per fused candidate, read off the lanes and the text.

The trainer (`evals/train_ranker.py`) and the ranker at run time call the same `candidate_features`, so the
model sees at run time exactly what it was trained on. Scores enter relative to the request's own candidates
(a distance minus the best distance, a lexical score over the best one): raw scores differ between corpora,
embedders and languages, relative ones transfer. The few raw counts (path depth, rows of a file, identifiers
in the question, text length, title separators) do not depend on the embedder.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nodes.evidence import EvidenceRow
from nodes.terms import STEM_CHARS

MAX_CANDIDATES = 60
"""Candidates the ranker orders (the fused list beyond them keeps its RRF order)."""

LANES = ("ranked", "semantic", "lexical", "code", "code_semantic", "exact", "substring", "landing")
LAYERS = ("D0_DOC_CHUNKS", "D1_DOCUMENT_CATALOG", "D2_FACT_INDEX", "D3_ENTITY_CATALOG", "D4_WORKFLOW_INDEX",
          "D5_RELATION_GRAPH", "D6_POLICY_INDEX", "C0_SOURCE_CHUNKS", "C1_SYMBOL_CATALOG", "C2_DEPENDENCY_GRAPH",
          "C3_ENTRYPOINTS")

FEATURES: tuple[str, ...] = (
    *(f"rr_{lane}" for lane in LANES), "n_lanes", "inv_pos", "inv_file_pos", "fused_rel",
    *(f"layer_{layer[:2]}" for layer in LAYERS),
    "path_depth", "path_readme", "path_changelog", "path_test", "path_example", "path_init", "path_py",
    "terms_in_title", "terms_in_content", "terms_in_path", "query_cyrillic", "passage_cyrillic", "cyrillic_gap",
    "find_files", "code_plan", "explicit_code", "general",
    "cos_rel", "inv_cos_rank", "lexical_rel", "idf_overlap",
    "file_rows", "file_cos_rel", "file_lexical_rel", "file_idf_overlap", "file_fused_rel",
    "identifier_hits", "identifiers", "name_in_query", "stems_in_title", "stems_in_content", "log_length",
    "title_dots", "title_sections",
)
"""Names of the columns, in order; a model file records them and is refused when they differ."""

MAX_QUERY_CHARS = 1000
"""The request text the features read (eval questions are under 150 characters). The identifier pattern
backtracks over a long run of letters: on a 100 kB one-word query it took minutes."""

NO_SIMILARITY = 2.0
"""Cosine distance of a row without an embedding (distances run 0-2)."""

_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)
_WORD = re.compile(r"\w+", re.UNICODE)
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_IDENTIFIER = re.compile(
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z]+_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|--?[a-z][a-z0-9-]+"
    r"|[A-Z][A-Z0-9_]{3,}")
"""Identifier-shaped words of a question: dotted names, snake_case, camelCase, CamelCase, flags, CONSTANTS."""
_TEST = re.compile(r"(^|/)tests?/|(^|/)test_|_test\.py$")
_EXAMPLE = re.compile(r"example|docs_src|tutorial", re.IGNORECASE)


@dataclass(frozen=True)
class RankQuery:
    """What the ranker knows of the request besides its candidates."""

    text: str
    key_terms: Sequence[str] = ()
    find_files: bool = False
    """The route asks for files (`DOC_EXPLAIN/FIND_FILES`)."""
    code_plan: bool = False
    explicit_code: bool = False
    general: bool = False
    """The plan's profile is the general overview one."""


def cyrillic_share(text: str) -> float:
    """Share of the letters of `text` that are Cyrillic (0 when it has none)."""
    letters = len(_LETTER.findall(text))
    return len(_CYRILLIC.findall(text)) / letters if letters else 0.0


def _share_in(terms: Sequence[str], low: str) -> float:
    """Share of `terms` found in the lower-cased text `low`."""
    return sum(1 for t in terms if t in low) / len(terms) if terms else 0.0


def _stems(words: Sequence[str]) -> set[str]:
    return {w[:STEM_CHARS] for w in words if len(w) > 2}


def _path_features(path: str) -> list[float]:
    base = posixpath.basename(path).lower()
    return [float(path.count("/")), float(base.startswith("readme")),
            float(base.startswith(("changelog", "changes", "history"))), float(bool(_TEST.search(path))),
            float(bool(_EXAMPLE.search(path))), float(base == "__init__.py"), float(path.endswith(".py"))]


def candidate_features(rows: Sequence[EvidenceRow], query: RankQuery,
                       similarity: Mapping[str, float]) -> np.ndarray:
    """The feature matrix of `rows` (fused order), one row per candidate, columns as `FEATURES`.

    Args:
        rows: the fused candidates in their RRF order (at most `MAX_CANDIDATES` are used by the caller).
        query: the request.
        similarity: row id → cosine distance to the request's embedding (rows without one get the
            request's worst distance plus a margin).
    """
    n = len(rows)
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    text = query.text[:MAX_QUERY_CHARS]
    known = [similarity[r.id] for r in rows if r.id in similarity]
    worst = max(known) if known else NO_SIMILARITY
    cos = np.array([similarity.get(r.id, min(NO_SIMILARITY, worst + 0.05)) for r in rows])
    best_cos = float(cos.min())
    cos_rank = np.empty(n)
    cos_rank[np.argsort(cos, kind="stable")] = np.arange(n)
    lexical = np.array([r.scores.get("lexical_score", 0.0) or 0.0 for r in rows])
    best_lexical = float(lexical.max()) or 1.0
    fused = np.array([r.fused_score for r in rows])
    best_fused = float(fused.max()) or 1.0
    # sorted: the IDF sums below then add in one order whatever PYTHONHASHSEED is (a set's order made the
    # retrained model's thresholds differ in the last bit from run to run)
    words = sorted({t for t in _WORD.findall(text.lower()) if len(t) > 2})
    terms = [t.lower() for t in query.key_terms]
    # each row's text is lower-cased and split once: this loop is most of the ranker's cost
    low_titles = [r.title.lower() for r in rows]
    low_contents = [r.content.lower() for r in rows]
    title_words = [_WORD.findall(t) for t in low_titles]
    content_words = [_WORD.findall(c) for c in low_contents]
    texts = [set(t).union(c) for t, c in zip(title_words, content_words, strict=True)]
    idf = {t: math.log((n + 1) / (sum(1 for d in texts if t in d) + 0.5)) for t in words}
    idf_total = sum(idf.values()) or 1.0
    overlap = np.array([sum(idf[t] for t in words if t in d) / idf_total for d in texts])
    files: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        files.setdefault(r.path, []).append(i)
    file_pos = {path: k for k, path in enumerate(files)}
    identifiers = set(_IDENTIFIER.findall(text))
    query_stems = _stems(_WORD.findall(text.lower()))
    query_cyr = cyrillic_share(text)
    low_text = text.lower()
    request = [float(query.find_files), float(query.code_plan), float(query.explicit_code), float(query.general)]
    out = np.zeros((n, len(FEATURES)))
    for i, r in enumerate(rows):
        same = files[r.path]
        name = re.split(r"[.>]", r.title)[-1].strip().lower()
        passage_cyr = cyrillic_share(r.content[:500])
        out[i] = [
            *(1.0 / r.lanes[lane] if r.lanes.get(lane) else 0.0 for lane in LANES),
            float(len(r.lanes)), 1.0 / (i + 1), 1.0 / (file_pos[r.path] + 1), fused[i] / best_fused,
            *(float(r.layer == layer) for layer in LAYERS),
            *_path_features(r.path),
            _share_in(terms, low_titles[i]), _share_in(terms, low_contents[i]),
            _share_in(terms, r.path.lower()), query_cyr, passage_cyr, abs(query_cyr - passage_cyr),
            *request,
            cos[i] - best_cos, 1.0 / (cos_rank[i] + 1), lexical[i] / best_lexical, overlap[i],
            float(len(same)), float(cos[same].min()) - best_cos, float(lexical[same].max()) / best_lexical,
            float(overlap[same].max()), float(fused[same].sum()) / best_fused,
            (sum(1 for w in identifiers if w in r.content or w in r.title) / len(identifiers)) if identifiers
            else -1.0,
            float(len(identifiers)), float(len(name) > 2 and name in low_text),
            len(query_stems & _stems(title_words[i])) / (len(query_stems) or 1),
            len(query_stems & _stems(content_words[i])) / (len(query_stems) or 1),
            math.log1p(len(r.content)), float(r.title.count(".")), float(r.title.count(">")),
        ]
    return out
