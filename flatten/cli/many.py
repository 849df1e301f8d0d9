"""Many corpora in one run: `ingest` over the configured sources (`--jobs`, `--shard`, `--out`)
and `index --manifests DIR`.

Each source is flattened by `flatten.fanout` (several at a time) and loaded here, in this one
process, into its own corpus; with `--out` its JSONL and a manifest are written instead. What
the user reads: a block per source on stderr as it finishes, one run summary per source on
stdout with --json (in the sources' order, whatever order they finished in), and a last line
with the counts. A source that fails is said and counted; the others still run; the exit code
is the worst of theirs.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from flatten import __version__
from flatten.cli.failures import error_lines
from flatten.cli.jobs import Job
from flatten.cli.loading import Run, ingest_options, load_into
from flatten.cli.output import json_line, say
from flatten.cli.settings import check_repo_only, crawl_options, settings_options
from flatten.corpus_sources import corpus_source
from flatten.errors import FlattenError, OutputError, interrupted_exit_code
from flatten.fanout import Flattened, SourceSpec, flatten_many
from flatten.manifest import (
    Entry,
    Manifest,
    ManifestError,
    SourceState,
    jsonl_name,
    manifest_name,
    read_manifest,
    settings_digest,
    verify,
    write_manifest,
)
from flatten.shards import Shard
from flatten.summary import Summary
from index.corpus_source import CorpusSourceMismatch, check_source
from index.ingest import states_of
from index.snapshot import parse_limit

if TYPE_CHECKING:
    from index.ingest import IngestOptions
    from index.store import Store

# Settings that do not shape the records: a change to them needs no new flatten.
_NOT_SHAPING = ("corpus", "max_delete", "token_env")


@dataclass
class Outcomes:
    """The run's per-source summaries (in the sources' order) and what became of each."""

    as_json: bool
    quiet: bool
    summaries: list[Summary] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    exit_codes: list[int] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    settled: set[int] = field(default_factory=set)  # ids of the summaries whose source is done

    def settle(self, summary: Summary) -> None:
        """`summary`'s source is done (loaded, written, up to date or failed): a stop after
        this leaves it as it says."""
        self.settled.add(id(summary))

    def tell(self, text: str) -> None:
        if not self.quiet and not self.as_json:
            say(text, err=True)

    def fail(self, summary: Summary, header: str, exc: FlattenError) -> None:
        summary.fail(exc)
        self.settle(summary)
        self.counts["failed"] += 1
        self.exit_codes.append(exc.exit_code)
        say(header, err=True)
        for line in error_lines(exc):
            say(line, err=True)

    def _done(self) -> str:
        return ", ".join(f"{n:,} {name}" for name, n in sorted(self.counts.items()) if n)

    @contextlib.contextmanager
    def stoppable(self, what: str) -> Iterator[None]:
        """Ctrl-C or SIGTERM in the block: say what finished before the stop (it stays: each
        load is its own transaction) and exit 130 (143 on SIGTERM), rather than "nothing was
        written"."""
        try:
            yield
        except KeyboardInterrupt as stop:
            under_way = getattr(stop, "written", None) or "the source under way was not loaded"
            say(f"interrupted: {what}: {self._done() or 'no source had finished'} before the "
                f"stop (those stay); {under_way}", err=True)  # fmt: skip
            # --json still prints a summary per source: the ones not done say `interrupted`.
            for summary in self.summaries:
                if id(summary) not in self.settled:
                    summary.fail(stop)
            if self.as_json:
                for summary in self.summaries:
                    json_line(summary)
            raise typer.Exit(interrupted_exit_code(stop)) from None

    def finish(self, what: str) -> None:
        """The JSON summaries, the counts line, and the exit code of the worst failure."""
        if self.as_json:
            for summary in self.summaries:
                json_line(summary)
        total = len(self.summaries)
        seconds = time.perf_counter() - self.started
        if not self.quiet:
            say(f"{what}: {total:,} sources: {self._done() or 'none'} in {seconds:.2f} s",
                err=True)  # fmt: skip
        if self.exit_codes:
            say(f"error: {self.counts['failed']} of {total} sources failed", err=True)
            raise typer.Exit(max(self.exit_codes))


def _stored_states(store: Store) -> dict[str, SourceState]:
    """What each corpus of the store was last made from (none for one loaded another way)."""
    states = {name: SourceState.from_json(text) for name, text in states_of(store).items()}
    return {name: state for name, state in states.items() if state is not None}


def _of_other_sources(
    store: Store, jobs: list[Job], replace: bool
) -> list[tuple[Job, CorpusSourceMismatch]]:
    """The jobs whose corpus holds another source, refused before they are flattened or cloned
    (their load would check again, after the work)."""
    refused = []
    for job in [] if replace else jobs:
        try:
            check_source(store.db, job.corpus, corpus_source(job.kind, job.source))
        except CorpusSourceMismatch as exc:
            refused.append((job, exc))
    return refused


