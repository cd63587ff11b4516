"""Collecting a repository's indexable files: walk, filter, read and vet each one (pure, no DB)."""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from stores.errors import IndexingError

DEFAULT_MAX_BYTES = 1_000_000
DEFAULT_INCLUDE_EXTS: tuple[str, ...] = (".md", ".markdown", ".py")

IGNORED_DIR_NAMES = frozenset({"node_modules", "__pycache__", "__pypackages__", "site-packages", "venv"})
"""Directories never descended into (besides hidden ones such as `.git`, `.venv`, `.langgraph_api`)."""

_BINARY_SNIFF_BYTES = 8192

CONFIRM_ABOVE_FILES = 5000
"""Every index job (`lotsman index` with or without `--ref`, the index graph, `watch`, hooks:
`index_repository`'s `allow_large`) refuses a folder or a git revision with more candidate files than this
unless told it is meant (`--yes`, `allow_large: true`), or it is the folder whose working tree the session's
live index was built from (`unchanged.size_accepted`). The standard library (729 files → 73k rows) takes
2.5–3 minutes cold with `use` on 2 cores, so 5,000 files is ~20 minutes and ~500k rows: larger than any
repository we measured (the eval corpora have 17–174 files), while the paths that reach it by mistake are far
larger (`/usr` here: 21k `.py`/`.md` files; `/` or a home folder more)."""

LARGE_HINT = "pass allow_large: true"
"""What a refused caller of `index_repository` is told to do (the index graph's request field, the service's
argument); the CLI commands pass their own (`--yes`, or for hooks `lotsman index ... --yes` once)."""

BACKSLASH_IS_SEPARATOR = os.sep == "\\"
"""Whether `\\` separates folders in this system's paths (Windows). On POSIX it is a name character: the walk
stores `back\\slash.md` verbatim, so a path is never rewritten there before it is looked up."""

EMPTY_FILE = "empty file"
EMPTY_WHITESPACE = "empty file (whitespace only)"
NON_UTF8_FILE = "file name is not valid UTF-8: rename it to index it"
NON_UTF8_DIR = "folder name is not valid UTF-8: rename it to index its files"


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file that passed every check and is ready for a pipeline."""

    path: str
    """Path relative to the root, with forward slashes."""
    abs_path: Path
    """Absolute path on disk (the link itself for a symlink inside the root)."""
    text: str
    """Decoded UTF-8 text with newlines normalized to `\\n` (line numbers match editors)."""
    blob_sha: str
    """Git-style blob sha1 of the raw bytes: the cache key for unchanged files."""


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A candidate file that was not indexed, with a reason a user can act on."""

    path: str
    """Path relative to the root, with forward slashes."""
    reason: str
    """Human reason, e.g. "binary file" or "too large: 2000000 bytes > limit 1000000"."""


def is_empty_module(skip: SkippedFile) -> bool:
    """An empty (or whitespace-only) `.py` file: a package's `__init__.py` most often, normal and nothing to
    fix. Reports count these instead of listing them among the skipped files (empty `.md` pages stay listed)."""
    return skip.path.lower().endswith(".py") and skip.reason in (EMPTY_FILE, EMPTY_WHITESPACE)


@dataclass(frozen=True, slots=True)
class CollectedFiles:
    """The result of walking a root: indexable files and reported skips, both sorted by path."""

    files: list[SourceFile] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


