"""Which API spec refers to a file, and as what: the I/O half of `slicers.refs`.

A spec split into files leaves them without their role (`paths/users.yaml` has no route), so a
YAML/JSON file that looks like such a piece is looked up: the specs in its directory and in each
one above it, up to the root, are read and their local `$ref`s followed file to file. Only files
below the root are read, each with `read_snapshot` (never through a symbolic link, never past the
size limit), each once (a cycle of references ends), and at most MAX_FILES parsed from one
directory, its own specs included.

The answer for a directory is kept for the rest of the run (a worker looks up many pieces of
one spec): `run` names the run, and a new one starts afresh.
"""

from __future__ import annotations

import os
import posixpath
from collections import deque
from dataclasses import dataclass, field

from flatten.classify import SPEC_SUFFIXES, suffix_of
from flatten.content import Unreadable, decode, read_snapshot
from slicers.openapi import parse_spec, sniff_spec
from slicers.refs import local_refs

MAX_FILES = 2000


@dataclass
class _RunCache:
    run: str = ""
    # (root, directory, limit) -> each file the directory's specs refer to -> its title.
    entries: dict[tuple[str, str, int], dict[str, str]] = field(default_factory=dict)


_cache = _RunCache()


def referring_title(run: str, root: str, inner: str, limit: int) -> str | None:
    """The title a spec at or above `inner`'s directory gives it ("" when the spec refers to it
    without a role), or None when no spec refers to it."""
    directory = posixpath.dirname(inner)
    while True:
        title = _refs_from(run, root, directory, limit).get(inner)
        if title is not None:
            return title
        if not directory:
            return None
        directory = posixpath.dirname(directory)


def _refs_from(run: str, root: str, directory: str, limit: int) -> dict[str, str]:
    if _cache.run != run:  # a new run: what the last one read may have changed since
        _cache.run, _cache.entries = run, {}
    entries = _cache.entries
    key = (root, directory, limit)
    found = entries.get(key)
    if found is None:
        found = entries[key] = _read_refs(root, directory, limit)
    return found


def _text(root: str, inner: str, limit: int) -> str | None:
    try:
        return decode(read_snapshot(root, inner, limit)).text
    except Unreadable:
        return None


def _read_refs(root: str, directory: str, limit: int) -> dict[str, str]:
    """Every file the specs in `directory` refer to, directly or through other such files.

    The queue holds paths, not texts: a directory of many large specs is read one file at a
    time (a spec is read twice, once to sniff and once to follow, rather than all held at once).
    """
    try:
        with os.scandir(os.path.join(root, directory)) as entries:
            names = sorted(e.name for e in entries if e.is_file(follow_symlinks=False))
    except OSError:
        names = []
    queue: deque[str] = deque()
    for name in names:
        inner = posixpath.join(directory, name) if directory else name
        if suffix_of(name).lower() not in SPEC_SUFFIXES:
            continue
        text = _text(root, inner, limit)
        if text is not None and sniff_spec(text) in ("openapi", "asyncapi"):
            queue.append(inner)
            # MAX_FILES bounds the specs parsed too (sorted: the same ones each run). Every file
            # is sniffed (a cheap look), so a spec beside thousands of its pieces is found.
            if len(queue) == MAX_FILES:
                break
    seen = set(queue)
    titles: dict[str, str] = {}
    while queue:
        referrer = queue.popleft()
        text = _text(root, referrer, limit)
        if text is None:
            continue
        for target, title in local_refs(parse_spec(text), referrer).items():
            if not titles.get(target):
                titles[target] = title
            if target in seen or len(seen) >= MAX_FILES:
                continue
            seen.add(target)
            queue.append(target)
    return titles
