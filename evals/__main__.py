"""`python -m evals ARGS` is `lotsman eval ARGS`: the same command through the same CLI (same arguments,
same one-line errors and exit codes), also where the console script is not on PATH."""

from __future__ import annotations

import sys

from graph.cli import main

if __name__ == "__main__":
    sys.exit(main(["eval", *sys.argv[1:]]))
