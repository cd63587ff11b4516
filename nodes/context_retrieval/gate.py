"""Relevance gate and token cap (pure; seed 004 "Safety Guards").

The gate refuses only on evidence that the question is about something the index does not hold: nothing
was found, the question names something the index never mentions, or (in the evidence's language) most of
its key terms occur nowhere among the candidates. Low key-term coverage of the top rows and low similarity
are not refusals: on the dev splits of five corpora they refused 17 answerable questions for 5
unanswerable ones (paraphrases, everyday wording, Russian questions over English code), and a refused
answerable question costs more than an answered unanswerable one. The top rows' coverage stays the
answer's confidence (`GateDecision.coverage`; `lotsman gaps` lists answers below 0.5 as unsure).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from nodes.evidence import EvidenceRow
from nodes.terms import STOPWORDS, WORD, cyrillic_share, stem
from stores.statements import path_lookups

SIMILARITY_PASS = 0.70
"""Best cosine similarity that passes a request whose key terms the candidates lack (a paraphrase may share
no word with its page)."""
NO_TERMS_SIMILARITY_PASS = 0.50
"""Best cosine similarity that passes a request with no key terms at all ("How do I use it?", «Как это
работает?»). No dev question has zero key terms, so no calibration decides it: it keeps the 0.50 it had,
rather than following `SIMILARITY_PASS` and refusing more answerable questions on no evidence."""
CANDIDATE_COVERAGE_PASS = 0.20
"""Share of the key terms that must occur somewhere among the fused candidates of a request written in the
evidence's language; below it the candidates are not about the question's topic."""
CROSS_COVERAGE_PASS = 0.20
"""Key-term coverage of the top rows that passes a cross-lingual request (a Russian question over English
code shares only names and identifiers with it)."""
CROSS_SIMILARITY_PASS = 0.10
"""Similarity below which a cross-lingual request whose key terms are not covered is refused.

All four are chosen by `python -m evals.gate_calibration` on the dev splits of eight corpora (a refused
answerable question weighs twice an answered unanswerable one), and every leave-one-corpus-out fold chose
the same up to ties (docs/logic/context_retrieval.md, "Relevance gate"). On dev the fewest key terms an
answerable request in the evidence's language has among the candidates is 0.29 (libaudit la-022; 0.5 on the
five older corpora, which chose 0.3) and the off-topic unanswerable one has 0.0: 0.2 is chosen. No cross-lingual
answerable request has a similarity below 0.24 and none unanswerable below 0.22: 0.1 is the middle of the
gap under them (off-topic Russian questions over English code measured 0.11–0.17, so some still pass)."""
GATE_TOP_N = 6
CHARS_PER_TOKEN = 3.0
"""Conservative for Cyrillic text and code (real tokenizers give 3–4 chars per token)."""

_WORD = WORD


_NAMED = re.compile(r"(?<![\w/.-])(?:[A-Za-z][A-Za-z0-9_+#]*(?:[.-][A-Za-z0-9_]+)*|[А-ЯЁ][а-яё]+)")
_CYRILLIC = re.compile(r"[А-ЯЁа-яё]")
_CHORD = re.compile(r"\+[A-Za-z0-9]")
"""`Ctrl+C`, `Alt+F4`: a key chord, not a name (`C++` keeps its name)."""
_PLACEHOLDER = re.compile(r"(?:[Mm]y|[Ff]oo|[Bb]ar|[Bb]az|[Yy]our|[Ee]xample)(?:_|[A-Z]\w*[._]|$)")
"""`MyClass.method`, `my_handler`, `foo_bar`: the placeholders of every tutorial, not names of a project. Only the
dotted or snake_case forms: `MySQL`, `MyPy`, `MyST` and `YourKit` are names a question asks about."""
_QUOTED = re.compile(r"`[^`]*`|'[^']*'|\"[^\"]*\"|«[^»]*»")


def named_terms(text: str) -> list[str]:
    """Names in a request: Latin words with a capital after the first letter or a digit (`gRPC`, `OAuth2`,
    `AWS`), identifiers with an underscore, and capitalised words inside a sentence that are not stop words
    (`Kafka`, proper names in Cyrillic). A capital that only starts a sentence is grammar: «Overview: how
    can I customize the docs UI?» does not ask about something called "Overview" (it was refused as absent
    from a Russian corpus).

    In a Russian request every Latin word of three letters or more is a name too (`rate limiting`, `nushell`,
    `sampling`: a developer writes a term in English because it is one), except inside quotes or backticks,
    where it is an example value (`'maybe'`, `` `| head` ``). Key chords (`Ctrl+C`) and placeholders
    (`MyClass.method`, `my_handler`, `foo_bar`) are not names: dev questions about them were refused.

    A name the corpus never mentions is the strongest sign a question is about something else; plain
    words are not checked, since English questions over Russian docs share few plain words with them.
    """
    out: dict[str, None] = {}
    cyrillic = cyrillic_share(text) >= CROSS_LINGUAL_SHARE
    quoted = [range(q.start(), q.end()) for q in _QUOTED.finditer(text)]
    for m in _NAMED.finditer(text):
        word = m.group(0)
        if word.lower() in STOPWORDS or len(word) < 3 or _CHORD.search(word) or _PLACEHOLDER.match(word):
            continue
        if cyrillic and not _CYRILLIC.search(word) and not any(m.start() in q for q in quoted):
            out.setdefault(word, None)  # an English word in a Russian sentence is a term: `rate limiting`
            continue
        before = text[: m.start()].rstrip()
        sentence_start = not before or before[-1] in ".!?:«\"("
        if _CYRILLIC.search(word):
            if word[0].isupper() and not sentence_start:
                out.setdefault(word, None)
            continue
        marked = "_" in word.strip("_") or any(ch.isupper() for ch in word[1:]) or any(ch.isdigit() for ch in word)
        if marked or (word[0].isupper() and not sentence_start):
            out.setdefault(word, None)
    return list(out)


def row_vocab(row: EvidenceRow) -> set[str]:
    """Stems of the words of the row's path, title and content (and of the parts of snake_case words)."""
    vocab: set[str] = set()
    for w in _WORD.findall(f"{row.path} {row.title} {row.content}".lower()):
        vocab.add(stem(w))
        for part in w.split("_"):
            vocab.add(stem(part))
    return vocab


