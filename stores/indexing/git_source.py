"""A git revision as a source of files: the tree and blobs of a tag, branch or commit, read through the `git`
executable (`rev-parse`, `ls-tree -r -z`, `cat-file --batch`) without touching the working tree."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import stores.indexing.files as files
from stores.errors import IndexingError
from stores.indexing.files import (
    DEFAULT_INCLUDE_EXTS,
    DEFAULT_MAX_BYTES,
    LARGE_HINT,
    NON_UTF8_FILE,
    CollectedFiles,
    SkippedFile,
    SourceFile,
    escaped_path,
    is_candidate_path,
    is_utf8_name,
    too_many_files,
    vet_bytes,
)

GIT_TIMEOUT_S = 120.0
"""A git call that takes longer than this is stuck (a lock, a network filesystem): the job fails with one line."""

SYMLINK_MODE = "120000"
BLOB_MODES = ("100644", "100755")


@dataclass(frozen=True, slots=True)
class Revision:
    """The revision a session is indexed from."""

    repo_path: str
    """The repository's top-level folder (or the bare repository's folder)."""
    ref: str
    """The ref as the user gave it (`v1.2`, `main`, a sha)."""
    commit_sha: str
    """The full sha of the commit the ref named when it was indexed."""
    root: str
    """The indexed folder (PATH): the repository, or a folder inside it whose subtree is indexed."""
    prefix: str = ""
    """PATH relative to the repository's top level (`docs/`), empty when PATH is the top level."""


REPOSITORY_ENV = frozenset({
    "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NAMESPACE", "GIT_QUARANTINE_PATH", "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE", "GIT_REPLACE_REF_BASE",
    "GIT_NO_REPLACE_OBJECTS",
})
"""Variables that name one repository's location, object store, index or ref space. A git hook exports them
for its own repository (a post-commit in a worktree: GIT_DIR and GIT_INDEX_FILE; a pre-receive hook:
GIT_QUARANTINE_PATH), so `lotsman index PATH --ref v1` run from a hook of another repository read that
repository's v1. `git rev-parse --local-env-vars` also lists GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT, but
those carry the user's configuration, not a repository: a container that owns its repository as another user
sets `safe.directory` through GIT_CONFIG_COUNT / GIT_CONFIG_KEY_0 / GIT_CONFIG_VALUE_0, and without them every
`--ref` failed with git's "detected dubious ownership". So every GIT_CONFIG_* variable is kept, as are HOME,
GIT_CEILING_DIRECTORIES, GIT_EXEC_PATH and GIT_TRACE*."""


