"""What may name a session (or a git revision) wherever a client gives one: the CLI's `--session`, the MCP
tools' `session` and `ref`, and the run context's `rag_session_id` and `ref` (issue 37, item 8).

One pure check, so the three doors agree; each turns its `ValueError` into its own kind of error (an argparse
error, an MCP tool error, an invalid run context). A name PostgreSQL cannot store (a NUL byte), one a terminal or
a log line would have to escape (control characters, bidi controls, lone surrogates) or an endless one is
refused here with a sentence, instead of failing deep in a query as "unexpected DataError".
"""

from __future__ import annotations

from graph.terminal import printable, undecodable

MAX_NAME_CHARS = 256
"""A session name, session id or git revision is at most this long (ids are 32 characters; git refs rarely
pass 100)."""


def check_name(value: str, what: str = "session name") -> str:
    """`value` unchanged when it can name a session (or, with `what="ref"`, a revision).

    Raises:
        ValueError: empty or blank, not UTF-8, holding a control character (NUL, newline, ESC, bidi
            controls, a lone surrogate), or longer than `MAX_NAME_CHARS`; the message says which, on one line.
    """
    if not isinstance(value, str):
        raise ValueError(f"the {what} must be text")
    if not value.strip():
        raise ValueError(f"the {what} is empty")
    if (byte := undecodable(value)) is not None:
        raise ValueError(f"the {what} is not valid UTF-8 (byte {byte})")
    if len(value) > MAX_NAME_CHARS:
        raise ValueError(f"the {what} is {len(value)} characters long: at most {MAX_NAME_CHARS}")
    if printable(value) != value:
        bad = next(ch for ch in value if printable(ch) != ch)
        raise ValueError(f"the {what} holds the control character {printable(bad)}")
    return value
