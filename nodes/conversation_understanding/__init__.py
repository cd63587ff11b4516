"""conversation_understanding: turn the last user turn into one standalone request (SPEC §5).

The deterministic carry-over always runs; the LLM rewrite is tried on top of it when a model is given.
"""

from nodes.conversation_understanding.carry_over import (
    AnswerTopic,
    StandaloneRequest,
    anchors_of,
    answer_topic,
    is_follow_up,
    is_generic_term,
    standalone_request,
    topic_terms,
)
from nodes.conversation_understanding.rewrite import REWRITE_PROMPT, rewrite_messages, rewrite_with_llm

__all__ = [
    "REWRITE_PROMPT",
    "AnswerTopic",
    "StandaloneRequest",
    "anchors_of",
    "answer_topic",
    "is_follow_up",
    "is_generic_term",
    "rewrite_messages",
    "rewrite_with_llm",
    "standalone_request",
    "topic_terms",
]
