"""Eval cases (SPEC §7 JSONL) and the route label they are compared by; shared by the runner and LangSmith."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stores.errors import LotsmanError

ROUTES = {"GENERAL_QA", "DOC_EXPLAIN/SUMMARY", "DOC_EXPLAIN/FIND_FILES"}
REQUIRED = ("id", "question", "expected_route", "gold_paths", "answerable")


def load_dataset(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL dataset; a malformed line is a clear error naming the line."""
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
        if case["expected_route"] not in ROUTES:
            raise LotsmanError(f"{path}:{n}: unknown expected_route {case['expected_route']!r}")
        case.setdefault("history", [])
        case.setdefault("key_facts", [])
        cases.append(case)
    return cases


def route_label(route: dict[str, Any]) -> str:
    """`GENERAL_QA` or `INTENT/SUBINTENT`, the form of a case's `expected_route`."""
    if route.get("intent") == "GENERAL_QA":
        return "GENERAL_QA"
    return f"{route.get('intent')}/{route.get('subintent')}"
