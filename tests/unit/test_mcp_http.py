"""`/mcp` over HTTP (token and DNS-rebinding checks) and the LangGraph server's auth (indexing is not public)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk import Auth
from pydantic import SecretStr
from starlette.routing import Route
from starlette.testclient import TestClient

from graph.http_app import bearer_problem, build_app, rebinding_problem
from graph.server_auth import ASK, INDEX, INDEX_ASSISTANT_ID, allowed, identify, touches_index_graph
from graph.settings import Settings
from tests.unit.test_mcp_server import FakeTools

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.mark.parametrize(("configured", "authorization", "problem"), [
    (None, None, None),
    (None, "Bearer whatever", None),
    ("s3cret", None, "this server needs a token"),
    ("s3cret", "Bearer wrong", "the token is wrong"),
    ("s3cret", "Basic czNjcmV0", "send the token as Authorization: Bearer"),
    ("s3cret", "Bearer ", "send the token as Authorization: Bearer"),
    ("s3cret", "Bearer s3cret", None),
    ("s3cret", "bearer  s3cret ", None),
])
def test_bearer_problem(configured, authorization, problem) -> None:
    got = bearer_problem(configured, authorization)
    assert (got is None) if problem is None else (got is not None and problem in got)


@pytest.mark.parametrize(("local", "host", "origin", "refused"), [
    ("127.0.0.1", "127.0.0.1:2024", None, False),
    ("127.0.0.1", "localhost:2024", "http://localhost:3000", False),
    ("::1", "[::1]:2024", None, False),
    ("::ffff:127.0.0.1", "localhost", None, False),
    ("127.0.0.1", "evil.example:2024", None, True),           # DNS rebinding: an attacker's name for 127.0.0.1
    ("127.0.0.1", "127.0.0.1:2024", "http://evil.example", True),
    ("127.0.0.1", None, None, True),
    ("10.0.0.5", "lotsman.team.internal:2024", "http://docs.team.internal", False),  # a shared server
    (None, "anything", None, False),
    ("127.0.0.1", "127.0.0.1:2024", "null", True),                # a sandboxed frame or a file: page
    ("127.0.0.1", "127.0.0.1:2024", "https://smith.langchain.com", False),  # allowed (Studio, by default)
    ("127.0.0.1", "127.0.0.1:2024", "https://smith.langchain.com.evil.example", True),
])
def test_rebinding_problem(local, host, origin, refused) -> None:
    allowed = frozenset({"https://smith.langchain.com"})
    assert (rebinding_problem(local, host, origin, allowed) is not None) is refused


def test_every_route_refuses_another_sites_page_on_a_loopback_server() -> None:
    """The server's API answers every origin (CORS): without the guard any page the user visited could list
    the sessions and ask the graph through their browser; the guard covers the web page's API as well."""
    from starlette.responses import JSONResponse

    def sessions(request: Any) -> JSONResponse:
        return JSONResponse(["secret-session"])

    app = build_app(Settings(), FakeTools(), web_routes=[Route("/lotsman/api/sessions", sessions)])
    with TestClient(app, base_url="http://127.0.0.1:2024") as client:
        assert client.get("/lotsman/api/sessions").status_code == 200
        assert client.get("/lotsman/api/sessions", headers={"Origin": "http://localhost:3000"}).status_code == 200
        refused = client.get("/lotsman/api/sessions", headers={"Origin": "https://evil.example"})
        assert refused.status_code == 403 and "secret" not in refused.text
        assert "LOTSMAN_ALLOWED_ORIGINS" in refused.json()["error"]
        assert client.get("/lotsman/api/sessions", headers={"Origin": "null"}).status_code == 403
        assert client.get("/lotsman/api/sessions", headers={"Host": "evil.example"}).status_code == 403


def _app(token: str | None = None) -> TestClient:
    settings = Settings(auth_token=SecretStr(token) if token else None)
    return TestClient(build_app(settings, FakeTools(), web_routes=[]))


def test_mcp_endpoint_is_open_without_a_token() -> None:
    with _app() as client:
        response = client.post("/mcp", json=INIT, headers=MCP_HEADERS)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["serverInfo"]["name"] == "lotsman"