def _loads(store_dir: str | None, wait: float) -> Store:
    """The store every corpus of the run loads into: opened once for the run (each load is
    still its own transaction)."""
    from index.store import Store

    return Store.open(store_dir, busy_timeout=wait)


def spec_of(job: Job, run: Run) -> SourceSpec:
    """What a worker needs to flatten `job`'s source; a `UsageError` for settings that do not
    fit it, before anything runs."""
    v = job.value
    check_repo_only(job.kind, v("ref"), v("subdir"), v("token_env"))
    shaping = {k: s.value for k, s in sorted(job.settings.items()) if k not in _NOT_SHAPING}
    digest = settings_digest({"version": __version__, "settings": shaping, "header": run.header,
                              "redaction": run.settings.get("redaction")})  # fmt: skip
    crawling = crawl_options(v("url"), v("scope"), v("max_pages"), v("max_depth"),
                             v("concurrency"), v("delay"), v("timeout"), str(v("max_page_size")),
                             v("ignore_robots"), v("no_sitemap"), run.header)  # fmt: skip
    return SourceSpec(corpus=job.corpus, kind=job.kind, source=job.source,
                      options=settings_options(job.settings, run.workers, run.settings),
                      settings=digest, ref=v("ref"), subdir=v("subdir"),
                      token_env=v("token_env"), crawling=crawling)  # fmt: skip


def _header(job: Job) -> str:
    return f"{job.where}: {job.kind} {job.source} -> corpus {job.corpus}"


def _previous_states(out: Path, shard: Shard | None) -> dict[str, SourceState]:
    """The states of this shard's last manifest in `out` whose JSONL is still whole: those
    sources need no clone when their remote has not moved (a CI cache restores `out`)."""
    path = out / manifest_name(str(shard or "1/1"))
    if not path.is_file():
        return {}
    try:
        manifest = read_manifest(path)
    except ManifestError:
        return {}  # unreadable: every source is flattened again, and the manifest rewritten
    known = {}
    for entry in manifest.entries:
        try:
            verify(manifest, entry)
        except ManifestError:
            continue
        known[entry.corpus] = entry.state
    return known


def ingest_many(
    run: Run, jobs: list[Job], *, workers: int, out: Path | None, shard: Shard | None
) -> None:
    """Flatten `jobs`' sources `workers` at a time; load each into its corpus here, or with
    `out` write its JSONL and this shard's manifest there."""
    outcomes = Outcomes(run.as_json, run.quiet)
    specs = [spec_of(job, run) for job in jobs]
    summaries = {job.corpus: Summary(command="ingest", corpus=job.corpus, source=job.source)
                 for job in jobs}  # fmt: skip
    outcomes.summaries = list(summaries.values())
    with outcomes.stoppable("ingest"), contextlib.ExitStack() as stack:
        if out is not None:
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OutputError(f"cannot make --out {out}: {exc.strerror}",
                                  reason="output-unwritable") from exc  # fmt: skip
            known, into = _previous_states(out, shard), None
        else:
            # Vectors of another identity are refused once, before anything is flattened.
            loading = ingest_options(run.store_dir, run.settings, run.no_embed, run.base_url,
                                      run.model, run.api_key_env, partial=False,
                                      reindex=run.reindex, wait=run.wait,
                                      max_delete=None, replace=run.replace)  # fmt: skip
            store = stack.enter_context(_loads(run.store_dir, run.wait))
            known, into = _stored_states(store), (store, loading)
            for job, refused in _of_other_sources(store, jobs, run.replace):
                outcomes.fail(summaries[job.corpus], _header(job), refused)
                specs = [spec for spec in specs if spec.corpus != job.corpus]
        if run.reindex:
            known = {}
        taking = _Taking(run, outcomes, {job.corpus: job for job in jobs}, summaries, out, into)
        # Closed here, not when collected: an error or Ctrl-C in a load must end the workers
        # and remove the run's temporary files before the process says so and exits.
        with contextlib.closing(flatten_many(specs, known, jobs=workers, out=out)) as results:
            for spec, result in results:
                taking.take(spec, result)
    if out is not None:
        _write_shard(out, shard, taking.entries, outcomes)
    outcomes.finish("ingest" + (f" --shard {shard}" if shard else ""))


