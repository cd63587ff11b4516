"""`lotsman feedback` and `lotsman gaps`: votes on answers and the questions the docs fail (issue 27)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's subcommands (module-level imports stay light: `lotsman ask` pays for them)."""
