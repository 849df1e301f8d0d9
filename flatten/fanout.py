"""Many sources in one run: each flattened into its own JSONL file, `jobs` at a time.

A repository whose remote still names the commit of its last run, with the same settings, is
skipped before any clone: one `git ls-remote` (`CHECKS` of them at a time, before any worker
starts), and the result says `up_to_date`. Results come
back as sources finish, so the caller loads one corpus while others are still flattening; the
caller (one process) does every load, the workers only flatten.

Workers are forked processes (`flatten.parallel.worker_pool`): slicing is Python code that holds
the GIL, so threads would run it one source at a time. With one job nothing is forked.

Temporary files: every one the run makes (the JSONL of a source not loaded yet, the file being
written, a worker's clone) is inside one folder of the run's, removed when the run ends however
it ends: an error, Ctrl-C, SIGTERM, or a consumer that stops early. A worker killed mid-write
(the pool is terminated with SIGTERM) cannot clean up after itself, and a result already queued
for a consumer that stopped is never seen: the folder goes with both. Each worker leads its own
process group, so its `git` children are ended with it rather than left writing into a folder
that is being removed.

A run killed outright (SIGKILL) cleans up nothing: its workers end with it
(`flatten.parallel`), but their `git` children run on until done (their output goes to pipes of
the ended worker, not the caller's), and the run's folder stays in the system's temporary
folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from flatten.errors import FlattenError
from flatten.manifest import SourceState, file_sha256, jsonl_name
from flatten.parallel import worker_pool
from flatten.pipeline import FlattenOptions, flatten_repo, flatten_root, flatten_url
from flatten.record import Record, encode
from flatten.report import RunReport
from flatten.sources.repo import remote_commit
from flatten.sources.shorthand import expand_repo
from flatten.userinfo import strip_credentials
from flatten.writer import _signals_deferred, write_jsonl

if TYPE_CHECKING:
    from crawl.crawler import CrawlOptions

CHECKS = 16  # `git ls-remote`s at a time: they wait on the remote, not on this machine's cores


@dataclass(frozen=True)
class SourceSpec:
    """One source of the run, with everything a worker needs to flatten it."""

    corpus: str
    kind: str  # repo, root or url
    source: str
    options: FlattenOptions
    settings: str  # `flatten.manifest.settings_digest` of the settings that shape its records
    ref: str | None = None
    subdir: str | None = None
    token_env: str | None = None
    crawling: CrawlOptions | None = None


@dataclass
class Flattened:
    """One source's outcome: its JSONL and state, or why it failed, or that it is up to date."""

    report: RunReport = field(default_factory=RunReport)
    path: Path | None = None  # the JSONL (a temporary file without an output folder)
    state: SourceState | None = None  # what the JSONL was made from (the known one if up to date)
    up_to_date: bool = False  # skipped: the remote names the commit of the last run
    error: FlattenError | None = None


def records_of(spec: SourceSpec, report: RunReport) -> Iterator[Record]:
    if spec.kind == "url":
        return flatten_url(spec.source, spec.options, report, crawl_options=spec.crawling)
    if spec.kind == "root":
        return flatten_root(spec.source, spec.options, report)
    return flatten_repo(spec.source, spec.ref, spec.options, report, subdir=spec.subdir,
                        token_env=spec.token_env)  # fmt: skip


def unchanged_commit(spec: SourceSpec, known: SourceState | None) -> str | None:
    """The commit of a repository source whose remote still names `known`'s commit (and whose
    settings are `known`'s); None when it must be flattened."""
    if spec.kind != "repo" or known is None:
        return None
    kept = (spec.kind, strip_credentials(spec.source), spec.settings)
    if (known.kind, known.source, known.settings) != kept:
        return None
    commit = remote_commit(expand_repo(spec.source) or spec.source, spec.ref,
                           token_env=spec.token_env)  # fmt: skip
    return commit if commit is not None and commit == known.commit else None


def check_one(spec: SourceSpec, known: SourceState | None) -> Flattened | None:
    """The result of a source found up to date (or whose remote failed to answer); None when
    it must be flattened."""
    result = Flattened(RunReport(source=spec.source, kind=spec.options.kind))
    try:
        if unchanged_commit(spec, known) is None:
            return None
    except FlattenError as exc:
        result.report.fail(exc)
        result.error = exc
        return result
    result.up_to_date, result.state = True, known
    return result


