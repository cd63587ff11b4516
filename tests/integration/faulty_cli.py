"""The real `lotsman` CLI with one fault injected, for tests that need a job to fail or stop at a known point.

    python -m tests.integration.faulty_cli FAULT lotsman-args...

FAULT is one of:
- `none`: no fault (the same process shape as the faulty runs).
- `parse-raise:TEXT`: parsing a file whose path contains TEXT raises `ValueError` (a parser bug on a bad
  file: nothing the job expects).
- `embed-block:DIR`: the job's first embedding batch touches `DIR/blocked`, then waits until `DIR/release`
  exists (the test kills the process or stops the database meanwhile).
- `tail-block:DIR`: after the job's rows are committed, its stoplist refresh touches `DIR/blocked` and
  waits until `DIR/release` exists (the test sends SIGINT meanwhile).

Everything else is the installed code: the database, the pipelines, the writer, the CLI's error handling.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def _wait_for_release(folder: Path) -> None:
    (folder / "blocked").touch()
    while not (folder / "release").exists():
        time.sleep(0.05)


def install(fault: str) -> None:
    kind, _, arg = fault.partition(":")
    if kind == "none":
        return
    if kind == "parse-raise":
        from stores.indexing import parsing

        original = parsing.parse_file

        def parse_file(source):  # type: ignore[no-untyped-def]
            if arg in source.path:
                raise ValueError(f"injected parser failure on {source.path}")
            return original(source)

        parsing.parse_file = parse_file
    elif kind == "embed-block":
        from stores.indexing import service

        run = service._Embedder._run

        def blocking_run(self, texts):  # type: ignore[no-untyped-def]
            _wait_for_release(Path(arg))
            return run(self, texts)

        service._Embedder._run = blocking_run  # type: ignore[method-assign]
    elif kind == "tail-block":
        from stores.indexing import service

        refresh = service._refresh_stop_lexemes

        def blocking_refresh(db, session):  # type: ignore[no-untyped-def]
            _wait_for_release(Path(arg))
            return refresh(db, session)

        service._refresh_stop_lexemes = blocking_refresh
    else:
        raise SystemExit(f"unknown fault {fault!r}")


if __name__ == "__main__":
    install(sys.argv[1])
    from graph.cli import main

    sys.exit(main(sys.argv[2:]))
