"""Which API spec refers to a file, and as what: the I/O half of `slicers.refs`.

A spec split into files leaves them without their role (`paths/users.yaml` has no route), so a
YAML/JSON file that looks like such a piece is looked up: the specs in its directory and in each
one above it, up to the root, are read and their local `$ref`s followed file to file. Only files
below the root are read, each with `read_snapshot` (never through a symbolic link, never past the
size limit), each once (a cycle of references ends), and at most MAX_FILES parsed from one
directory, its own specs included.

A piece need not sit below its spec: `api/openapi.yaml` may refer to `../shared/Error.yaml`. When
no spec at or above a piece's directory refers to it, the specs anywhere in the root are read once
per run (`_tree_refs`): directories walked in sorted order, never through a symbolic link, never
into hidden or noise directories (`node_modules/`, `build/`), at most MAX_TREE_SNIFFS files
sniffed and MAX_FILES specs and pieces parsed.

The answer for a directory is kept for the rest of the run (a worker looks up many pieces of
one spec): `run` names the run, and a new one starts afresh.
"""

from __future__ import annotations

import os
import posixpath
from collections import deque
from dataclasses import dataclass, field

from flatten.classify import NOISE_DIRS, SPEC_SUFFIXES, suffix_of
from flatten.content import Unreadable, decode, read_snapshot
from slicers.openapi import parse_spec, sniff_spec
from slicers.refs import local_refs

MAX_FILES = 2000
# JSON/YAML files sniffed in the walk of the whole root (a cheap look each, but a read).
MAX_TREE_SNIFFS = 20_000


@dataclass
class _RunCache:
    run: str = ""
    # (root, directory, limit) -> each file the directory's specs refer to -> its title.
    entries: dict[tuple[str, str, int], dict[str, str]] = field(default_factory=dict)
    # (root, limit) -> each file the specs anywhere in the root refer to -> its title.
    trees: dict[tuple[str, int], dict[str, str]] = field(default_factory=dict)


_cache = _RunCache()


def referring_title(run: str, root: str, inner: str, limit: int) -> str | None:
    """The title a spec gives `inner` ("" when the spec refers to it without a role), or None
    when no spec refers to it. The nearest spec wins: those at or above its directory first,
    then those anywhere in the root (a sibling directory's `../shared/x.yaml`)."""
    directory = posixpath.dirname(inner)
    while True:
        title = _refs_from(run, root, directory, limit).get(inner)
        if title is not None:
            return title
        if not directory:
            break
        directory = posixpath.dirname(directory)
    return _tree_refs(run, root, limit).get(inner)


def _run_cache(run: str) -> _RunCache:
    if _cache.run != run:  # a new run: what the last one read may have changed since
        _cache.run, _cache.entries, _cache.trees = run, {}, {}
    return _cache


def _tree_refs(run: str, root: str, limit: int) -> dict[str, str]:
    trees = _run_cache(run).trees
    found = trees.get((root, limit))
    if found is None:
        found = trees[(root, limit)] = _walk(root, limit)
    return found


def _walk(root: str, limit: int) -> dict[str, str]:
    return _follow(root, _specs_in(root, "", limit, walk=True), limit)


def _specs_in(root: str, top: str, limit: int, *, walk: bool) -> deque[str]:
    """The specs in `top`, sorted by name, at most MAX_FILES of them; with `walk`, those in
    every directory below it too (sorted order, depth first; hidden and noise directories
    left out), at most MAX_TREE_SNIFFS files sniffed. Every file of `top` alone is sniffed (a
    cheap look), so a spec beside thousands of its pieces is found."""
    specs: deque[str] = deque()
    sniffed = 0
    todo = [top]
    while todo:
        directory = todo.pop()
        try:
            with os.scandir(os.path.join(root, directory)) as scan:
                entries = sorted(
                    (e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False))
                    for e in scan
                )
        except OSError:
            continue
        subdirs = []
        for name, is_dir, is_file in entries:
            inner = posixpath.join(directory, name) if directory else name
            if is_dir:
                if walk and not name.startswith(".") and name not in NOISE_DIRS:
                    subdirs.append(inner)
                continue
            if not is_file or suffix_of(name).lower() not in SPEC_SUFFIXES:
                continue
            if walk and sniffed >= MAX_TREE_SNIFFS:
                return specs
            sniffed += 1
            text = _text(root, inner, limit)
            if text is not None and sniff_spec(text) in ("openapi", "asyncapi"):
                specs.append(inner)
                # MAX_FILES bounds the specs parsed too (sorted: the same ones each run).
                if len(specs) == MAX_FILES:
                    return specs
        todo.extend(reversed(subdirs))  # popped from the end: sorted order, depth first
    return specs


def _refs_from(run: str, root: str, directory: str, limit: int) -> dict[str, str]:
    entries = _run_cache(run).entries
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
    return _follow(root, _specs_in(root, directory, limit, walk=False), limit)


def _follow(root: str, queue: deque[str], limit: int) -> dict[str, str]:
    """Every file the specs in `queue` refer to, directly or through other such files, each
    read once (a cycle ends), at most MAX_FILES in all."""
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