def flatten_one(
    spec: SourceSpec, known: SourceState | None, out: Path | None, scratch: Path | None = None
) -> Flattened:
    """Flatten `spec` into `out/<jsonl_name>` (or a temporary file, in `scratch` when given),
    unless `known` shows it unchanged; a `FlattenError` is the result's, not raised."""
    checked = check_one(spec, known)
    if checked is not None:
        return checked
    result = Flattened(RunReport(source=spec.source, kind=spec.options.kind))
    try:
        if out is not None:
            path = out / jsonl_name(spec.corpus)
        else:
            fd, name = tempfile.mkstemp(prefix="docs-flatten-source-", suffix=".jsonl",
                                        dir=scratch)  # fmt: skip
            os.close(fd)
            path = Path(name)
        try:
            records = records_of(spec, result.report)
            count = write_jsonl(records, path, encode)
        except BaseException:
            if out is None:
                path.unlink(missing_ok=True)
            raise
        origin = result.report.provenance
        result.path = path
        # The state is kept in the store and in manifests: never a password a URL carried.
        result.state = SourceState(spec.kind, strip_credentials(spec.source), origin.ref,
                                   origin.commit, spec.settings, count,
                                   file_sha256(path))  # fmt: skip
    except Exception as exc:  # one source's fault (even a bug) is that source's, not the run's
        error = exc if isinstance(exc, FlattenError) else FlattenError(
            f"{type(exc).__name__}: {exc}", reason="internal-error")  # fmt: skip
        result.report.fail(error)
        result.error = error
    return result


@dataclass(frozen=True)
class _Run:
    """The run's sources, set before the workers fork so each task is only an index (the
    options' compiled patterns need no pickling), and its folder of temporary files."""

    specs: Sequence[SourceSpec] = ()
    known: Mapping[str, SourceState] = field(default_factory=dict)
    out: Path | None = None
    scratch: Path | None = None
    parent: int = 0  # the process that runs the pool: a task elsewhere runs in a worker


_RUN = _Run()


def _task(index: int) -> tuple[int, Flattened]:
    run = _RUN
    if os.getpid() != run.parent:
        _enter_worker(run.scratch)
    spec = run.specs[index]
    return index, flatten_one(spec, run.known.get(spec.corpus), run.out, run.scratch)


def _enter_worker(scratch: Path | None) -> None:
    """In a worker: its own temporary files (a clone) go in the run's folder, and it leads its
    own process group, so the parent can end its `git` children with it (a killed worker
    leaves them running)."""
    tempfile.tempdir = str(scratch) if scratch is not None else None
    if os.getpgrp() != os.getpid():
        os.setpgrp()


def _end_groups(leaders: set[int]) -> None:
    """SIGKILL whatever is left in the process groups that these (ended) workers led."""
    for pid in sorted(leaders):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def flatten_many(
    specs: Sequence[SourceSpec],
    known: Mapping[str, SourceState],
    *,
    jobs: int = 1,
    out: Path | None = None,
) -> Iterator[tuple[SourceSpec, Flattened]]:
    """Flatten every source (`known`: the state of each corpus's last run, by corpus), `jobs`
    at a time, yielding each result as it finishes. A worker flattens a whole tree itself
    (its own `workers` are 1): `jobs` is the run's parallelism."""
    global _RUN
    checked = _checked(specs, known)
    for index, result in sorted(checked.items()):
        yield specs[index], result
    todo = [i for i in range(len(specs)) if i not in checked]
    if jobs > 1:
        specs = [replace(s, options=replace(s.options, workers=1)) for s in specs]
    scratch = Path(tempfile.mkdtemp(prefix="docs-flatten-run-"))
    # every known state was checked above
    _RUN = _Run(specs, {}, out, scratch, os.getpid())
    workers: set[int] = set()
    try:
        if jobs <= 1 or len(todo) <= 1:
            for index in todo:
                yield specs[index], _task(index)[1]
            return
        import multiprocessing  # loaded when workers start (see flatten.parallel)

        with worker_pool(min(jobs, len(todo))) as pool:
            workers.update(p.pid for p in multiprocessing.active_children() if p.pid)
            for index, result in pool.imap_unordered(_task, todo):
                workers.update(p.pid for p in multiprocessing.active_children() if p.pid)
                yield specs[index], result
    finally:
        _RUN = _Run()
        with _signals_deferred():  # a second Ctrl-C must not stop the clean-up half-way
            _end_groups(workers)
            shutil.rmtree(scratch, ignore_errors=True)


def _checked(specs: Sequence[SourceSpec], known: Mapping[str, SourceState]) -> dict[int, Flattened]:
    """The sources found up to date (or whose remote did not answer), by index: `CHECKS`
    `git ls-remote`s at a time, in threads (each waits on git, and on the network for a real
    remote), before any worker starts, so a run where nothing moved forks none."""
    candidates = [i for i, s in enumerate(specs) if s.kind == "repo" and s.corpus in known]
    if not candidates:
        return {}
    from multiprocessing.pool import ThreadPool

    def check(index: int) -> Flattened | None:
        return check_one(specs[index], known[specs[index].corpus])

    with ThreadPool(min(CHECKS, len(candidates))) as pool:
        results = pool.map(check, candidates)
    return {i: r for i, r in zip(candidates, results, strict=True) if r is not None}