def term_coverage(terms: Sequence[str], rows: Sequence[EvidenceRow]) -> float:
    """Share of `terms` whose stem occurs among the words of the rows' path, title and content."""
    return _share(terms, set().union(*(row_vocab(r) for r in rows)))


def _share(terms: Sequence[str], vocab: set[str]) -> float:
    if not terms:
        return 1.0
    return sum(1 for t in terms if stem(t) in vocab) / len(terms)


@dataclass(frozen=True)
class GateSignals:
    """What the gate looks at, kept with its verdict so thresholds can be calibrated offline."""

    rows: int = 0
    coverage: float = 0.0
    """Share of the key terms found anywhere in the top GATE_TOP_N rows."""
    best_similarity: float = 0.0
    """1 − the smallest cosine distance among the rows (0.0 when no row has one)."""
    cross_lingual: bool = False
    """The request and the top evidence are written in different languages (Cyrillic vs Latin prose),
    so stemmed key terms cannot be expected to match."""
    named_file_found: bool = False
    absent_names: tuple[str, ...] = ()
    has_terms: bool = False
    overview: bool = False
    """An overview question about the repository itself with its landing pages in the evidence."""
    ranker_top: float | None = None
    """The learned ranker's best score among the candidates (None under `ranker=rrf`)."""
    ranker_margin: float | None = None
    """The learned ranker's best score minus its second best (None under `ranker=rrf` or one candidate)."""
    candidate_coverage: float = 0.0
    """Share of the key terms found anywhere among the fused candidates (not only the top rows)."""
    terms: int = 0
    """How many key terms the request has."""
    names: int = 0
    """How many names the request has (`named_terms`: what the names lane looked up in the index)."""
    row_coverage: float = 0.0
    """The largest share of the key terms found together in one candidate row: an answer's row names most
    of the question; a near miss's words are spread over rows that each name a few."""
    file_coverage: float = 0.0
    """The largest share of the key terms found together in the candidate rows of one file."""
    top_file_coverage: float = 0.0
    """Share of the key terms found in the candidate rows of the first-ranked file."""
    similarity_10th: float = 0.0
    """The tenth best cosine similarity among the rows (the last one with fewer): the margin
    `best_similarity − similarity_10th` says whether one passage stands out."""
    query_ru: bool = False
    """The request is written in Cyrillic (with `evidence_ru`: the language pair)."""
    evidence_ru: bool = False
    """The top rows are written in Cyrillic."""


