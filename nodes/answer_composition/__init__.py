"""answer_composition: a cited answer in the user's language (SPEC §5).

The extractive composer needs no model and is always available; the LLM composer returns None whenever
it cannot produce a verified answer, and the caller falls back to the extractive one.
"""

from nodes.answer_composition.citations import verify_citations
from nodes.answer_composition.extractive import ANSWER_CHARS, TEMPLATES, compose_extractive
from nodes.answer_composition.llm import ANSWER_PROMPT, build_llm_messages, compose_with_llm, fence_content
from nodes.answer_composition.models import Answer, AnswerMode, Citation

__all__ = [
    "ANSWER_CHARS",
    "ANSWER_PROMPT",
    "TEMPLATES",
    "Answer",
    "AnswerMode",
    "Citation",
    "build_llm_messages",
    "compose_extractive",
    "compose_with_llm",
    "fence_content",
    "verify_citations",
]