def git_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment `git` runs in: the caller's, without the variables that pin another repository
    (`REPOSITORY_ENV`), and with git's messages in English (`not a git repository` is matched to say what to
    do)."""
    env = {name: value for name, value in (os.environ if base is None else base).items()
           if name not in REPOSITORY_ENV}
    env["LC_ALL"] = "C"
    return env


def _git_exe() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise IndexingError("--ref needs the `git` executable, which is not on PATH: install git")
    return exe


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run([_git_exe(), "-C", str(cwd), *args], capture_output=True, env=git_environment(),
                              timeout=GIT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise _too_slow(cwd, args[0]) from None


def _too_slow(cwd: Path, command: str) -> IndexingError:
    return IndexingError(f"`git {command}` in {escaped_path(str(cwd))} took more than {GIT_TIMEOUT_S:.0f} s: "
                         "nothing was indexed")


def _first_line(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return text.splitlines()[0] if text else ""


def resolve_revision(path: Path, ref: str) -> Revision:
    """The commit `ref` names in the repository at `path` (PATH may be a folder inside the repository).

    Raises:
        IndexingError: one line when `path` is not a git repository, `ref` names no commit there, or git is
            missing.
    """
    path = Path(path).expanduser()
    shown = escaped_path(str(path))
    if not path.is_dir():
        raise IndexingError(f"path not found: {shown}" if not path.exists() else
                            f"not a directory: {shown} (--ref needs a git repository folder)")
    if not ref.strip() or ref.startswith("-") or "\x00" in ref:
        raise IndexingError(f"not a git ref: {ref!r} (give a tag, branch or commit, e.g. --ref v1.0)")
    top = _git(path, "rev-parse", "--show-toplevel", "--show-prefix")
    if top.returncode != 0:
        bare = _git(path, "rev-parse", "--is-bare-repository")
        if bare.returncode != 0 or bare.stdout.strip() != b"true":
            said = _first_line(top.stderr)
            if "not a git repository" not in said.lower():  # e.g. git's "dubious ownership": say git's reason
                raise IndexingError(f"git cannot read {shown}: {said}")
            raise IndexingError(f"{shown} is not a git repository: --ref reads a revision from git "
                                "(index the folder without --ref, or give the repository's path)")
        repo, prefix = path.resolve(), ""
    else:
        lines = top.stdout.decode("utf-8", "surrogateescape").split("\n")
        repo, prefix = Path(lines[0]), (lines[1] if len(lines) > 1 else "")
    # no --end-of-options here (rev-parse has it since git 2.30 only): a ref starting with "-" is refused above
    got = _git(path, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if got.returncode != 0:
        raise IndexingError(f"no revision {ref!r} in {escaped_path(str(repo))}: give a tag, branch or commit "
                            "that exists there (`git tag`, `git branch -a`); nothing was indexed")
    commit = _first_line(got.stdout)
    folder = prefix.rstrip("/")
    if folder and _git(path, "cat-file", "-e", f"{commit}:{folder}").returncode != 0:
        # ls-tree would list nothing and exit 0: an empty snapshot would replace the session's index
        raise IndexingError(f"{escaped_path(folder)} does not exist in revision {ref!r} of "
                            f"{escaped_path(str(repo))}: index the repository's root or another revision; "
                            "nothing was indexed")
    return Revision(repo_path=escaped_path(str(repo)), ref=ref, commit_sha=commit,
                    root=escaped_path(str(path.resolve())), prefix=prefix)


@dataclass(frozen=True, slots=True)
class _Entry:
    mode: str
    kind: str
    sha: str
    size: int
    path: str


def _tree_entries(revision: Revision) -> list[_Entry]:
    # -z: paths unquoted, NUL-terminated; run in PATH so only its subtree is listed, relative to it
    listing = _git(Path(revision.root), "ls-tree", "-r", "-z", "-l", "--end-of-options", revision.commit_sha)
    if listing.returncode != 0:
        raise IndexingError(f"git ls-tree failed for {revision.commit_sha}: {_first_line(listing.stderr)}")
    return [entry for raw in listing.stdout.split(b"\0") if raw and (entry := parse_tree_line(raw))]


def parse_tree_line(raw: bytes) -> _Entry | None:
    """One `ls-tree -r -z -l` record (`<mode> <type> <sha> <size>\\t<path>`); None for a malformed one."""
    head, sep, name = raw.partition(b"\t")
    parts = head.split()
    if not sep or len(parts) != 4:
        return None
    mode, kind, sha, size = (p.decode("ascii", "replace") for p in parts)
    return _Entry(mode, kind, sha, int(size) if size.isdigit() else -1,
                  name.decode("utf-8", "surrogateescape"))


def count_revision_candidates(revision: Revision, *, include_exts: tuple[str, ...] = DEFAULT_INCLUDE_EXTS) -> int:
    """How many candidate files `collect_revision` would vet (blobs `is_candidate_path` takes), from one
    `git ls-tree` listing: no blob is read."""
    return sum(1 for entry in _tree_entries(revision)
               if entry.kind == "blob" and is_candidate_path(entry.path, include_exts))


def check_revision_size(revision: Revision, *, allow_large: bool = False, limit: int | None = None,
                        hint: str = LARGE_HINT) -> None:
    """Refuse a revision with more than `limit` (`files.CONFIRM_ABOVE_FILES`) candidates unless `allow_large`,
    as `files.check_folder_size` refuses a folder: before anything is created or read.

    Raises:
        TooManyFilesError: too many candidates and not `allow_large`.
    """
    if allow_large:
        return
    limit = files.CONFIRM_ABOVE_FILES if limit is None else limit
    if count_revision_candidates(revision) > limit:
        raise too_many_files(f"revision {escaped_path(revision.ref)[:80]} of {escaped_path(revision.root)}", limit,
                             hint)


def collect_revision(revision: Revision, *, max_bytes: int = DEFAULT_MAX_BYTES,
                     include_exts: tuple[str, ...] = DEFAULT_INCLUDE_EXTS,
                     checkpoint: Callable[[], None] | None = None) -> CollectedFiles:
    """The indexable files of a revision (under its PATH), vetted like `collect_files` vets a folder.

    Blobs over `max_bytes` are skipped from their listed size without being read; the others are streamed from
    one `git cat-file --batch` and vetted one at a time (only the decoded texts are kept). A symlink is
    reported and not followed (its blob is the link's target path). `checkpoint` is called before each blob is
    vetted; it raises to stop (a cancelled job: git is killed on the way out).
    """
    wanted: list[_Entry] = []
    skipped: list[SkippedFile] = []
    for entry in _tree_entries(revision):
        if entry.kind != "blob" or not is_candidate_path(entry.path, include_exts):
            continue
        if not is_utf8_name(entry.path):
            skipped.append(SkippedFile(escaped_path(entry.path), NON_UTF8_FILE))
        elif entry.mode == SYMLINK_MODE:
            skipped.append(SkippedFile(entry.path, "symlink: a git revision's links are not followed"))
        elif entry.size > max_bytes:
            skipped.append(SkippedFile(entry.path, f"too large: {entry.size} bytes > limit {max_bytes}"))
        elif entry.mode in BLOB_MODES:
            wanted.append(entry)
    files: list[SourceFile] = []
    with _blob_stream(revision, [e.sha for e in wanted]) as blobs:
        for entry, data in zip(wanted, blobs, strict=True):
            if checkpoint is not None:
                checkpoint()
            vetted = vet_bytes(entry.path, data, max_bytes, abs_path=Path(revision.root) / entry.path)
            if isinstance(vetted, SourceFile):
                files.append(vetted)
            else:
                skipped.append(vetted)
    files.sort(key=lambda item: item.path)
    skipped.sort(key=lambda item: item.path)
    return CollectedFiles(files=files, skipped=skipped)


@contextmanager
def _blob_stream(revision: Revision, shas: list[str]) -> Iterator[Iterator[bytes]]:
    """The contents of `shas` in order, read from one `git cat-file --batch` as they come: a tag's blobs are
    never all in memory at once (the whole output read at once, then cut, held each blob two or three times
    beside its decoded text). The shas go in through a temporary file, so git never waits for us to read
    while we wait for it to read; a git that takes longer than `GIT_TIMEOUT_S` is killed."""
    if not shas:
        yield iter(())
        return
    cwd = Path(revision.root)
    with tempfile.TemporaryFile() as requests, tempfile.TemporaryFile() as errors:
        requests.write("".join(f"{sha}\n" for sha in shas).encode())
        requests.seek(0)
        proc = subprocess.Popen([_git_exe(), "-C", str(cwd), "cat-file", "--batch"], stdin=requests,
                                stdout=subprocess.PIPE, stderr=errors, env=git_environment())
        out = proc.stdout
        assert out is not None
        timed_out = threading.Event()

        def stop() -> None:
            timed_out.set()
            proc.kill()

        timer = threading.Timer(GIT_TIMEOUT_S, stop)
        timer.daemon = True
        timer.start()

        def failure() -> IndexingError | None:
            """Why git stopped, once it has: killed by the timer, or its own error (None when it succeeded)."""
            if proc.wait() == 0:
                return None
            if timed_out.is_set():
                return _too_slow(cwd, "cat-file")
            errors.seek(0)
            return IndexingError(f"git cat-file failed in {revision.repo_path}: {_first_line(errors.read())}")

        def blobs() -> Iterator[bytes]:
            try:
                yield from read_batch(out, len(shas))
            except MissingObject as missing:
                # git goes on writing the blobs after it into a pipe nobody reads: waiting for git here waited
                # out the timer and said "took more than 120 s"; the `finally` below kills it instead
                raise IndexingError(f"{missing} in {revision.repo_path} (a damaged or partial clone: "
                                    "`git fsck` lists what is lost); nothing was indexed") from None
            except IndexingError as cut:  # the output ended: git has stopped, and its own reason is better
                raise (failure() or cut) from None
            if (error := failure()) is not None:
                raise error

        try:
            yield blobs()
        finally:
            timer.cancel()
            if proc.poll() is None:  # the caller stopped reading (an error): git must not outlive the job
                proc.kill()
            proc.wait()
            out.close()


class MissingObject(IndexingError):
    """`cat-file --batch` answered `<sha> missing` (or `ambiguous`): git is still running, with the answers
    for the objects after it still to write."""


def read_batch(stream: IO[bytes], count: int) -> Iterator[bytes]:
    """Blob contents from `cat-file --batch` output, one at a time: `<sha> <type> <size>\\n<content>\\n` per
    object.

    Raises:
        MissingObject: git answered `<sha> missing` for an object.
        IndexingError: the output ended early.
    """
    for _ in range(count):
        line = stream.readline()
        header = line.split()
        if not line.endswith(b"\n"):
            raise IndexingError("git cat-file: the output ended early (git stopped)")
        if len(header) != 3 or not header[2].isdigit():  # `<sha> missing`: an object git does not have
            said = _first_line(line)
            sha, _, answer = said.partition(" ")
            raise MissingObject(f"git cat-file: object {sha} is {answer}" if sha and answer else
                                f"git cat-file: an answer without a size: {said!r}")
        size = int(header[2])
        data = stream.read(size + 1)
        if len(data) != size + 1:
            raise IndexingError("git cat-file: the output ended early (git stopped)")
        yield data[:size]


def split_batch(stream: bytes, count: int) -> list[bytes]:
    """Blob contents from a whole `cat-file --batch` output held in memory (`read_batch` over bytes)."""
    return list(read_batch(io.BytesIO(stream), count))