@dataclass(frozen=True)
class GateThresholds:
    """The gate's thresholds, chosen leave-one-corpus-out on the dev splits of every eval corpus."""

    similarity_pass: float = SIMILARITY_PASS
    no_terms_similarity_pass: float = NO_TERMS_SIMILARITY_PASS
    """Similarity that passes a request with no key terms (not calibrated: no dev question has none)."""
    candidate_coverage_pass: float = CANDIDATE_COVERAGE_PASS
    """Share of the key terms found among the candidates below which a same-language request is refused."""
    cross_coverage_pass: float = CROSS_COVERAGE_PASS
    """Key-term coverage that passes a cross-lingual request (only names and code words can match)."""
    cross_similarity_pass: float = CROSS_SIMILARITY_PASS
    """Similarity below which a cross-lingual request whose key terms are not covered is refused."""


@dataclass(frozen=True)
class GateDecision:
    """Whether retrieval found something relevant, and why."""

    passed: bool
    reason: str
    coverage: float
    best_similarity: float
    signals: GateSignals | None = None


CROSS_LINGUAL_SHARE = 0.25
"""A text is "Cyrillic" when at least this share of its letters is (code in Russian docs dilutes it)."""


def gate_signals(rows: Sequence[EvidenceRow], terms: Sequence[str], *, query: str = "",
                 absent_names: Sequence[str] = (), named_files: Sequence[str] = (),
                 overview: bool = False, ranker_scores: Sequence[float] = ()) -> GateSignals:
    """Measure the fused rows against the request (pure); `ranker_scores` are the learned ranker's scores
    of the candidates, best first (empty under `ranker=rrf`)."""
    query_ru = cyrillic_share(query) >= CROSS_LINGUAL_SHARE
    names = len(named_terms(query))
    if not rows:
        return GateSignals(absent_names=tuple(absent_names), has_terms=bool(terms), terms=len(terms), names=names,
                           query_ru=query_ru)
    similarities = sorted((1.0 - r.scores["distance"] for r in rows if "distance" in r.scores), reverse=True)
    top = list(rows[:GATE_TOP_N])
    wanted = [p.lower() for f in named_files for p in path_lookups(f)]  # `docs\\x.md` typed on Windows too
    evidence_ru = cyrillic_share(" ".join(r.content[:400] for r in top)) >= CROSS_LINGUAL_SHARE
    vocabs = [row_vocab(r) for r in rows]
    by_file: dict[str, set[str]] = {}
    for r, v in zip(rows, vocabs, strict=True):
        by_file.setdefault(r.path, set()).update(v)
    return GateSignals(
        rows=len(rows), coverage=_share(terms, set().union(*vocabs[:GATE_TOP_N])),
        best_similarity=similarities[0] if similarities else 0.0,
        cross_lingual=bool(query.strip()) and evidence_ru != query_ru,
        named_file_found=bool(wanted) and any(r.path.lower().endswith(f) for r in top for f in wanted),
        absent_names=tuple(absent_names), has_terms=bool(terms),
        overview=overview and any("landing" in r.lanes for r in top),
        ranker_top=round(float(ranker_scores[0]), 5) if ranker_scores else None,
        ranker_margin=round(float(ranker_scores[0] - ranker_scores[1]), 5) if len(ranker_scores) > 1 else None,
        candidate_coverage=round(_share(terms, set().union(*vocabs)), 4),
        terms=len(terms), names=names,
        row_coverage=round(max(_share(terms, v) for v in vocabs), 4),
        file_coverage=round(max(_share(terms, v) for v in by_file.values()), 4),
        top_file_coverage=round(_share(terms, by_file[rows[0].path]), 4),
        similarity_10th=round(similarities[min(9, len(similarities) - 1)], 4) if similarities else 0.0,
        query_ru=query_ru, evidence_ru=evidence_ru,
    )