def git_blob_sha(data: bytes) -> str:
    """Return the sha1 git would give `data` as a blob (`git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def escaped_path(path: str) -> str:
    """`path` with the bytes of a name that is not valid UTF-8 written as `\\xe9` escapes.

    Python hands such names over as lone surrogates (`caf\\udce9.md`): they cannot be encoded, so storing or
    printing them raised `UnicodeEncodeError` and aborted a whole index job. The escaped form can be stored
    (job rows) and printed, and tells the user which bytes to rename.
    """
    if is_utf8_name(path):
        return path
    try:
        raw = os.fsencode(path)
    except UnicodeEncodeError:  # a surrogate that did not come from the file system's bytes
        return path.encode("utf-8", "backslashreplace").decode("ascii", "replace")
    return raw.decode("utf-8", "backslashreplace")


def is_utf8_name(name: str) -> bool:
    """Whether `name` is valid Unicode text (not bytes smuggled in as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def normalize_newlines(text: str) -> str:
    """Turn `\\r\\n` and lone `\\r` into `\\n`, so `split("\\n")` line numbers match `ast` and editors."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def collect_files(
    root: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    include_exts: tuple[str, ...] = DEFAULT_INCLUDE_EXTS,
    checkpoint: Callable[[], None] | None = None,
) -> CollectedFiles:
    """Walk `root` and return its indexable files plus the candidates that had to be skipped.

    Hidden directories, `node_modules`, `__pycache__` and files with other extensions are ignored
    silently; candidates that fail a check (binary, invalid UTF-8, empty, too large, symlink leaving the
    root, unreadable) are reported in `skipped`. Symlinked directories are not followed: their targets
    inside the root are indexed under their real path, and ones leaving the root are reported.

    Args:
        root: Repository root.
        max_bytes: Files larger than this are skipped.
        include_exts: Lower-case extensions (with the dot) of candidate files.
        checkpoint: called before each candidate is read; it raises to stop the walk (a cancelled job).

    Returns:
        Files and skips, each sorted by relative path.

    Raises:
        FileNotFoundError: `root` does not exist.
        NotADirectoryError: `root` is not a directory.
    """
    real_root = _checked_root(root)
    files: list[SourceFile] = []
    skipped: list[SkippedFile] = []
    for rel, path, reason in _walk(real_root, include_exts):
        if checkpoint is not None:
            checkpoint()
        if reason is not None:
            skipped.append(SkippedFile(rel, reason))
            continue
        result = _load(path, rel, real_root, max_bytes)
        if isinstance(result, SourceFile):
            files.append(result)
        else:
            skipped.append(result)
    files.sort(key=lambda item: item.path)
    skipped.sort(key=lambda item: item.path)
    return CollectedFiles(files=files, skipped=skipped)


def _walk(real_root: Path, include_exts: tuple[str, ...]) -> Iterator[tuple[str, Path, str | None]]:
    """(relative path, path, skip reason or None) of every candidate `collect_files` vets, in walk order:
    candidate files (reason None), and the names it must report without reading (non-UTF-8 names, symlinked
    folders leaving the root)."""
    exts = tuple(ext.lower() for ext in include_exts)
    for dirpath, dirnames, filenames in os.walk(real_root, followlinks=False):
        current = Path(dirpath)
        kept_dirs = []
        for name in sorted(dirnames):
            if is_ignored_name(name):
                continue
            child = current / name
            if not is_utf8_name(name):
                yield escaped_path(_rel(child, real_root)), child, NON_UTF8_DIR
                continue
            if child.is_symlink():
                if not _inside(child.resolve(), real_root):
                    yield _rel(child, real_root), child, "symlink points outside the root"
                continue
            kept_dirs.append(name)
        dirnames[:] = kept_dirs
        for name in sorted(filenames):
            if name.startswith(".") or not name.lower().endswith(exts):
                continue
            if not is_utf8_name(name):
                yield escaped_path(_rel(current / name, real_root)), current / name, NON_UTF8_FILE
                continue
            yield _rel(current / name, real_root), current / name, None


def is_candidate_path(rel: str, include_exts: tuple[str, ...] = DEFAULT_INCLUDE_EXTS) -> bool:
    """Whether a path relative to the root is one `collect_files` would vet: no hidden or ignored folder on
    the way, not hidden itself, an included extension (a git tree's paths go through the same rule)."""
    parts = rel.split("/")
    if any(is_ignored_name(part) for part in parts[:-1]):
        return False
    name = parts[-1]
    return bool(name) and not name.startswith(".") and name.lower().endswith(tuple(e.lower() for e in include_exts))


STAT_RACY_NS = 2_000_000_000
"""A file modified less than this before its stat snapshot was taken may change again within the same mtime
tick (git's "racy clean" files): the no-op check re-reads it instead of trusting its stat."""

StatEntry = tuple[int, int, tuple[int, int]]
"""(size, mtime_ns, (inode, ctime_ns)) of a candidate file, following a symlink; (-1, -1, (-1, -1)) for a
reported name. The ctime is what a rewrite cannot put back: an editor or `touch -r` that restores the mtime of
a same-size change, a `git checkout` within the mtime's granularity. The inode and ctime share one slot so that
a recorded entry keeps its shape `[size, mtime_ns, [inode, ctime_ns], blob_sha]` (the sha stays fourth);
an entry recorded before the ctime was, `[size, mtime_ns, inode, blob_sha]`, matches no stat, so its file's
blob sha decides."""

NO_STAT: StatEntry = (-1, -1, (-1, -1))


def stat_tree(root: Path, *, include_exts: tuple[str, ...] = DEFAULT_INCLUDE_EXTS,
              checkpoint: Callable[[], None] | None = None) -> dict[str, StatEntry]:
    """The stat snapshot of every candidate `collect_files` would vet under `root`, without reading a file:
    what an unchanged folder is recognised by before anything heavier starts. `checkpoint`: as for
    `collect_files`.

    Raises:
        FileNotFoundError: `root` does not exist.
        NotADirectoryError: `root` is not a directory.
    """
    real_root = _checked_root(root)
    out: dict[str, StatEntry] = {}
    for rel, path, reason in _walk(real_root, include_exts):
        if checkpoint is not None:
            checkpoint()
        try:
            st = path.stat() if reason is None else None
        except OSError:  # broken symlink, unreadable: reported by collect_files, compared as a name
            st = None
        out[rel] = (st.st_size, st.st_mtime_ns, (st.st_ino, st.st_ctime_ns)) if st is not None else NO_STAT
    return out


def changed_since(previous: dict[str, list], current: dict[str, StatEntry], taken_ns: int) -> list[str] | None:
    """Which files must be read again to tell whether the folder changed since `previous` was recorded.

    Args:
        previous: path → [size, mtime_ns, [inode, ctime_ns], blob_sha or None] as the last job recorded it
            (taken at `taken_ns`), as JSON gives it back.
        current: this run's `stat_tree`.

    Returns:
        None when the set of names differs (a file added, removed or renamed: the folder changed); otherwise
        the files whose stat differs or was racy (their blob shas decide), often none.
    """
    if previous.keys() != current.keys():
        return None
    return [path for path, now in current.items()
            if _recorded_stat(previous[path]) != now or _last_change_ns(now) >= taken_ns - STAT_RACY_NS]


def _recorded_stat(entry: list) -> tuple:
    """A recorded entry's stat, comparable with a `StatEntry` (JSON turned its tuples into lists)."""
    return tuple(tuple(part) if isinstance(part, list) else part for part in entry[:3])


def _last_change_ns(stat: StatEntry) -> int:
    """When the file last changed by its stat: its mtime, or its ctime when later (the mtime was put back)."""
    times = stat[2]
    return max(stat[1], times[1]) if isinstance(times, tuple) else stat[1]


def count_candidates(
    root: Path, *, stop_after: int, include_exts: tuple[str, ...] = DEFAULT_INCLUDE_EXTS,
) -> int:
    """How many candidate files `collect_files` would vet under `root`, counted without reading any, and
    no further than `stop_after + 1` (a walk of `/` stops as soon as the answer is known).

    Raises:
        FileNotFoundError: `root` does not exist.
        NotADirectoryError: `root` is not a directory.
    """
    real_root = _checked_root(root)
    exts = tuple(ext.lower() for ext in include_exts)
    count = 0
    for dirpath, dirnames, filenames in os.walk(real_root, followlinks=False):
        current = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not is_ignored_name(d) and not (current / d).is_symlink()]
        count += sum(1 for name in filenames if not name.startswith(".") and name.lower().endswith(exts))
        if count > stop_after:
            return stop_after + 1
    return count


def needs_confirmation(candidates: int, *, limit: int = CONFIRM_ABOVE_FILES, confirmed: bool = False,
                       known_root: bool = False) -> bool:
    """Whether an index job must stop and ask for confirmation: more candidates than `limit`, not confirmed,
    and not the folder the session was already built from (its size was accepted then)."""
    return candidates > limit and not confirmed and not known_root


class TooManyFilesError(IndexingError):
    """A folder with more than `CONFIRM_ABOVE_FILES` candidate files, not confirmed: nothing was read or
    written (`check_folder_size`)."""


def check_folder_size(root: Path, *, allow_large: bool = False, known_root: bool = False,
                      limit: int | None = None, hint: str = LARGE_HINT) -> None:
    """Refuse, before anything is read or written, a folder far larger than a repository (`index /`).

    The count stops at `limit + 1` candidates (`count_candidates`): `/` is refused after ~1 s of walking
    instead of every file on the disk being read into memory.

    Args:
        allow_large: the caller confirmed it (`lotsman index --yes`, the index graph's `allow_large`).
        known_root: `root` is the folder the session's live index was built from (its size was accepted then).
        limit: `CONFIRM_ABOVE_FILES` unless given.
        hint: what the caller can do about a refusal, ending the message (`LARGE_HINT`, `pass --yes`, ...).

    Raises:
        TooManyFilesError: more than `limit` candidates and neither flag.
    """
    if allow_large or known_root or not root.is_dir():
        return
    limit = CONFIRM_ABOVE_FILES if limit is None else limit
    count = count_candidates(root, stop_after=limit)
    if needs_confirmation(count, limit=limit, confirmed=allow_large, known_root=known_root):
        raise too_many_files(escaped_path(str(root)), limit, hint)


def too_many_files(what: str, limit: int, hint: str) -> TooManyFilesError:
    """The one-line refusal of a folder or revision (`what`) with more than `limit` candidates."""
    return TooManyFilesError(f"{what} holds more than {limit} .md/.py files (a system or home folder, not a "
                             f"repository?): nothing was indexed; to index it anyway {hint}")


def read_source_file(
    root: Path,
    rel_path: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    *,
    include_exts: tuple[str, ...] = DEFAULT_INCLUDE_EXTS,
) -> SourceFile | SkippedFile:
    """Read one changed file for incremental indexing, with the same checks as `collect_files`.

    Args:
        root: Repository root.
        rel_path: Path relative to `root` with forward slashes, as the walk lists it (a backslash is a
            separator on Windows; on POSIX it is part of the name, which alone is read: `source_spelling`).
        max_bytes: Files larger than this are skipped.
        include_exts: Lower-case extensions (with the dot) of indexable files.

    Returns:
        The file, or a `SkippedFile` saying why it can't be indexed (including paths that escape the
        root, live in ignored directories or do not exist).

    Raises:
        FileNotFoundError: `root` does not exist.
        NotADirectoryError: `root` is not a directory.
    """
    real_root = _checked_root(root)
    if not is_utf8_name(rel_path):
        return SkippedFile(escaped_path(rel_path), NON_UTF8_FILE)
    found = _find_candidate(real_root, source_spelling(rel_path), include_exts)
    if isinstance(found, SkippedFile):
        return found
    path, rel = found
    return _load(path, rel, real_root, max_bytes)


def source_spelling(rel_path: str, *, backslash_separator: bool = BACKSLASH_IS_SEPARATOR) -> str:
    """The one spelling under which an incremental job reads a file the walk listed: with `\\` as a separator
    on Windows, as written on POSIX. No second guess there: when `back\\slash.md` was deleted, reading
    `back/slash.md` instead would index another file under the deleted one's name (and keep its rows)."""
    return rel_path.replace("\\", "/") if backslash_separator else rel_path


def path_spellings(rel_path: str, *, backslash_separator: bool = BACKSLASH_IS_SEPARATOR) -> list[str]:
    """The spellings under which a path a user typed may name a file, in the order to try them: on POSIX the
    name as given first (the walk lists `back\\slash.md` verbatim), then with `\\` as a folder separator (a path
    typed on Windows); on Windows only the latter. Not for a job's reads, which take one name
    (`source_spelling`)."""
    translated = rel_path.replace("\\", "/")
    if backslash_separator or translated == rel_path:
        return [translated]
    return [rel_path, translated]


def _find_candidate(real_root: Path, spelling: str, include_exts: tuple[str, ...]
                    ) -> tuple[Path, str] | SkippedFile:
    """(the file, its path as the walk spells it) that a spelling with `/` separators names under the root,
    or why it cannot be read: the checks of `collect_files` (inside the root, not hidden or ignored, an
    included type) and that it exists."""
    normalized = posixpath.normpath(spelling) if spelling else ""
    if not spelling or spelling.startswith("/") or normalized in ("", ".") or normalized.startswith(".."):
        return SkippedFile(spelling, "path escapes the root")
    parts = normalized.split("/")
    if any(is_ignored_name(part) for part in parts[:-1]) or parts[-1].startswith("."):
        return SkippedFile(normalized, "in an ignored directory or hidden")
    if not parts[-1].lower().endswith(tuple(ext.lower() for ext in include_exts)):
        return SkippedFile(normalized, "unsupported file type")
    candidate = real_root.joinpath(*parts)
    if not candidate.exists() and not candidate.is_symlink():
        return SkippedFile(normalized, "file not found")
    return candidate, normalized


def _checked_root(root: Path) -> Path:
    path = Path(root)
    if not path.exists():
        raise FileNotFoundError(f"path not found: {path}")
    if not path.is_dir():
        raise NotADirectoryError(f"not a directory: {path}")
    return path.resolve()


def is_ignored_name(name: str) -> bool:
    """A folder name the walk never enters: hidden, or one of `IGNORED_DIR_NAMES` (`watch` asks the same)."""
    return name.startswith(".") or name in IGNORED_DIR_NAMES


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _load(path: Path, rel: str, real_root: Path, max_bytes: int) -> SourceFile | SkippedFile:
    """Vet and read one file; every failure becomes a `SkippedFile` rather than an exception."""
    # resolve() catches both a symlinked file and a path that walks through a symlinked directory.
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return SkippedFile(rel, "broken symlink" if path.is_symlink() else "unreadable: cannot resolve path")
    if not _inside(resolved, real_root):
        return SkippedFile(rel, "symlink points outside the root")
    if not resolved.is_file():
        return SkippedFile(rel, "not a regular file")
    try:
        size = resolved.stat().st_size
        if size > max_bytes:
            return SkippedFile(rel, f"too large: {size} bytes > limit {max_bytes}")
        data = resolved.read_bytes()
    except OSError as error:
        return SkippedFile(rel, f"unreadable: {error.strerror or error}")
    return vet_bytes(rel, data, max_bytes, abs_path=path.absolute())


def vet_bytes(rel: str, data: bytes, max_bytes: int, *, abs_path: Path) -> SourceFile | SkippedFile:
    """A file's bytes vetted (size, empty, binary, UTF-8) and decoded, or why it cannot be indexed."""
    # The file may have grown between stat() and read().
    if len(data) > max_bytes:
        return SkippedFile(rel, f"too large: {len(data)} bytes > limit {max_bytes}")
    if not data:
        return SkippedFile(rel, EMPTY_FILE)
    if b"\0" in data[:_BINARY_SNIFF_BYTES]:
        return SkippedFile(rel, "binary file (NUL byte)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return SkippedFile(rel, f"invalid UTF-8 at byte {error.start}")
    text = normalize_newlines(text.removeprefix("\ufeff"))
    if not text.strip():
        return SkippedFile(rel, EMPTY_WHITESPACE)
    return SourceFile(path=rel, abs_path=abs_path, text=text, blob_sha=git_blob_sha(data))
