"""What a corpus is a snapshot of, as one normalised string the store keeps (`corpora.source`).

A load names its source so that loading another one into the same corpus is refused (a snapshot
of the other source would remove every document of the first). Spellings of one source give one
string, and no string holds a credential:

- a repository by host and path (`repo github.com/encode/httpx`): `https://`, `ssh://`, scp-like
  `git@github.com:encode/httpx.git`, a `.git` suffix, a trailing slash and the `encode/httpx`
  shorthand are all one; a local repository (path or `file://`) by its absolute path;
- a folder inside a checkout of a repository with an `origin` remote is a snapshot of that
  repository (`repo github.com/org/handbook`, as `--repo` names it): a checkout moves between
  CI runners, and two projects' `docs/` folders are two sources; any other folder by its
  absolute path (`root /src/handbook`);
- a site by its seed's host and path (`url docs.example.com/guide`), scheme and query dropped.

The ref, subdirectory, scope and flatten settings are not part of it: they shape a snapshot of
the same source (and `ingest`'s manifests do not carry them all).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from flatten.sources.base import escape_name
from flatten.userinfo import strip_credentials

SOURCE_KINDS = ("repo", "root", "url")
# `user@host:path`, git's scp-like syntax (no scheme, a colon before any slash).
_SCP = re.compile(r"^(?:[^@/:]+@)?([^/:]+):(?!//)(.*)$")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ssh": 22, "git": 9418}


def corpus_source(kind: str, value: str) -> str:
    """The normalised source of `--repo`, `--root` or `--url` `value` (`kind`: repo, root, url)."""
    if kind == "repo":
        return f"repo {_repo(value)}"
    if kind == "root":
        return escape_name(_folder(value))  # a folder's name may be any bytes
    if kind == "url":
        return f"url {_host_and_path(strip_credentials(value.strip()))}"
    raise ValueError(f"not a source kind: {kind!r} (one of {', '.join(SOURCE_KINDS)})")


def _repo(value: str) -> str:
    from flatten.sources.shorthand import expand_repo  # looks at the file system: a local path wins

    text = strip_credentials(value.strip())
    text = expand_repo(text) or text
    parts = urlsplit(text)
    if parts.scheme == "file":
        return _absolute(unquote(parts.path))
    if parts.scheme and parts.netloc:
        return _host_and_path(text).removesuffix(".git").rstrip("/")
    scp = _SCP.match(text)
    if scp is not None and not Path(text).expanduser().exists():
        host, path = scp.groups()
        return f"{host.lower()}/{path.strip('/')}".removesuffix(".git").rstrip("/")
    return _absolute(text)


def _folder(value: str) -> str:
    """A folder in a checkout with an origin remote: that repository, whichever folder of it
    and wherever it is checked out (its folder's name alone would make every project's `docs/`
    one source); any other folder: its absolute path. A folder with no `.git` at or above it
    costs no git process."""
    from flatten.sources.gitcmd import run_git
    from flatten.sources.local import git_may_know

    path = _absolute(value)
    if not Path(path).is_dir() or not git_may_know(path):
        return f"root {path}"
    origin = run_git(["-C", path, "remote", "get-url", "origin"], timeout=30)
    url = origin.stdout.decode("utf-8", "surrogateescape").strip()
    return f"repo {_repo(url)}" if origin.returncode == 0 and url else f"root {path}"


def _host_and_path(url: str) -> str:
    """Host (lowercased, with a port other than the scheme's own) and path, without the scheme,
    credentials, query, fragment or a trailing slash."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:  # not a port: kept as written
        port = None
        host = parts.netloc.rpartition("@")[2].lower()
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme.lower()):
        host = f"{host}:{port}"
    return (host + parts.path).rstrip("/") or url


def _absolute(path: str) -> str:
    return str(Path(path).expanduser().resolve())