def signals_from_json(raw: dict[str, object]) -> GateSignals:
    """`GateSignals` from a report's recorded `signals` (fields a report lacks keep their defaults; fields
    this version no longer has are dropped)."""
    known = {f.name for f in dataclasses.fields(GateSignals)}
    kept = {k: v for k, v in raw.items() if k in known}
    return GateSignals(**kept | {"absent_names": tuple(raw.get("absent_names") or ())})  # type: ignore[arg-type]


def hard_verdict(signals: GateSignals) -> GateDecision | None:
    """The verdicts no score overrules: nothing found, the file the user named, a name the index never
    mentions, an overview with the repository's landing pages; None for every other request."""
    cov, best = signals.coverage, signals.best_similarity
    if not signals.rows:
        return GateDecision(False, "no rows", cov, best, signals)
    if signals.named_file_found:
        return GateDecision(True, "the file the user named", cov, best, signals)
    if signals.absent_names:
        return GateDecision(False, f"not in the index: {', '.join(signals.absent_names)}", cov, best, signals)
    if signals.overview:
        return GateDecision(True, "about the repository itself: its landing pages", cov, best, signals)
    return None


def decide(signals: GateSignals, t: GateThresholds) -> GateDecision:
    """The verdict: refuse only on evidence that the index does not hold the topic (pure)."""
    cov, best, found = signals.coverage, signals.best_similarity, signals.candidate_coverage

    def verdict(passed: bool, reason: str) -> GateDecision:
        return GateDecision(passed, reason, cov, best, signals)

    hard = hard_verdict(signals)
    if hard is not None:
        return hard
    if signals.cross_lingual:  # stems of one language cannot cover the other's: similarity must speak
        if signals.has_terms and cov >= t.cross_coverage_pass:
            return verdict(True, f"cross-lingual, key terms covered ({cov:.2f})")
        if best >= t.cross_similarity_pass:
            return verdict(True, f"cross-lingual, similarity {best:.2f}")
        return verdict(False, f"cross-lingual: key terms {cov:.2f}, similarity {best:.2f}")
    if signals.has_terms and found >= t.candidate_coverage_pass:
        return verdict(True, f"key terms covered ({cov:.2f}) in the top rows, {found:.2f} among the candidates")
    if not signals.has_terms:  # "how does it work?" names no topic: similarity alone speaks
        if best >= t.no_terms_similarity_pass:
            return verdict(True, f"no key terms, similarity {best:.2f}")
        return verdict(False, f"no key terms and similarity {best:.2f}")
    if best >= t.similarity_pass:  # a paraphrase may share no key term with its page
        return verdict(True, f"high similarity ({best:.2f})")
    return verdict(False, f"key terms not covered: {found:.2f} of them among the candidates, similarity {best:.2f}")


def relevance_gate(rows: Sequence[EvidenceRow], terms: Sequence[str], *, thresholds: GateThresholds | None = None,
                   query: str = "", absent_names: Sequence[str] = (), named_files: Sequence[str] = (),
                   overview: bool = False, ranker_scores: Sequence[float] = ()) -> GateDecision:
    """Decide whether the fused rows answer anything.

    Args:
        rows: fused evidence, best first.
        terms: the request's key terms.
        thresholds: defaults to `GateThresholds()`.
        query: the request (its language against the evidence's decides whether it is cross-lingual).
        absent_names: names from the request (`named_terms`) that occur nowhere in the index.
        named_files: file names the user wrote; finding one passes the gate (hints derived from aliases
            do not: an alias match alone says little about whether the question is answerable).
        overview: the request asks about the repository itself (`nodes.layout.about_the_project`).
        ranker_scores: the learned ranker's scores, best first (recorded for calibration).
    """
    signals = gate_signals(rows, terms, query=query, absent_names=absent_names, named_files=named_files,
                           overview=overview, ranker_scores=ranker_scores)
    return decide(signals, thresholds or GateThresholds())


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


ROW_OVERHEAD_TOKENS = 8
"""What a row costs beyond its content and path (its citation and fencing in a prompt)."""


def row_tokens(row: EvidenceRow) -> int:
    """What one evidence row costs of the token cap: its content, its path and the overhead."""
    return estimate_tokens(row.content) + estimate_tokens(row.path) + ROW_OVERHEAD_TOKENS
