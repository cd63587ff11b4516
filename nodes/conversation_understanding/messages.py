"""The text of chat messages as clients send them: a string, or a list of content blocks (agent-chat-ui).

Only text blocks are read. Images, files, audio, tool calls and reasoning blocks carry nothing retrieval or
the router can use; they are left out, and a turn made only of them is an empty question (answered "not
found", `abstained: true`). The answer's own citation links (`[path:1-2](…/lotsman/read?…)`) are read back
as the plain citations they stand for, so an earlier answer means the same to conversation_understanding
whether a client shows it with links or not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

TEXT_BLOCK_TYPES = frozenset({"text"})
"""Content-block types whose `text` is the user's words (LangChain's and OpenAI's `{"type": "text"}`).
`text-plain` (an attached plain-text file) is a file, not the question: left out like other files."""

_CITATION_LINK = re.compile(r"\[(?P<label>[^\[\]\n]+)\]\((?P<href>[^()\s]*/lotsman/read\?[^()\s]*)\)")


def content_text(content: str | Sequence[Any]) -> str:
    """The text of a message's `content`: the string itself, or its text blocks joined by newlines.

    Plain strings inside a block list count as text; blocks of any other type are skipped.
    """
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") in TEXT_BLOCK_TYPES and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(part for part in parts if part)


def unlink_citations(text: str) -> str:
    """`[docs/a.md:3-5](/lotsman/read?...)` → `[docs/a.md:3-5]`: the answer's links read as its citations."""
    return _CITATION_LINK.sub(lambda m: f"[{m.group('label')}]", text)
