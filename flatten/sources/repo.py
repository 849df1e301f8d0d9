"""Shallow-clone a git repository into a temporary directory that is always removed.

`git ls-remote` runs first: it proves the URL and credentials work, names the default branch (so
nothing assumes `main`) and tells a branch from a tag from a commit SHA. Branches and tags clone
at depth 1; a full SHA is fetched at depth 1 where the server allows it, anything else falls back
to a full clone and a checkout. No submodules. The token, if any, travels in an HTTP header taken
from an environment variable; it is never put in a URL, an argument list, a message or a record.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from flatten.errors import SourceError, UsageError
from flatten.record import Provenance
from flatten.sources.gitcmd import GitResult, git_env, run_git, strip_credentials

_URL = re.compile(r"^(?:https?|ssh|git|file)://[^\s]+$")
_SCP_LIKE = re.compile(r"^[\w.\-]+@[\w.\-]+:[^\s]+$")
_HEX = re.compile(r"^[0-9a-fA-F]{7,40}$")


@dataclass(frozen=True)
class Checkout:
    root: Path  # the directory to walk: the clone, or its --subdir
    prefix: str  # "docs/" for --subdir docs: sources stay relative to the repository root
    provenance: Provenance


@dataclass(frozen=True)
class RemoteRefs:
    default_branch: str | None
    branches: dict[str, str]
    tags: dict[str, str]


def validate_subdir(subdir: str | None) -> str | None:
    """A relative path inside the repository, or a usage error (no absolute paths, no `..`)."""
    if subdir is None or subdir.strip() in ("", "."):
        return None
    posix = subdir.replace("\\", "/")
    if posix.startswith("/") or re.match(r"^[A-Za-z]:", posix):
        raise UsageError(
            f"--subdir must be relative to the repository: {subdir!r}", reason="bad-subdir"
        )
    parts = [p for p in PurePosixPath(posix).parts if p not in ("", ".")]
    if ".." in parts:
        raise UsageError(f"--subdir may not leave the repository: {subdir!r}", reason="bad-subdir")
    return "/".join(parts)


def _remote(url: str) -> str:
    """The URL git should use; a local path becomes an absolute file:// URL (so --depth works)."""
    if _URL.match(url) or _SCP_LIKE.match(url):
        return url
    path = Path(url).expanduser()
    if path.exists():
        return path.resolve().as_uri()
    raise UsageError(
        f"not a git URL or an existing path: {strip_credentials(url)!r}",
        reason="bad-url",
        hint="use https://host/owner/repo(.git), ssh://..., git@host:owner/repo, file:///path, "
        "a local path, or a shorthand: owner/repo (GitHub), github:owner/repo, gitlab:group/repo",
    )


def _failure(result: GitResult, url: str, what: str) -> SourceError:
    err = result.stderr
    low = err.lower()
    shown = strip_credentials(url)
    if any(
        s in low
        for s in (
            "authentication failed",
            "could not read username",
            "terminal prompts disabled",
            "401",
            "403",
            "permission denied",
        )
    ):
        return SourceError(
            f"{shown}: the server asked for credentials ({what})",
            reason="auth-required",
            hint="put a token in an environment variable and pass --token-env NAME",
        )
    if any(
        s in low
        for s in (
            "not found",
            "does not appear to be a git repository",
            "does not exist",
            "404",
            "no such file",
        )
    ):
        return SourceError(
            f"{shown}: repository not found ({what})",
            reason="repo-not-found",
            hint="check the URL; `git ls-remote URL` should list its refs",
        )
    if any(
        s in low
        for s in (
            "could not resolve host",
            "connection refused",
            "timed out",
            "unable to access",
            "network is unreachable",
        )
    ):
        return SourceError(
            f"{shown}: cannot reach the server ({what})",
            reason="unreachable",
            hint=err.splitlines()[-1] if err else None,
        )
    detail = err.splitlines()[-1] if err else f"git exited with {result.returncode}"
    return SourceError(f"{shown}: {what} failed: {detail}", reason="git-failed")


def list_remote(remote: str, env: dict[str, str], secrets: tuple[str, ...]) -> RemoteRefs:
    result = run_git(["ls-remote", "--symref", remote], env=env, secrets=secrets, timeout=120)
    if result.returncode != 0:
        raise _failure(result, remote, "listing refs")
    default = None
    branches: dict[str, str] = {}
    tags: dict[str, str] = {}
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        left, _, name = line.partition("\t")
        if left.startswith("ref: ") and name == "HEAD":
            default = left[5:].removeprefix("refs/heads/")
        elif name.startswith("refs/heads/"):
            branches[name[len("refs/heads/") :]] = left
        elif name.startswith("refs/tags/"):
            tags[name[len("refs/tags/") :].removesuffix("^{}")] = left
    return RemoteRefs(default, branches, tags)


