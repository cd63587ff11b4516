"""The router's prompt contract: `prompts.yml` loaded at run time, the JSON payload, and the messages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from nodes.intent_routing.features import QueryFeatures
from nodes.intent_routing.route_catalog import ALLOWED_ROUTES, allowed_routes
from nodes.intent_routing.validator import ROUTE_FIELDS

MAX_PROMPT_QUERY_CHARS = 2000
"""A huge request is clipped in the prompt only; routing needs its opening, not all of it."""


@dataclass(frozen=True)
class RouterPrompts:
    """The parsed `prompts.yml`."""

    version: int
    system: str
    user: str
    confidence_guidance: str
    function_name: str
    function_description: str


def load_prompts(path: str | Path | None = None) -> RouterPrompts:
    """Load the prompt contract; the packaged `prompts.yml` by default (read once, then cached).

    Raises:
        ValueError: When a required key is missing.
    """
    if path is None:
        return _packaged_prompts()
    return _parse(Path(path).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _packaged_prompts() -> RouterPrompts:
    return _parse(resources.files(__package__).joinpath("prompts.yml").read_text(encoding="utf-8"))


def _parse(text: str) -> RouterPrompts:
    import yaml  # here: only a router with a chat model reads its prompts (an offline ask paid ~15 ms for it)

    data = yaml.safe_load(text) or {}
    missing = [k for k in ("system", "user", "confidence_guidance", "function") if k not in data]
    if missing:
        raise ValueError(f"router prompts.yml lacks {', '.join(missing)}; restore it from the package")
    return RouterPrompts(
        version=int(data.get("version", 1)),
        system=data["system"],
        user=data["user"],
        confidence_guidance=data["confidence_guidance"].strip(),
        function_name=data["function"]["name"],
        function_description=data["function"]["description"],
    )


def build_payload(features: QueryFeatures) -> dict[str, Any]:
    """The JSON payload for the LLM: query, target terms, anchors, markers and allowed routes.

    Indexed document text never enters it; doc hints are paths only.
    """
    return {
        "normalized_query": features.normalized_query[:MAX_PROMPT_QUERY_CHARS],
        "target_terms": list(features.target_terms),
        "anchors": features.anchors.model_dump(),
        "markers": list(features.markers.groups()),
        "allowed_routes": allowed_routes(),
    }


def render_messages(payload: dict[str, Any], prompts: RouterPrompts) -> list[BaseMessage]:
    """System prompt plus the payload fenced as data in one human message."""
    routes = "\n".join(f"- {r.routing_domain} / {r.intent} / {r.subintent}" for r in ALLOWED_ROUTES)
    system = prompts.system.replace("{allowed_routes}", routes).replace(
        "{confidence_guidance}", prompts.confidence_guidance
    )
    # Escaping < and > keeps the JSON valid while making it impossible for the user's text to close
    # the <router_input> fence and speak outside it.
    fenced = json.dumps(payload, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    return [SystemMessage(content=system), HumanMessage(content=prompts.user.replace("{payload}", fenced))]


def route_function(prompts: RouterPrompts) -> dict[str, Any]:
    """The function (tool) schema the LLM fills in; enums come from the route catalog."""
    enums = {name: sorted({getattr(r, name) for r in ALLOWED_ROUTES}) for name in ROUTE_FIELDS}
    properties: dict[str, Any] = {name: {"type": "string", "enum": values} for name, values in enums.items()}
    properties["confidence"] = {"type": "number", "description": "How sure you are, from 0 to 1."}
    properties["reason_short"] = {"type": "string", "description": "Why this route, at most 20 words."}
    return {
        "name": prompts.function_name,
        "description": prompts.function_description,
        "parameters": {"type": "object", "properties": properties, "required": list(properties)},
    }
