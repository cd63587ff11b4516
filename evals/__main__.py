"""`python -m evals ARGS` is `lotsman eval ARGS` (same arguments, same one-line errors)."""

from __future__ import annotations

import argparse
import sys
import warnings

from evals.cli import add_arguments, handler
from stores.errors import LotsmanError


def main(argv: list[str] | None = None) -> int:
    from graph.settings import get_settings

    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(prog="python -m evals", description="Lotsman evals (same as `lotsman eval`).")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return handler(args, get_settings())
    except LotsmanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
