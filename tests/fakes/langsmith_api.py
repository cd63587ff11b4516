"""A recording stand-in for the LangSmith REST API, plugged into the real `langsmith.Client` as its session.

`langsmith.Client(api_url=..., api_key="fake", session=FakeLangSmithAPI(), auto_batch_tracing=False)` talks
to it as to the server (SPEC §2.3): datasets and examples are kept so `evaluate()` can read them back,
projects get ids, and every run and feedback body is recorded for the test to read. Nothing leaves the
process.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from typing import Any

import requests


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def _body(kwargs: dict[str, Any]) -> Any:
    data = kwargs.get("data")
    if data is None and kwargs.get("json") is not None:
        return kwargs["json"]
    if isinstance(data, bytes | str) and data[:1] in ("{", "[", b"{", b"["):
        return json.loads(data)
    return data


class FakeLangSmithAPI(requests.Session):
    """Answers the endpoints `Client.evaluate` and dataset upload use; records everything."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []
        self.datasets: dict[str, dict[str, Any]] = {}
        self.examples: dict[str, list[dict[str, Any]]] = {}
        self.projects: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, dict[str, Any]] = {}
        self.feedback: list[dict[str, Any]] = []

    # --- what tests read ---------------------------------------------------------------------------
    def run_feedback(self) -> list[dict[str, Any]]:
        """Feedback attached to a run (per-case evaluators)."""
        return [f for f in self.feedback if f.get("run_id")]

    def project_feedback(self) -> dict[str, float]:
        """Feedback attached to the experiment itself (summary evaluators), by key."""
        return {f["key"]: f["score"] for f in self.feedback if not f.get("run_id") and f.get("session_id")}

    # --- the API -----------------------------------------------------------------------------------
    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        path = "/" + url.split("://", 1)[-1].split("/", 1)[-1].split("?", 1)[0]
        self.calls.append((method.upper(), path))
        status, payload = self._route(method.upper(), path, kwargs.get("params") or {}, _body(kwargs))
        response = requests.Response()
        response.status_code = status
        response._content = json.dumps(payload).encode()
        response.url = url
        response.headers["Content-Type"] = "application/json"
        return response

    def _route(self, method: str, path: str, params: dict[str, Any], body: Any) -> tuple[int, Any]:
        if path == "/info":
            return 200, {"version": "fake", "batch_ingest_config": {}}
        if path == "/datasets" and method == "GET":
            name = params.get("name")
            return 200, [d for d in self.datasets.values() if name in (None, d["name"])]
        if path == "/datasets" and method == "POST":
            ds = {**body, "id": str(uuid.uuid4()), "created_at": _now(), "modified_at": _now(),
                  "example_count": 0, "tenant_id": str(uuid.UUID(int=0))}
            self.datasets[ds["id"]] = ds
            self.examples[ds["id"]] = []
            return 200, ds
        if m := re.fullmatch(r"/datasets/([\w-]+)", path):
            ds = self.datasets.get(m[1])
            return (200, {**ds, "example_count": len(self.examples[m[1]])}) if ds else (404, {"detail": "no"})
        if path == "/examples/bulk" and method == "POST":
            return 200, [self._add_example(e) for e in body]
        if path == "/examples" and method == "GET":
            rows = self.examples.get(str(params.get("dataset")), [])
            offset, limit = int(params.get("offset", 0)), int(params.get("limit", 100))
            return 200, rows[offset:offset + limit]
        if path == "/sessions" and method == "POST":
            project = {**body, "id": str(uuid.uuid4()), "start_time": _now(), "tenant_id": str(uuid.UUID(int=0))}
            self.projects[project["id"]] = project
            return 200, project
        if path == "/sessions" and method == "GET":
            return 200, list(self.projects.values())
        if m := re.fullmatch(r"/sessions/([\w-]+)", path):
            return 200, self.projects.get(m[1], {})
        if path == "/runs" and method == "POST":
            self.runs[body["id"]] = body
            return 200, {}
        if m := re.fullmatch(r"/runs/([\w-]+)", path):
            if method == "PATCH":
                self.runs.setdefault(m[1], {}).update(body)
            return 200, self.runs.get(m[1], {})
        if path == "/feedback" and method == "POST":
            self.feedback.append(body)
            return 200, {**body, "created_at": _now(), "modified_at": _now()}
        return 404, {"detail": f"fake LangSmith has no {method} {path}"}

    def _add_example(self, example: dict[str, Any]) -> dict[str, Any]:
        row = {**example, "id": example.get("id") or str(uuid.uuid4()), "created_at": _now(),
               "modified_at": _now()}
        self.examples[str(row["dataset_id"])].append(row)
        return row
