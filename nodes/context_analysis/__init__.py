"""context_analysis: evidence by file, answering spans, sufficiency and conflicts (SPEC §5), deterministic.

Line-aligned layers (D0 doc chunks, C0 source chunks) give exact lines; catalog, fact, entity and symbol
rows are cited by their whole span.
"""

from nodes.context_analysis.analyze import MAX_SPANS, MAX_SPANS_PER_FILE, analyze
from nodes.context_analysis.models import Analysis, FileEvidence, Language, Span
from nodes.context_analysis.spans import LINE_ALIGNED, MAX_SPAN_CHARS, aligned_lines
from nodes.context_analysis.text import detect_language, strip_markup

__all__ = [
    "LINE_ALIGNED",
    "MAX_SPANS",
    "MAX_SPANS_PER_FILE",
    "MAX_SPAN_CHARS",
    "Analysis",
    "FileEvidence",
    "Language",
    "Span",
    "aligned_lines",
    "analyze",
    "detect_language",
    "strip_markup",
]
