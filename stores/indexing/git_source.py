"""A git revision as a source of files: the tree and blobs of a tag, branch or commit, read through the `git`
executable (`rev-parse`, `ls-tree -r -z`, `cat-file --batch`) without touching the working tree."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from stores.errors import IndexingError
from stores.indexing.files import (
    DEFAULT_INCLUDE_EXTS,
    DEFAULT_MAX_BYTES,
    NON_UTF8_FILE,
    CollectedFiles,
    SkippedFile,
    SourceFile,
    escaped_path,
    is_candidate_path,
    is_utf8_name,
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


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    exe = shutil.which("git")
    if exe is None:
        raise IndexingError("--ref needs the `git` executable, which is not on PATH: install git")
    try:
        return subprocess.run([exe, "-C", str(cwd), *args], input=stdin, capture_output=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise IndexingError(f"`git {args[0]}` in {escaped_path(str(cwd))} took more than {GIT_TIMEOUT_S:.0f} s: "
                            "nothing was indexed") from None


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


def collect_revision(revision: Revision, *, max_bytes: int = DEFAULT_MAX_BYTES,
                     include_exts: tuple[str, ...] = DEFAULT_INCLUDE_EXTS) -> CollectedFiles:
    """The indexable files of a revision (under its PATH), vetted like `collect_files` vets a folder.

    Blobs over `max_bytes` are skipped from their listed size without being read; the others are read in one
    `git cat-file --batch`. A symlink is reported and not followed (its blob is the link's target path).
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
    for entry, data in zip(wanted, _read_blobs(revision, [e.sha for e in wanted]), strict=True):
        vetted = vet_bytes(entry.path, data, max_bytes, abs_path=Path(revision.root) / entry.path)
        if isinstance(vetted, SourceFile):
            files.append(vetted)
        else:
            skipped.append(vetted)
    files.sort(key=lambda item: item.path)
    skipped.sort(key=lambda item: item.path)
    return CollectedFiles(files=files, skipped=skipped)


def _read_blobs(revision: Revision, shas: list[str]) -> list[bytes]:
    """The contents of `shas`, in order (one `cat-file --batch` for all of them)."""
    if not shas:
        return []
    out = _git(Path(revision.root), "cat-file", "--batch", stdin="".join(f"{s}\n" for s in shas).encode())
    if out.returncode != 0:
        raise IndexingError(f"git cat-file failed in {revision.repo_path}: {_first_line(out.stderr)}")
    return split_batch(out.stdout, len(shas))


def split_batch(stream: bytes, count: int) -> list[bytes]:
    """Blob contents from `cat-file --batch` output: `<sha> <type> <size>\\n<content>\\n` per object."""
    blobs: list[bytes] = []
    pos = 0
    for _ in range(count):
        end = stream.index(b"\n", pos)
        header = stream[pos:end].split()
        if len(header) != 3:  # `<sha> missing`: git answered for an object it does not have
            raise IndexingError(f"git cat-file: {_first_line(stream[pos:end])}")
        size = int(header[2])
        blobs.append(stream[end + 1:end + 1 + size])
        pos = end + 1 + size + 1
    return blobs
