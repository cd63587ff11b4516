"""context_analysis: evidence by file, answering passages, sufficiency and conflicts (SPEC §5).

Deterministic by default (`analyze`); `analyze_with_llm` lets a chat model choose and order the same
passages and judge sufficiency, and returns None so the caller keeps the deterministic analysis.
Line-aligned layers (D0 doc chunks, C0 source chunks) give exact lines; catalog, fact, entity and symbol
rows are cited by their whole span.
"""

from nodes.context_analysis.analyze import MAX_PASSAGES, MAX_SUPPORTING, analyze
from nodes.context_analysis.llm import ANALYSIS_PROMPT, analyze_with_llm, build_analysis_messages
from nodes.context_analysis.models import Analysis, FileEvidence, Language, Span
from nodes.context_analysis.passages import MAX_CODE_LINES, MAX_PASSAGE_CHARS, MAX_PASSAGE_LINES
from nodes.context_analysis.scoring import Embed
from nodes.context_analysis.spans import LINE_ALIGNED, aligned_lines
from nodes.context_analysis.text import detect_language, fence_content, strip_markup

__all__ = [
    "ANALYSIS_PROMPT",
    "LINE_ALIGNED",
    "MAX_CODE_LINES",
    "MAX_PASSAGES",
    "MAX_PASSAGE_CHARS",
    "MAX_PASSAGE_LINES",
    "MAX_SUPPORTING",
    "Analysis",
    "Embed",
    "FileEvidence",
    "Language",
    "Span",
    "aligned_lines",
    "analyze",
    "analyze_with_llm",
    "build_analysis_messages",
    "detect_language",
    "fence_content",
    "strip_markup",
]
