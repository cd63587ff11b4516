"""Passages inside the top files (issue 38, items 2-3; pure): the rows of retrieval's best files split into
the units that answer, scored against the request, and the best of them packed as evidence.

A row of the index is a section, a definition or a card: the line that answers (a default thirty lines into
`__init__`, one row of a table, one sentence of a long page) is a small part of it, and trimming rows by
hand-set rules kept the wrong part as often as the right one. Here every row of the first files is cut into
**units** (`split_rows`):

- code (C0 source chunks): logical statements (a statement continued over bracketed lines is one unit), a
  docstring's paragraphs and `:param:` lines, comment runs; a unit longer than `MAX_UNIT_LINES` is cut into
  windows of that many lines;
- code facts (C7): each fact row is a unit (its line(s), its generated sentence as the unit's title);
- cards (C1 symbol cards, C3 entrypoint rows): each card is one unit, its whole text, citing the card's
  first lines (a module's card is not a unit: it stands for the whole file);
- docs (D0 chunks): headings, sentences of paragraphs, list items (with their continuation lines), table
  rows, and fenced code blocks (cut like code).

Each unit gets features (`unit_features`: words and stems shared with the request and its key terms, an
IDF-weighted overlap and BM25 within the candidate files, identifier hits, the containing row's rank,
fused and learned score and distance, the file's rank, kind, layer, position, length, language), and a
LambdaRank tree ensemble (`UnitScorer`, trained by `python -m evals.train_units` on the dev splits, exported
to JSON, evaluated in numpy with the learned ranker's `Forest`) orders them. `pack_units` then adds the best
units after the core, those of the same row and adjacent lines joined into one row, while they fit the cap.
"""
from nodes.context_retrieval.units.features import (
    MAX_UNITS,
    RANKED_SEEN,
    UNIT_FEATURES,
    UnitContext,
    heuristic_scores,
    nearest_units,
    unit_features,
)
from nodes.context_retrieval.units.fill import (
    JOIN_GAP,
    MAX_UNIT_ROWS,
    UNIT_FILES,
    UNIT_KEEP,
    UNIT_MARK,
    UNIT_SCORES,
    UnitReader,
    covered_by,
    index_unit_reader,
    kept_core,
    pack_units,
    unit_files,
    unit_pack,
    unit_row,
    with_unit_scores,
)
from nodes.context_retrieval.units.scorer import (
    UNIT_MODEL_FORMAT,
    UNIT_MODEL_PATH,
    UnitScorer,
    load_unit_scorer,
    parse_unit_model,
)
from nodes.context_retrieval.units.split import (
    CARD_LAYERS,
    DOC_LAYER,
    FACT_KINDS,
    FACT_LAYER,
    KINDS,
    MAX_UNIT_CHARS,
    MAX_UNIT_LINES,
    SOURCE_LAYER,
    UNIT_LAYERS,
    Unit,
    card_unit,
    split_code,
    split_doc,
    split_rows,
)

__all__ = [
    "CARD_LAYERS", "DOC_LAYER", "FACT_KINDS", "FACT_LAYER", "JOIN_GAP", "KINDS", "MAX_UNITS", "MAX_UNIT_CHARS",
    "MAX_UNIT_LINES", "MAX_UNIT_ROWS", "RANKED_SEEN", "SOURCE_LAYER", "UNIT_FEATURES", "UNIT_FILES", "UNIT_KEEP",
    "UNIT_LAYERS", "UNIT_MARK", "UNIT_SCORES", "UNIT_MODEL_FORMAT", "UNIT_MODEL_PATH", "Unit", "UnitContext",
    "UnitReader", "UnitScorer",
    "card_unit", "covered_by", "heuristic_scores", "index_unit_reader", "kept_core", "load_unit_scorer",
    "nearest_units", "pack_units", "parse_unit_model", "split_code", "split_doc", "split_rows", "unit_features",
    "unit_files", "unit_pack", "unit_row", "with_unit_scores",
]
