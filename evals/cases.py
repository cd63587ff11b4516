"""Eval cases (SPEC §7 JSONL) and the route label they are compared by; shared by the runner and LangSmith."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stores.errors import LotsmanError

ROUTES = {"GENERAL_QA", "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/FIND_FILES"}
REQUIRED = ("id", "question", "expected_route", "gold_paths", "answerable")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _turns(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(t, dict) and t.get("role") in ("user", "assistant") and isinstance(t.get("content"), str)
        for t in value)


FIELD_TYPES = (
    ("id", lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    ("question", lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty string"),
    ("expected_route", lambda v: isinstance(v, str), "a string"),
    ("gold_paths", _strings, "a list of strings"),
    ("answerable", lambda v: isinstance(v, bool), "true or false"),
    ("key_facts", _strings, "a list of strings"),
    ("history", _turns, "a list of {role: user|assistant, content: string}"),
    ("tags", _strings, "a list of strings"),
)
"""(field, check, what it must be): a wrong type is named with its line, not met later as a TypeError."""


def field_error(case: dict[str, Any]) -> str | None:
    """The first field of a case whose value has the wrong type, as `field 'x' must be ..., got T`."""
    for name, ok, what in FIELD_TYPES:
        if name in case and not ok(case[name]):
            return f"field '{name}' must be {what}, got {type(case[name]).__name__} {json.dumps(case[name])[:40]}"
    return None


def load_dataset(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL dataset; a malformed line is a clear error naming the line and the field, and a
    dataset without a case is refused (its metrics would all be n/a, which reads like a pass)."""
    if not path.exists():
        raise LotsmanError(f"dataset not found: {path}")
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LotsmanError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(case, dict):
            raise LotsmanError(f"{path}:{n}: not a JSON object")
        missing = [k for k in REQUIRED if k not in case]
        if missing:
            raise LotsmanError(f"{path}:{n}: missing fields {missing}")
        wrong = field_error(case)
        if wrong:
            raise LotsmanError(f"{path}:{n}: {wrong}")
        if case["expected_route"] not in ROUTES:
            raise LotsmanError(f"{path}:{n}: unknown expected_route {case['expected_route']!r}")
        case.setdefault("history", [])
        case.setdefault("key_facts", [])
        cases.append(case)
    if not cases:
        raise LotsmanError(f"{path}: no cases (an empty dataset measures nothing)")
    return cases


def route_label(route: dict[str, Any]) -> str:
    """`GENERAL_QA` or `INTENT/SUBINTENT`, the form of a case's `expected_route`."""
    if route.get("intent") == "GENERAL_QA":
        return "GENERAL_QA"
    return f"{route.get('intent')}/{route.get('subintent')}"
