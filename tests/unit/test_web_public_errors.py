"""Issue 37 item 6 on the web endpoints (fake backend): the database's failures reach the client as one fixed
line and a 503, never with the data folder, the socket path or DATABASE_URL's host, port, database and user."""

from __future__ import annotations

import psycopg
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from graph.errors import DATABASE_DOWN, EMBEDDED_DOWN, NO_PGVECTOR
from graph.web import routes
from stores.database import STOPPED_MESSAGE, EmbeddedStoppedError
from stores.errors import DatabaseUnavailableError, EmbeddedServerError, PgvectorMissingError, UsageError
from tests.unit.test_web import FakeBackend

SECRETS = ("/srv/lotsman/.data", ".s.PGSQL", "alice", "payroll", "10.1.2.3", "6543")


@pytest.mark.parametrize(("failure", "status", "says"), [
    (DatabaseUnavailableError("cannot connect to PostgreSQL at postgresql://alice@10.1.2.3:6543/payroll: "
                              "connection refused. Check DATABASE_URL"), 503, DATABASE_DOWN),
    (DatabaseUnavailableError('cannot connect to PostgreSQL at postgresql://postgres@/postgres: connection to '
                              'server on socket "/srv/lotsman/.data/pg/.s.PGSQL.5432" failed'), 503, DATABASE_DOWN),
    (psycopg.OperationalError('connection to server at "10.1.2.3", port 6543 failed: server closed the connection '
                              "unexpectedly"), 503, DATABASE_DOWN),
    (EmbeddedServerError("the embedded PostgreSQL did not start in /srv/lotsman/.data/pg: see its log"), 503,
     EMBEDDED_DOWN),
    (PgvectorMissingError("the database payroll at 10.1.2.3 has no pgvector"), 503, NO_PGVECTOR),
    (EmbeddedStoppedError(STOPPED_MESSAGE), 503, STOPPED_MESSAGE),
    (UsageError("bad thing at postgresql://alice:pw@10.1.2.3:6543/payroll"), 400, "bad thing at <database>"),
], ids=["url", "socket", "lost", "embedded", "pgvector", "stopped", "our-error-redacted"])
def test_database_failures_are_one_fixed_line(failure: BaseException, status: int, says: str) -> None:
    backend = FakeBackend()
    backend.fail = failure
    client = TestClient(Starlette(routes=routes(backend, lambda: None)), raise_server_exceptions=False)
    for method, url in [("GET", "/lotsman/api/sessions"), ("POST", "/lotsman/api/feedback"),
                        ("GET", "/lotsman/api/read?session=s&path=a.md&start_line=1&end_line=1")]:
        res = client.request(method, url, json={"session": "s", "score": 1, "question": "q"})
        assert res.status_code == status, res.text
        assert res.json() == {"error": says}
        assert not any(secret in res.text for secret in SECRETS), res.text
