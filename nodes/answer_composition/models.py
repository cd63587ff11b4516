"""Stage result of answer_composition: the answer text and its verified citations."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AnswerMode = Literal["extractive", "llm", "find_files", "not_found"]


class Citation(BaseModel):
    """A cited line range of a retrieved file."""

    model_config = ConfigDict(frozen=True)

    path: str
    start_line: int
    """1-based, inclusive."""
    end_line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


class Answer(BaseModel):
    """The composed answer."""

    model_config = ConfigDict(frozen=True)

    text: str
    """Markdown, in the user's language, citations inline as `[path:start-end]`."""
    citations: list[Citation] = Field(default_factory=list)
    """Every citation of `text`, deduped in order; each lies inside a retrieved evidence span."""
    abstained: bool = False
    """True when the evidence does not answer the question and the text says so."""
    mode: AnswerMode = "extractive"
    """How the text was made: extractive quotes, the LLM, a FIND_FILES list, or "not found"."""
    removed_citations: list[str] = Field(default_factory=list)
    """Citations the model wrote that lie outside the passages it was shown (dropped from `text`)."""
    stream_id: str | None = None
    """Id of the streamed message the LLM text came from: the answer's `AIMessage` takes it, so a chat UI
    replaces the streamed tokens with the checked, linked answer in place instead of showing both."""
