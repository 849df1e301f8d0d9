"""List the files of a local tree, in path order, with a reason for everything left out.

Inside a git work tree the listing is `git ls-files --cached --others --exclude-standard`, so
.gitignore (nested), .git/info/exclude and the global excludes apply exactly as git applies them.
Elsewhere a walker applies every .gitignore it meets, each compiled once. Symlinks are never
followed out of the root, and never into directories.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pathspec

from flatten.classify import NOISE_DIRS, noise_dir
from flatten.errors import SourceError
from flatten.record import Provenance
from flatten.sources.base import Candidate, Skip
from flatten.sources.gitcmd import git_available, run_git, strip_credentials


def resolve_root(root: str | os.PathLike[str]) -> Path:
    path = Path(root).expanduser()
    if not path.exists():
        raise SourceError(
            f"root not found: {path}",
            reason="root-missing",
            hint="pass an existing directory to --root",
        )
    if not path.is_dir():
        raise SourceError(
            f"root is not a directory: {path}",
            reason="root-not-dir",
            hint="pass a directory to --root (or use --include to pick files)",
        )
    if not os.access(path, os.R_OK | os.X_OK):
        raise SourceError(f"root is not readable: {path}", reason="root-unreadable")
    return path.resolve()


def list_tree(root: Path, prefix: str = "") -> tuple[str, list[Candidate | Skip]]:
    """How the tree was listed ("git ls-files" or "walk"), and its entries sorted by path.

    `prefix` is prepended to every path. Only paths are held, never contents.
    """
    paths = _git_listing(root)
    method = "git ls-files" if paths is not None else "walk"
    entries = list(_from_git(root, paths) if paths is not None else _walk(root))
    if prefix:
        entries = [
            Candidate(prefix + e.rel_path, e.abs_path)
            if isinstance(e, Candidate)
            else replace(e, path=prefix + e.path)
            for e in entries
        ]
    entries.sort(key=lambda e: e.rel_path if isinstance(e, Candidate) else e.path)
    return method, entries


def git_provenance(root: Path) -> Provenance:
    """The commit, branch and origin of a work tree (credentials stripped), or nothing."""
    if not git_available():
        return Provenance()
    head = run_git(["-C", str(root), "rev-parse", "HEAD"], timeout=30)
    if head.returncode != 0:
        return Provenance()
    branch = run_git(["-C", str(root), "rev-parse", "--abbrev-ref", "HEAD"], timeout=30)
    origin = run_git(["-C", str(root), "remote", "get-url", "origin"], timeout=30)
    ref = branch.stdout.decode().strip() if branch.returncode == 0 else None
    return Provenance(
        repo_url=strip_credentials(origin.stdout.decode().strip())
        if origin.returncode == 0
        else None,
        commit=head.stdout.decode().strip(),
        ref=ref if ref and ref != "HEAD" else None,
    )


def _git_listing(root: Path) -> list[str] | None:
    if not git_available():
        return None
    result = run_git(
        ["-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        timeout=300,
    )
    if result.returncode != 0:
        return None  # not a work tree (or git refuses it): walk instead
    names = sorted({n for n in result.stdout.decode("utf-8", "surrogateescape").split("\0") if n})
    if (
        not names
        and run_git(["-C", str(root), "check-ignore", "-q", "."], timeout=30).returncode == 0
    ):
        return None  # the root itself is ignored (a built site/, say): git lists nothing there
    return names


def _from_git(root: Path, paths: list[str]) -> Iterator[Candidate | Skip]:
    noise: Counter[tuple[str, str]] = Counter()
    root_real = os.path.realpath(root)
    for rel in paths:
        grouped = noise_dir(rel)
        if grouped:
            noise[grouped] += 1
            continue
        yield _entry(root_real, rel, os.path.join(root, rel))
    for (dir_path, reason), count in noise.items():
        yield Skip(dir_path, reason, files=count, directory=True)


def _entry(root_real: str, rel: str, abs_path: str) -> Candidate | Skip:
    if os.path.islink(abs_path):
        target = os.path.realpath(abs_path)
        if os.path.commonpath([root_real, target]) != root_real:
            return Skip(rel, "symlink-outside-root", "points outside the root; not followed")
        if os.path.isdir(target):
            return Skip(rel, "symlink-dir", "symlinked directories are not followed")
        if not os.path.exists(target):
            return Skip(rel, "missing", "broken symlink")
    elif os.path.isdir(abs_path):
        return Skip(rel + "/", "submodule", "a submodule or nested repository; not cloned",
                    directory=True)  # fmt: skip
    return Candidate(rel, abs_path)


class _IgnoreRules:
    """The .gitignore files met so far, each compiled once, deepest last (git's precedence)."""

    def __init__(self) -> None:
        self._specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []

    def push(self, base: str, dir_path: str) -> None:
        try:
            with open(
                os.path.join(dir_path, ".gitignore"), encoding="utf-8", errors="replace"
            ) as f:
                lines = f.read().splitlines()
        except OSError:
            return
        self._specs.append((base, pathspec.GitIgnoreSpec.from_lines(lines)))

    def pop_until(self, base: str) -> None:
        while self._specs and not (base + "/").startswith(self._specs[-1][0] or ""):
            self._specs.pop()

    def ignored(self, rel: str, is_dir: bool) -> bool:
        for base, spec in reversed(self._specs):
            local = rel[len(base) :] if base else rel
            result = spec.check_file(local + "/" if is_dir else local)
            if result.include is not None:
                return result.include
        return False


def _walk(root: Path) -> Iterator[Candidate | Skip]:
    rules = _IgnoreRules()
    root_real = os.path.realpath(root)
    stack: list[str] = [""]  # relative dirs, "" is the root; base of its rules ends with "/"
    while stack:
        rel_dir = stack.pop()
        abs_dir = os.path.join(root, rel_dir) if rel_dir else str(root)
        base = rel_dir + "/" if rel_dir else ""
        rules.pop_until(rel_dir)
        rules.push(base, abs_dir)
        try:
            entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
        except OSError as exc:
            yield Skip(base or "./", "unreadable", exc.strerror or str(exc), directory=True)
            continue
        subdirs = []
        for entry in entries:
            rel = base + entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_dir:
                reason = NOISE_DIRS.get(entry.name)
                if reason:
                    yield Skip(rel + "/", reason, files=0, directory=True)
                elif rules.ignored(rel, is_dir=True):
                    yield Skip(rel + "/", "gitignored", files=0, directory=True)
                else:
                    subdirs.append(rel)
            elif rules.ignored(rel, is_dir=False):
                yield Skip(rel, "gitignored")
            else:
                yield _entry(root_real, rel, entry.path)
        stack.extend(reversed(subdirs))
