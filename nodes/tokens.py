"""Token-level predicates shared by the extractors: cleaning, words, stems, paths, identifiers, entities."""

from __future__ import annotations

import re

# Edge punctuation to trim; braces stay (endpoint templates like `/items/{item_id}`), parentheses are
# trimmed after call-like detection (`get_db()`).
_EDGE_PUNCT = ".,;:!?\"'`«»“”„‘’…()[]<>*"
_WORD_RE = re.compile(r"[0-9A-Za-zА-Яа-яЁё_]+(?:\.[0-9A-Za-zА-Яа-яЁё_]+)*")
_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ENDPOINT_RE = re.compile(r"^/[A-Za-z0-9_\-~{}:.]+(?:/[A-Za-z0-9_\-~{}:.]+)*/?$")
_CYRILLIC_RE = re.compile(r"[а-яё]")
# File names by hard rules only (seed 002 §5). `.py`, `.toml`, `.rst` and `.txt` are added to the seed's
# md/yaml/yml/json because the code lane (SPEC §5 retrieval_policy) keys on `.py` names.
FILE_EXTENSIONS = (".md", ".markdown", ".rst", ".txt", ".yaml", ".yml", ".json", ".toml", ".py")
DOC_DIR_PREFIXES = ("docs/", "doc/", "documentation/")
# Russian inflection endings, longest first so `иями` wins over `ями` and `и`.
_RU_ENDINGS = (
    "иями",
    *("ями", "ами", "иях", "ого", "его", "ому", "ему", "ыми", "ими", "ией"),
    *("ью", "ях", "ах", "ов", "ев", "ей", "ой", "ый", "ий", "ая", "яя", "ое", "ее", "ые", "ие", "ых", "их"),
    *("ую", "юю", "ом", "ем", "ам", "ям", "ия", "ии", "ию"),
    *("а", "я", "о", "е", "ы", "и", "у", "ю", "ь", "й"),
)


def clean_token(token: str) -> str:
    """Trim edge punctuation (and an unbalanced closing brace) from one whitespace-separated token."""
    token = token.lstrip("\"'`«“„‘(")  # opening quotes/brackets only, so `./docs` keeps its leading dot here
    token = token.removeprefix("./").strip(_EDGE_PUNCT)
    while token.endswith("}") and token.count("{") < token.count("}"):
        token = token[:-1].rstrip(_EDGE_PUNCT)
    return token


def words_of(text: str) -> list[str]:
    """Lower-case words of `text`; dots inside a word are kept (`fastapi.routing`, `cors.md`)."""
    return [w.lower() for w in _WORD_RE.findall(text)]


def stem(word: str) -> str:
    """A light stem so inflected forms meet: `зависимостях`→`зависимост`, `scopes`→`scope`.

    Deliberately crude (no dictionary): it only has to map the forms of one word to one key, and it
    must be cheap enough to run on every word of every alias at index load.
    """
    w = word.lower().replace("ё", "е")
    if _CYRILLIC_RE.search(w):
        for ending in _RU_ENDINGS:
            if w.endswith(ending) and len(w) - len(ending) >= 3:
                return w[: -len(ending)]
        return w
    if not w.isascii() or not w.isalpha() or len(w) <= 4:
        return w
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "i"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("y") and len(w) > 3:
        w = w[:-1] + "i"
    elif w.endswith("ie"):
        w = w[:-1]
    return w


def is_file_name(token: str) -> bool:
    """A real file/doc path: a known extension, or under `docs/`, `doc/`, `documentation/`."""
    lowered = token.lower()
    if "//" in lowered or ".." in lowered or lowered.startswith(("http:", "https:")):
        return False
    has_ext = lowered.endswith(FILE_EXTENSIONS) and len(lowered.rsplit("/", 1)[-1]) > 3
    return has_ext or (lowered.startswith(DOC_DIR_PREFIXES) and len(lowered) > len("docs/"))


def is_endpoint_path(token: str) -> bool:
    """An HTTP path like `/health` or `/items/{item_id}`: starts with `/`, has a letter, is not a file."""
    if not _ENDPOINT_RE.match(token) or is_file_name(token) or ".." in token:
        return False
    return any(ch.isalpha() for ch in token) and token.count("{") == token.count("}")


def is_path_like(token: str) -> bool:
    """Contains a path separator; such tokens are endpoints, files, or broken and dropped from terms."""
    return "/" in token or "\\" in token


def is_identifier(token: str) -> bool:
    """Code-like token: snake_case, dotted name, camel/PascalCase, letters+digits, or a call `name()`."""
    call_like = token.endswith("()")
    name = token[:-2] if call_like else token
    if not _IDENTIFIER_RE.match(name) or is_file_name(name):
        return False
    has_lower = any(ch.islower() for ch in name)
    inner_upper = has_lower and any(ch.isupper() for ch in name[1:])
    letters_digits = any(ch.isdigit() for ch in name) and any(ch.isalpha() for ch in name)
    return (
        call_like
        or "_" in name.strip("_")
        or name.startswith("__")
        or "." in name
        or inner_upper
        or letters_digits
    )


def is_entity_name(token: str) -> bool:
    """PascalCase-like (seed 002 §5): `RagSession`, `APIRouter`, `OAuth2`; a lone capital word is not."""
    if not token[:1].isupper() or not token.isascii() or not token.isalnum():
        return False
    rest = token[1:]
    return any(ch.islower() for ch in token) and any(ch.isupper() or ch.isdigit() for ch in rest)
