"""`git` for tests that build repositories: the caller's repository variables (`GIT_DIR` and the like, set when
the suite runs inside a git hook) are dropped, and commits have a fixed author."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(repo: Path, *args: str, **env: str) -> str:
    """Run `git -C repo ARGS` and return its stdout, stripped; `env` adds variables (e.g. `GIT_CONFIG_GLOBAL`)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    clean.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e",
                 **env)
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=clean).stdout.strip()
