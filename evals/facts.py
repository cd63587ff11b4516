"""When a text states a key fact: the one matcher of the answer metrics and of the dataset checkers.

A fact shaped like an identifier or a symbol (`--all`, `.types`, `~/.config`, `Content-Type`, `True`,
`status_code=422`) is matched case-sensitively on the raw text, so `--all` is not credited by the word
"all" nor `True` by "true". Any other fact (a phrase, a number) is matched after folding case,
punctuation and whitespace. Both match whole words only: `422` is not in `4220`, `зависимост` (a stem)
is in no text. A fact without a letter or digit (`'*'`) can never match. `evals/datasets/check_dataset.py`
imports `fact_in_text` and rejects a fact that this rule cannot find in its own gold files.
"""

from __future__ import annotations

import re

_PUNCT = re.compile(r"[^\w]+", re.UNICODE)
_WORD_CHAR = re.compile(r"\w", re.UNICODE)
_QUOTE_MARK = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)
_SPACE = re.compile(r"\s+")
_SENTENCE_END = ".,;:!?…"
# Characters that may sit inside a prose token; anything else (`_ . : / = ( ' " + ≥ ...`) is a symbol.
_PROSE_CHARS = set("-,«»—–")


def fold(text: str) -> str:
    """Lower-case, punctuation and whitespace folded to single spaces."""
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def contains_words(text: str, phrase: str) -> bool:
    """The folded phrase occurs in the folded text as whole words (`422` is not in `4220`)."""
    p = fold(phrase)
    return bool(p) and f" {p} " in f" {fold(text)} "


def _latin_upper(c: str) -> bool:
    return c.isascii() and c.isupper()


def _symbol_token(token: str, *, only: bool, first: bool) -> bool:
    core = token.rstrip(_SENTENCE_END)
    if not core:
        return False
    if core[0] in "-.~/":  # --flag, .env, ~/.config, /users/me
        return True
    if any(not (c.isalnum() or c in _PROSE_CHARS) for c in core):
        return True  # snake_case, dotted.name, call(), a=b, 'quoted', 09:00, 30+, ≥3
    if any(_latin_upper(c) for c in core[1:]):
        return True  # CamelCase, ALLCAPS, Content-Type, HS256
    # A capitalised Latin word is a name (True, Path, Alembic), unless it only starts a phrase.
    return _latin_upper(core[0]) and (only or not first)


def symbol_shaped(fact: str) -> bool:
    """The fact names an identifier or symbol somewhere, so it is matched case-sensitively, raw."""
    tokens = fact.split()
    return any(_symbol_token(t, only=len(tokens) == 1, first=i == 0) for i, t in enumerate(tokens))


def raw_form(text: str) -> str:
    """The text as read, not as marked up: quote marks at line starts and inline-code backticks dropped,
    whitespace runs made one space (a quoted passage keeps the file's words, line breaks aside)."""
    return _SPACE.sub(" ", _QUOTE_MARK.sub("", text).replace("`", " ")).strip()


def _raw_pattern(fact: str) -> re.Pattern[str]:
    body = re.escape(fact)
    # At a word-character edge the neighbour must not continue the word: no letter, digit, `_`, and no
    # hyphen joining another word (`--all` is not in `--all-tags`, `Path` not in `Path-like`).
    left = r"(?<!\w)(?<!\w-)" if _WORD_CHAR.match(fact[0]) else ""
    right = r"(?!\w)(?!-\w)" if _WORD_CHAR.match(fact[-1]) else ""
    return re.compile(left + body + right)


def fact_in_text(fact: str, text: str) -> bool:
    """True when `text` states `fact` by the rule of this module (see the module docstring)."""
    if not _WORD_CHAR.search(fact):
        return False
    if not symbol_shaped(fact):
        return contains_words(text, fact)
    needle = raw_form(fact)
    return bool(needle) and _raw_pattern(needle).search(raw_form(text)) is not None