@dataclass
class _Taking:
    """What `ingest_many` does with each source's result: says it, and loads it (into the
    run's one store, `into`) or lists it for the manifest."""

    run: Run
    outcomes: Outcomes
    jobs: dict[str, Job]
    summaries: dict[str, Summary]
    out: Path | None
    into: tuple[Store, IngestOptions] | None
    entries: list[Entry] = field(default_factory=list)

    def take(self, spec: SourceSpec, result: Flattened) -> None:
        job, summary, outcomes = self.jobs[spec.corpus], self.summaries[spec.corpus], self.outcomes
        state = result.state
        if result.up_to_date and state is not None:
            summary.add_state(state, up_to_date=True)
            summary.kind = spec.options.kind
            outcomes.counts["up to date (not cloned)"] += 1
            outcomes.settle(summary)
            outcomes.tell(f"{_header(job)}: up to date at {(state.commit or '')[:12]} (the "
                          "remote names the commit of its last run), not cloned")  # fmt: skip
            if self.out is not None:
                self.entries.append(Entry(spec.corpus, jsonl_name(spec.corpus), state))
            return
        summary.add_run(result.report)
        summary.up_to_date = False if spec.kind == "repo" else None
        summary.timings.total = result.report.seconds
        if result.error is not None or result.path is None or state is None:
            assert result.error is not None
            outcomes.fail(summary, _header(job), result.error)
            return
        outcomes.tell(_header(job))
        talk = not self.run.quiet and not self.run.as_json
        if talk:
            say(result.report.summary(), err=True)
        if self.into is None:
            self.entries.append(Entry(spec.corpus, result.path.name, state))
            outcomes.counts["written"] += 1
            outcomes.settle(summary)
            outcomes.tell(f"wrote {result.path} ({state.records:,} records)")
            return
        store, loading = self.into
        try:
            options = replace(loading, max_delete=parse_limit(job.value("max_delete")))
            load_into(self.run.store_dir, [result.path], spec.corpus, options, summary,
                      talk=talk, state=state, store=store)  # fmt: skip
            outcomes.counts["loaded"] += 1
            outcomes.settle(summary)
        except FlattenError as exc:
            outcomes.fail(summary, _header(job), exc)
        finally:
            result.path.unlink(missing_ok=True)
        summary.timings.total += summary.timings.load or 0.0


def _write_shard(out: Path, shard: Shard | None, entries: list[Entry], outcomes: Outcomes) -> None:
    """This shard's manifest; then the JSONL files its previous manifest named and this one
    does not (sources gone from the shard), so the artifact holds only what it lists."""
    name = str(shard or "1/1")
    path = out / manifest_name(name)
    before: set[str] = set()
    if path.is_file():
        try:
            before = {e.file for e in read_manifest(path).entries}
        except ManifestError:
            before = set()
    write_manifest(out, Manifest(name, tuple(entries)))
    for stale in sorted(before - {e.file for e in entries}):
        (out / stale).unlink(missing_ok=True)
    outcomes.tell(f"wrote {path} ({len(entries):,} corpora)")


def index_manifests(
    manifests: list[Path],
    store_dir: str | None,
    loading: IngestOptions,
    *,
    as_json: bool,
    quiet: bool,
) -> None:
    """Load every corpus that `manifests` (`find_manifests`) list, in this one process: each
    JSONL checked against its sha256 first, and one whose entry equals the state of the
    corpus's last load skipped. A bad manifest, a missing or changed JSONL, or a corpus two
    manifests claim fails that corpus alone."""
    outcomes = Outcomes(as_json, quiet)
    talk = not quiet and not as_json
    pairs: list[tuple[Manifest, Entry]] = []
    for path in manifests:
        try:
            manifest = read_manifest(path)
        except ManifestError as exc:
            failed = Summary(command="index", source=str(path))
            outcomes.summaries.append(failed)
            outcomes.fail(failed, f"manifest {path}", exc)
            continue
        pairs += [(manifest, entry) for entry in manifest.entries]
    claims = Counter(entry.corpus for _, entry in pairs)
    with outcomes.stoppable("index --manifests"), _loads(store_dir, loading.wait) as store:
        known = {} if loading.reindex else _stored_states(store)
        for manifest, entry in pairs:
            summary = Summary(command="index", corpus=entry.corpus, source=entry.state.source)
            outcomes.summaries.append(summary)
            state = entry.state
            header = f"{manifest.path}: {state.kind} {state.source} -> corpus {entry.corpus}"
            if claims[entry.corpus] > 1:
                others = sorted(str(m.path) for m, e in pairs if e.corpus == entry.corpus)
                outcomes.fail(summary, header, ManifestError(
                    f"corpus {entry.corpus!r} is in {claims[entry.corpus]} manifests "
                    f"({', '.join(others)}): not loaded, since each would replace the other",
                    reason="shared-corpus",
                    hint="keep one shard run's artifacts in --manifests DIR"))  # fmt: skip
                continue
            summary.add_state(state, up_to_date=known.get(entry.corpus) == state)
            if summary.up_to_date:
                outcomes.counts["unchanged (not loaded)"] += 1
                outcomes.settle(summary)
                outcomes.tell(f"{header}: unchanged since its last load, not loaded")
                continue
            outcomes.tell(header)
            try:
                load_into(store_dir, [verify(manifest, entry)], entry.corpus, loading, summary,
                          talk=talk, state=state, store=store)  # fmt: skip
                outcomes.counts["loaded"] += 1
                outcomes.settle(summary)
            except FlattenError as exc:
                outcomes.fail(summary, header, exc)
            summary.timings.total = summary.timings.load or 0.0
    outcomes.finish("index --manifests")