def _access(url: str, token_env: str | None) -> tuple[str, dict[str, str], tuple[str, ...]]:
    """The URL git should use, its environment (the token, if any, as a header) and the
    secrets to keep out of messages."""
    token = None
    if token_env:
        token = os.environ.get(token_env)
        if not token:
            raise UsageError(
                f"--token-env {token_env}: that environment variable is not set",
                reason="token-missing",
            )
    return _remote(url), git_env(token), (token,) if token else ()


def remote_commit(url: str, ref: str | None = None, *, token_env: str | None = None) -> str | None:
    """The commit `ref` (default: the remote's default branch) names, from `git ls-remote`
    alone, without cloning; None when the listing cannot tell (a short SHA, an unknown ref:
    the clone then says what is wrong). An unreachable remote fails as `clone` would."""
    remote, env, secrets = _access(url, token_env)
    if ref is not None and len(ref) == 40 and _HEX.match(ref):
        return ref.lower()  # a full SHA names itself
    refs = list_remote(remote, env, secrets)
    name = ref or refs.default_branch
    if name is None:
        return None
    return refs.branches.get(name) or refs.tags.get(name)


@contextmanager
def clone(
    url: str,
    ref: str | None = None,
    *,
    subdir: str | None = None,
    token_env: str | None = None,
) -> Iterator[Checkout]:
    """Clone `url` at `ref` (default: the remote's default branch); yield the checkout."""
    subdir = validate_subdir(subdir)
    remote, env, secrets = _access(url, token_env)
    refs = list_remote(remote, env, secrets)
    if not refs.branches and not refs.tags:
        raise SourceError(
            f"{strip_credentials(url)}: the repository is empty (no commits)", reason="empty-repo"
        )

    tmp = tempfile.mkdtemp(prefix="docs-flatten-clone-")
    try:
        work = os.path.join(tmp, "repo")
        ref_name = _checkout(remote, ref, refs, work, env, secrets)
        head = run_git(["-C", work, "rev-parse", "HEAD"], env=env, timeout=60)
        if head.returncode != 0:
            raise _failure(head, remote, "reading the commit")
        root = Path(work)
        if subdir:
            root = (Path(work) / subdir).resolve()
            if not root.is_dir() or not root.is_relative_to(Path(work).resolve()):
                raise SourceError(
                    f"--subdir {subdir!r} is not a directory in the repository",
                    reason="subdir-missing",
                )
        shown = strip_credentials(url) if remote == url else remote
        yield Checkout(
            root=root,
            prefix=f"{subdir}/" if subdir else "",
            provenance=Provenance(shown, head.stdout.decode().strip(), ref_name),
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _checkout(
    remote: str,
    ref: str | None,
    refs: RemoteRefs,
    work: str,
    env: dict[str, str],
    secrets: tuple[str, ...],
) -> str:
    """Clone into `work`; return the ref name recorded in the records."""
    quiet_clone = ["-c", "advice.detachedHead=false", "clone", "--quiet", "--no-tags"]
    name = ref or refs.default_branch or next(iter(sorted(refs.branches)), None)
    if name and (name in refs.branches or name in refs.tags):
        result = run_git(
            [*quiet_clone, "--depth", "1", "--single-branch", "--branch", name, remote, work],
            env=env,
            secrets=secrets,
        )
        if result.returncode != 0:
            raise _failure(result, remote, f"cloning {name}")
        return name
    if ref and _HEX.match(ref):
        if len(ref) == 40 and _fetch_commit(remote, ref, work, env, secrets):
            return ref
        shutil.rmtree(work, ignore_errors=True)
        result = run_git([*quiet_clone, "--no-checkout", remote, work], env=env, secrets=secrets)
        if result.returncode != 0:
            raise _failure(result, remote, "cloning")
        checkout = run_git(
            [
                "-C",
                work,
                "-c",
                "advice.detachedHead=false",
                "checkout",
                "--quiet",
                f"{ref}^{{commit}}",
            ],
            env=env,
        )
        if checkout.returncode == 0:
            return ref
    known = sorted(refs.branches)[:5] + sorted(refs.tags)[:5]
    raise SourceError(
        f"ref {ref!r} does not exist in {strip_credentials(remote)}",
        reason="ref-not-found",
        hint="pass a branch, a tag or a commit SHA; some refs there: " + ", ".join(known),
    )


def _fetch_commit(
    remote: str, sha: str, work: str, env: dict[str, str], secrets: tuple[str, ...]
) -> bool:
    """Depth-1 fetch of one commit, where the server allows fetching by SHA."""
    if run_git(["init", "--quiet", work], env=env).returncode != 0:
        return False
    fetch = run_git(
        ["-C", work, "fetch", "--quiet", "--depth", "1", remote, sha], env=env, secrets=secrets
    )
    if fetch.returncode != 0:
        return False
    checkout = run_git(
        ["-C", work, "-c", "advice.detachedHead=false", "checkout", "--quiet", "FETCH_HEAD"],
        env=env,
    )
    return checkout.returncode == 0