@pytest.mark.parametrize(("authorization", "status"), [(None, 401), ("Bearer nope", 401), ("Bearer s3cret", 200)])
def test_mcp_endpoint_needs_the_configured_token(authorization, status) -> None:
    headers = {**MCP_HEADERS, **({"authorization": authorization} if authorization else {})}
    with _app("s3cret") as client:
        response = client.post("/mcp", json=INIT, headers=headers)
    assert response.status_code == status, response.text
    if status == 401:
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "token" in response.json()["error"]


# --- the LangGraph server's custom auth ----------------------------------------------------------------------------


def test_identify_without_a_token_is_an_anonymous_asker() -> None:
    user = identify(None, None)
    assert user["permissions"] == [ASK] and user["identity"] == "anonymous"
    assert identify(None, "Bearer anything")["permissions"] == [ASK]


@pytest.mark.parametrize("authorization", [None, "", "Bearer wrong", "s3cret", "Basic s3cret"])
def test_identify_with_a_token_refuses_anyone_without_it(authorization) -> None:
    with pytest.raises(Auth.exceptions.HTTPException) as err:
        identify("s3cret", authorization)
    assert err.value.status_code == 401


def test_identify_with_the_token_may_index() -> None:
    assert set(identify("s3cret", "Bearer s3cret")["permissions"]) == {ASK, INDEX}
    assert set(identify("s3cret", None, "s3cret")["permissions"]) == {ASK, INDEX}  # X-Api-Key (agent-chat-ui)
    with pytest.raises(Auth.exceptions.HTTPException):
        identify("s3cret", None, "guess")


@pytest.mark.parametrize(("resource", "action", "value", "touches"), [
    ("threads", "create_run", {"assistant_id": INDEX_ASSISTANT_ID}, True),
    ("threads", "create_run", {"assistant_id": "lotsman_index"}, True),
    ("threads", "create_run", {"assistant_id": "lotsman"}, False),
    ("assistants", "create", {"graph_id": "lotsman_index"}, True),
    ("assistants", "update", {"graph_id": "lotsman_index"}, True),
    ("assistants", "create", {"graph_id": "lotsman"}, False),
    ("crons", "create", {"assistant_id": INDEX_ASSISTANT_ID}, True),
    ("crons", "create", {"payload": {"assistant_id": INDEX_ASSISTANT_ID}}, True),  # where langgraph-api puts it
    ("crons", "update", {"payload": {"assistant_id": "lotsman_index"}}, True),
    ("threads", "create_run", {"assistant_id": INDEX_ASSISTANT_ID.upper()}, True),
    ("crons", "create", {"payload": {"assistant_id": "lotsman"}}, False),
    ("threads", "create", {"metadata": {}}, False),
    ("assistants", "read", {"assistant_id": INDEX_ASSISTANT_ID}, False),  # seeing it is fine, running it is not
    ("threads", "create_run", None, False),
])
def test_touches_index_graph(resource, action, value, touches) -> None:
    assert touches_index_graph(resource, action, value) is touches


def test_only_the_token_holder_may_run_the_index_graph() -> None:
    run = ("threads", "create_run", {"assistant_id": INDEX_ASSISTANT_ID})
    assert not allowed([ASK], *run)
    assert not allowed([], *run)                       # e.g. a Studio user: no permissions at all
    assert allowed([ASK, INDEX], *run)
    assert allowed([ASK], "threads", "create_run", {"assistant_id": "lotsman"})


@pytest.mark.parametrize(("host", "token", "first", "second"), [
    ("127.0.0.1", False, "http://127.0.0.1:2024/mcp", "nobody may index over HTTP"),
    ("::1", False, "http://[::1]:2024/mcp", "nobody may index over HTTP"),
    ("0.0.0.0", False, "http://127.0.0.1:2024/mcp", "warning: no LOTSMAN_AUTH_TOKEN and listening on 0.0.0.0"),
    ("0.0.0.0", True, "http://127.0.0.1:2024/lotsman/", "every request needs Authorization: Bearer"),
])
def test_serve_notes_say_where_the_tools_are_and_who_may_index(host, token, first, second) -> None:
    from graph.cli_serve import serve_notes

    notes = serve_notes(host, 2024, token=token)
    assert len(notes) == 2 and first in notes[0] and second in notes[1]
