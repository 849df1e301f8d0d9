"""List the files of a local tree, in path order, with a reason for everything left out.

Inside a git work tree the listing is `git ls-files --cached --others --exclude-standard`, so
.gitignore (nested), .git/info/exclude and the global excludes apply exactly as git applies them.
Elsewhere a walker applies every .gitignore it meets, each compiled once (with RE2, so a hostile
pattern cannot make matching take exponential time). Symlinks are never followed out of the
root, and never into directories; a file whose directory is a link is skipped; the bytes are
read by `open_beneath`, which refuses a link that appears after the listing.

A work tree's files carry its commit only when they are what the commit holds: a file that is
modified, staged, untracked or ignored (as is every file of a folder git ignores, such as a
built site/) is marked changed, so it is never cited by a permalink to a commit that lacks it.
A folder with no `.git` at or above it costs no git process at all.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from flatten.classify import NOISE_DIRS, noise_dir, path_skip_reason
from flatten.content import Unreadable, read_snapshot
from flatten.errors import SourceError
from flatten.record import Provenance
from flatten.shown import is_utf8
from flatten.sources.base import Candidate, Skip, escape_name
from flatten.sources.gitcmd import git_available, run_git, run_git_all, strip_credentials
from flatten.writer import temporary_writer

if TYPE_CHECKING:
    import pathspec

# git itself ignores .gitignore files over 100 MiB ("ignoring excessively large pattern file").
GITIGNORE_MAX_SIZE = 100 << 20


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


def list_tree(
    root: Path, prefix: str = "", outputs: Sequence[str] = ()
) -> tuple[str, list[Candidate | Skip]]:
    """How the tree was listed ("git ls-files" or "walk"), and its entries sorted by path.

    `prefix` is prepended to every path. Only paths are held, never contents. `outputs` are the
    files this run writes (-o, --report): they, and the writer's temporary files beside them,
    are skipped with the reason `output`, so a run never reads its own (or last run's) output.
    """
    root_real = os.path.realpath(root)
    paths = _git_listing(root)
    method = "git ls-files" if paths is not None else "walk"
    entries = list(_from_git(root_real, paths) if paths is not None else _walk(root_real))
    is_output = _output_matcher(outputs)
    named: list[Candidate | Skip] = []
    for e in entries:
        if isinstance(e, Candidate):
            output = is_output(e.abs_path)
            if output == "temporary":
                continue  # this run's bytes in flight, not a file of the tree (its name is random)
            if output:
                named.append(Skip(escape_name(prefix + e.rel_path), output,
                                  _OUTPUT_SKIPS[output]))  # fmt: skip
            else:
                shown = escape_name(prefix + e.rel_path)
                named.append(e if shown == e.rel_path else replace(e, rel_path=shown))
        else:
            named.append(replace(e, path=escape_name(prefix + e.path)))
    named.sort(key=lambda e: e.rel_path if isinstance(e, Candidate) else e.path)
    return method, named


_OUTPUT_SKIPS = {
    "output": "this run's own output file",
    "temporary-output": "a docs-flatten temporary output file (another run's, or a killed one's)",
}


def _output_matcher(outputs: Sequence[str]) -> Callable[[str], str | None]:
    """Whether a real path is one of `outputs` ("output"), a temporary file of this run's
    writer (or an older version's beside one of them: "temporary"), any other file named as
    this tool's temporary output (`flatten.writer.temporary_writer`: "temporary-output"), or
    none of these (None)."""
    targets = set()
    for output in outputs:
        path = os.path.abspath(output)
        # The output may not exist yet: resolve its directory, keep its name.
        targets.add((os.path.realpath(os.path.dirname(path)), os.path.basename(path)))

    def is_output(real_path: str) -> str | None:
        directory, name = os.path.split(real_path)
        writer = temporary_writer(name)
        if writer is not None:  # this run's; another run's, or one a killed run left behind
            return "temporary" if writer == os.getpid() else "temporary-output"
        for out_dir, out_name in targets:
            if directory != out_dir:
                continue
            if name == out_name:
                return "output"
            if name.startswith(f".{out_name}.") and name.endswith(".tmp"):
                return "temporary"
        return None

    return is_output


def git_may_know(root: str | os.PathLike[str]) -> bool:
    """Whether git could take `root` (a real path) for part of a repository. False only when
    asking git would be a wasted process: git is not installed, or no `.git` (a directory, or
    the file a linked work tree or a submodule has) is in `root` or above it, and neither
    GIT_DIR nor GIT_WORK_TREE points git elsewhere. git's own search stops earlier, never later
    (at GIT_CEILING_DIRECTORIES, a file system's edge, a repository it may not trust): then it
    is asked and says no. A bare repository has no `.git` and no work tree: nothing to ask."""
    if not git_available():
        return False
    if "GIT_DIR" in os.environ or "GIT_WORK_TREE" in os.environ:
        return True
    path = os.fspath(root)
    while True:
        if os.path.lexists(os.path.join(path, ".git")):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


@dataclass(frozen=True)
class Changed:
    """The files below a folder that are not what the commit holds, by `git status`: modified,
    staged, deleted or untracked (`paths`, relative to the folder, escaped), or all of them
    (`whole`: git ignores the folder, or a folder above it, so none of its files is tracked).
    Asked `path in changed`, and `bool(changed)`: has the folder any such file."""

    paths: frozenset[str] = frozenset()
    whole: bool = False

    def __contains__(self, path: object) -> bool:
        return self.whole or path in self.paths

    def __bool__(self) -> bool:
        return self.whole or bool(self.paths)


@dataclass(frozen=True)
class WorkTree:
    """A git work tree as seen from the folder the user named (which may be a subfolder)."""

    provenance: Provenance
    prefix: str  # the folder's path inside the repository ("docs/"; "" at the top), escaped
    changed: Changed | frozenset[str]  # the folder's files that differ from the commit


# One `status` answers the commit (`# branch.oid`), the branch (`# branch.head`) and what
# differs from the commit below the folder. Paths in porcelain output are the repository's
# (relative to its top), whatever the folder. `--ignored=matching` names an ignored directory
# once, without its files: it tells an ignored folder (a built site/) from a clean one.
_STATUS = ("status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z", "--no-renames",
           "--untracked-files=all", "--ignored=matching", "--", ".")  # fmt: skip
# The fields before the path in each kind of porcelain v2 entry (git-status(1)).
_PATH_AFTER = {"1": 8, "2": 9, "u": 10, "?": 1, "!": 1}


def work_tree(root: Path) -> WorkTree | None:
    """The work tree `root` is in, or None (not in one, no commit yet, or git refuses it).
    Three git processes, started together, whatever the size of the tree: `rev-parse
    --show-prefix`, one `status` and `remote get-url origin`; none outside a repository."""
    if not git_may_know(root):
        return None
    shown, status, origin = run_git_all(
        [["-C", str(root), "rev-parse", "--show-prefix"], ["-C", str(root), *_STATUS],
         ["-C", str(root), "remote", "get-url", "origin"]],
        timeout=300,
    )  # fmt: skip
    if shown.returncode != 0 or status.returncode != 0:
        return None  # not a work tree (a bare repository, inside .git), or an untrusted one
    prefix = shown.stdout.decode("utf-8", "surrogateescape").rstrip("\n")
    commit, branch, changed = _read_status(status.stdout, prefix)
    if commit is None:
        return None  # no commit yet: nothing to cite
    url = (
        _utf8(origin.stdout.decode("utf-8", "surrogateescape").strip())
        if origin.returncode == 0
        else None
    )
    provenance = Provenance(repo_url=strip_credentials(url) if url else None, commit=commit,
                            ref=branch)  # fmt: skip
    return WorkTree(provenance, escape_name(prefix), changed)


def _read_status(out: bytes, prefix: str) -> tuple[str | None, str | None, Changed]:
    """The commit, the branch (None when detached) and what differs below `prefix`, from
    `git status --porcelain=v2 --branch -z` (entries end with NUL; paths are raw)."""
    commit = branch = None
    paths: set[str] = set()
    whole = False
    entries = iter(out.decode("utf-8", "surrogateescape").split("\0"))
    for entry in entries:
        if entry.startswith("# "):
            key, _, value = entry[2:].partition(" ")
            if key == "branch.oid" and value != "(initial)":
                commit = value
            elif key == "branch.head" and value != "(detached)":
                branch = _utf8(value)
            continue
        fields = _PATH_AFTER.get(entry[:1])
        if fields is None or entry[1:2] != " ":
            continue
        path = entry.split(" ", fields)[-1]
        if entry[0] == "2":
            next(entries, None)  # a rename's source path (none are asked for)
        if path.endswith("/") and prefix.startswith(path) and entry[0] in "?!":
            whole = True  # the folder itself is ignored (or untracked) as a whole
        elif entry[0] != "!" and path.startswith(prefix):
            paths.add(escape_name(path[len(prefix) :]))
    return commit, branch, Changed(frozenset(paths), whole)


def _utf8(value: str) -> str | None:
    """`value` (decoded with surrogateescape) when it is text, None when it is not: a branch or
    URL that is not UTF-8 is left out of the record rather than break it (the commit pins)."""
    return value if value and is_utf8(value) else None


def _git_listing(root: Path) -> list[str] | None:
    if not git_may_know(root):
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


def _from_git(root_real: str, paths: list[str]) -> Iterator[Candidate | Skip]:
    noise: Counter[tuple[str, str]] = Counter()
    linked = _LinkedDirs(root_real)
    for rel in paths:
        grouped = noise_dir(rel)
        if grouped:
            noise[grouped] += 1
            continue
        yield _entry(root_real, rel, linked)
    for (dir_path, reason), count in noise.items():
        yield Skip(dir_path, reason, files=count, directory=True)


class _LinkedDirs:
    """Which directories below the root are reached through a symbolic link (cached per dir).

    git lists what its index holds: a tracked `d/passwd` stays listed after `d` becomes a link
    to /etc. Such a file is skipped here; `open_beneath` refuses it too, should the link appear
    after this check.

    A directory is linked when its parent is, or it is a link itself: one lstat per directory.
    (realpath took one per component of the path, for every directory: quadratic in depth.)
    """

    def __init__(self, root_real: str) -> None:
        self.root_real = root_real
        self._cache: dict[str, bool] = {"": False}

    def __call__(self, rel_dir: str) -> bool:
        unknown = []  # rel_dir and its ancestors not yet asked, deepest first
        while rel_dir not in self._cache:
            unknown.append(rel_dir)
            rel_dir = posixpath.dirname(rel_dir)
        linked = self._cache[rel_dir]
        for rel in reversed(unknown):
            linked = linked or self._is_link(rel)
            self._cache[rel] = linked
        return linked

    def _is_link(self, rel_dir: str) -> bool:
        try:
            return stat.S_ISLNK(os.lstat(os.path.join(self.root_real, rel_dir)).st_mode)
        except OSError:
            return False  # gone, or its path is too long to name: realpath kept it as it was


def _entry(root_real: str, rel: str, linked: _LinkedDirs) -> Candidate | Skip:
    parent = posixpath.dirname(rel)
    if linked(parent):
        return Skip(rel, "symlink-parent", f"{parent}/ is (or runs through) a symbolic link; "
                    "not followed")  # fmt: skip
    abs_path = os.path.join(root_real, rel)
    try:  # one lstat says link, directory or file (islink + isdir took two system calls)
        mode = os.lstat(abs_path).st_mode
    except OSError:
        mode = 0  # gone since the listing: read (and reported missing) as a file, as before
    if not stat.S_ISLNK(mode):
        if stat.S_ISDIR(mode):
            return Skip(rel + "/", "submodule", "a submodule or nested repository; not cloned",
                        directory=True)  # fmt: skip
        return Candidate(rel, root_real, rel)
    target = os.path.realpath(abs_path)
    if os.path.commonpath([root_real, target]) != root_real:
        return Skip(rel, "symlink-outside-root", "points outside the root; not followed")
    try:
        is_dir = stat.S_ISDIR(os.stat(abs_path).st_mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Skip(rel, "symlink-loop", "a symbolic link that leads back to itself")
        return Skip(rel, "missing", "broken symlink")
    if is_dir:
        return Skip(rel, "symlink-dir", "symlinked directories are not followed")
    inner = os.path.relpath(target, root_real).replace(os.sep, "/")
    # The link is read as its target: the target's own path rules apply (a link to .env).
    reason = path_skip_reason(inner)
    if reason:
        return Skip(rel, reason, f"a symbolic link to {escape_name(inner)}")
    return Candidate(rel, root_real, inner)


class _IgnoreRules:
    """The .gitignore files met so far, each compiled once, deepest last (git's precedence)."""

    def __init__(self, root_real: str) -> None:
        self.root_real = root_real
        self._specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        self.given_up: list[Skip] = []  # patterns or files left out, for the run report

    def push(self, base: str) -> None:
        inner = base + ".gitignore"
        try:
            data = read_snapshot(self.root_real, inner, GITIGNORE_MAX_SIZE)
        except Unreadable as exc:
            if exc.reason != "missing":
                self.given_up.append(Skip(inner, f"gitignore-{exc.reason}", exc.detail, files=0))
            return
        # pathspec loads for a tree that has a .gitignore: a git work tree is listed by git, and
        # many walked folders have none (pathspec is 7% of a one-file run's instructions).
        from flatten.sources.gitignore import compile_gitignore

        lines = data.decode("utf-8", "replace").splitlines()
        spec, refused = compile_gitignore(lines)
        for r in refused:
            shown = r.pattern[:80] + ("..." if len(r.pattern) > 80 else "")
            why = ("not a valid pattern" if r.why == "invalid"
                   else "too large to match in bounded time")  # fmt: skip
            detail = f"line {r.line}: {shown} ({why}; not applied)"
            self.given_up.append(Skip(inner, f"gitignore-pattern-{r.why}", detail, files=0))
        self._specs.append((base, spec))

    def pop_until(self, base: str) -> None:
        while self._specs and not (base + "/").startswith(self._specs[-1][0] or ""):
            self._specs.pop()

    def ignored(self, rel: str, is_dir: bool) -> bool:
        if not rel.isascii():
            # RE2 matches UTF-8: an undecodable byte (a lone surrogate here) becomes U+FFFD,
            # which `*` and `?` match as they match the byte.
            rel = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        for base, spec in reversed(self._specs):
            local = rel[len(base) :] if base else rel
            result = spec.check_file(local + "/" if is_dir else local)
            if result.include is not None:
                return result.include
        return False


def _walk(root_real: str) -> Iterator[Candidate | Skip]:
    rules = _IgnoreRules(root_real)
    linked = _LinkedDirs(root_real)
    stack: list[str] = [""]  # relative dirs, "" is the root; base of its rules ends with "/"
    while stack:
        rel_dir = stack.pop()
        abs_dir = os.path.join(root_real, rel_dir) if rel_dir else root_real
        base = rel_dir + "/" if rel_dir else ""
        rules.pop_until(rel_dir)
        try:
            entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
        except OSError as exc:
            yield Skip(base or "./", "unreadable", exc.strerror or str(exc), directory=True)
            continue
        # A .gitignore is read (below the root, a directory at a time) only where the listing
        # shows one: asking every directory for one cost as many opens as it is deep.
        if any(entry.name == ".gitignore" for entry in entries):
            rules.push(base)
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
                yield _entry(root_real, rel, linked)
        stack.extend(reversed(subdirs))
    yield from rules.given_up
