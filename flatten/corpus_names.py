"""The one naming rule for a corpus when no --corpus is given (flatten, index and ingest alike).

A repository is named by its repository name (`https://github.com/encode/httpx.git`, `encode/httpx`
and `/src/httpx` are all `httpx`), a folder by its folder name, a site by its host and path
(`docs.example.com/guide`). JSONL records carry no corpus name (the record holds where a slice
came from, not which index it goes to) and a file name says nothing reliable, so JSONL and stdin
need --corpus: guessing there is how one source's snapshot removed another's documents.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from flatten.sources.base import escape_name
from flatten.userinfo import strip_credentials


def repo_corpus(repo: str) -> str:
    """The repository's name: the last part of its URL, path or shorthand, without `.git`."""
    tail = repo.strip().rstrip("/").replace(":", "/").rsplit("/", 1)[-1]
    return tail.removesuffix(".git") or repo.strip()


def root_corpus(root: str | os.PathLike[str]) -> str:
    """The folder's own name (`.` resolved: `docs-flatten ingest --root .` in `handbook/`), its
    bytes that are not UTF-8 written `\\xNN` as a file's source is."""
    return escape_name(Path(root).expanduser().resolve().name or str(root))


def url_corpus(url: str) -> str:
    """Host (and port) and path, without the scheme, credentials or a trailing slash."""
    shown = strip_credentials(url.strip())
    parts = urlsplit(shown)
    return (parts.netloc + parts.path).rstrip("/") or shown


def source_corpus(
    *, root: str | None = None, repo: str | None = None, url: str | None = None
) -> str:
    """The default corpus of a source given as exactly one of root, repo or url."""
    if repo is not None:
        return repo_corpus(repo)
    if url is not None:
        return url_corpus(url)
    assert root is not None
    return root_corpus(root)
