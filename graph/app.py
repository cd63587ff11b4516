"""The deployed graphs for `langgraph.json` (the server brings its own checkpointer and store).

Dependencies are wired lazily: importing this module touches neither the database nor a model.
"""

from __future__ import annotations

from graph.builder import build_graph
from graph.deps import GraphDeps
from graph.errors import install_server_log_filter
from graph.index_graph import build_index_graph

install_server_log_filter()  # a client's unknown session or bad context: one log line, not two tracebacks
deps = GraphDeps.from_settings()
graph = build_graph(deps)
index_graph = build_index_graph(deps)
