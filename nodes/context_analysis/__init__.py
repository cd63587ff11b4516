"""context_analysis: evidence by file, answering passages, sufficiency and conflicts (SPEC §5).

Deterministic by default (`analyze`): the answer quotes the evidence pack's units in the order the learned
unit scorer gave them (`units.py`). `analyze_with_llm` lets a chat model choose and order the same units and
judge sufficiency, and returns None so the caller keeps the deterministic analysis.
"""

from nodes.context_analysis.analyze import MAX_PASSAGES, analyze
from nodes.context_analysis.llm import ANALYSIS_PROMPT, analyze_with_llm, build_analysis_messages
from nodes.context_analysis.models import Analysis, FileEvidence, Language, Span
from nodes.context_analysis.spans import LINE_ALIGNED, aligned_lines
from nodes.context_analysis.text import detect_language, fence_content, strip_markup
from nodes.context_analysis.units import MAX_SUPPORTING

__all__ = [
    "ANALYSIS_PROMPT",
    "LINE_ALIGNED",
    "MAX_PASSAGES",
    "MAX_SUPPORTING",
    "Analysis",
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
