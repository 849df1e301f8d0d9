"""What `index`, `ingest` and the many-source runs share: load JSONL into a corpus (then embed),
say what was done, and fill the run summary."""

from __future__ import annotations

import contextlib
import dataclasses
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flatten.cli.failures import add_cli_hint
from flatten.cli.jobs import Job, rerun_with
from flatten.cli.options import embedding_config
from flatten.cli.output import json_line, say
from flatten.cli.settings import close, crawl_options, settings_options, source_records
from flatten.errors import FlattenError
from flatten.progress import Progress
from flatten.summary import Summary

# The pipeline and the index load when a command runs, not for --help.
if TYPE_CHECKING:
    from flatten.manifest import SourceState
    from index.ingest import IngestOptions, IngestReport
    from index.loader import LoadReport
    from index.store import Store


@contextlib.contextmanager
def summarized(summary: Summary, as_json: bool) -> Iterator[Summary]:
    """Fill `summary` in the block; with --json print it on stdout whatever happens (a failed
    run prints `ok: false` and its error before the error's own lines on stderr)."""
    started = time.perf_counter()
    try:
        yield summary
    except BaseException as exc:
        add_cli_hint(exc)
        summary.fail(exc)
        raise
    finally:
        summary.timings.total = time.perf_counter() - started
        if as_json:
            json_line(summary)


@contextlib.contextmanager
def failure_summary(command: str, as_json: bool) -> Iterator[None]:
    """A failure before any source ran: with --json, one summary on stdout says why."""
    try:
        yield
    except (FlattenError, KeyboardInterrupt) as exc:  # a stop (Ctrl-C, SIGTERM) is a failure too
        if as_json:
            failed = Summary(command=command)
            failed.fail(exc)
            json_line(failed)
        raise


def add_ingest(summary: Summary, report: IngestReport) -> None:
    summary.add_load(report.load, report.chunks_total)
    if report.vectors is not None:
        summary.add_vectors(report.vectors, report.vectors_pending)


def _source_of(state: SourceState) -> str | None:
    """What a load of `state`'s records is a snapshot of. None for a folder that is not on this
    machine (`index --manifests` in a job that did not check it out): which repository it was
    in cannot be told here, so the load names no source rather than a wrong one."""
    from flatten.corpus_sources import corpus_source

    if state.kind == "root" and not Path(state.source).is_dir():
        return None
    return corpus_source(state.kind, state.source)


def load_into(
    store_dir: str | None,
    files: list[Path],
    corpus: str,
    options: IngestOptions,
    summary: Summary,
    *,
    talk: bool,
    streams: list[Path] | None = None,
    state: SourceState | None = None,
    store: Store | None = None,
    source: str | None = None,
) -> None:
    """Load, then (with embeddings configured) embed what has no vector yet; say what was done
    on stderr and in `summary`. `store`: one the caller opened for several loads (else the
    store at `store_dir` is opened for this one). `source`: what the files are a snapshot of
    (`flatten.corpus_sources`; by default the one `state` names)."""
    from index.ingest import ingest_files, ingest_into
    from index.loader import EmptyInput
    from index.snapshot import TooManyRemovals
    from index.store import store_flag, store_target
    from index.vectors.client import EmbeddingError

    if summary.partial and not options.partial:  # not a snapshot: it must not remove documents
        options = dataclasses.replace(options, partial=True)
    progress = Progress("embedding", enabled=talk)
    committed: list[LoadReport] = []  # the text load, once its transaction is committed

    def loaded(report: LoadReport) -> None:
        committed.append(report)
        if talk:
            say(report.summary(), err=True)
        if options.embedding is not None:
            stack.enter_context(progress)  # the bar shows while embedding, not while loading

    def embedded(done: int, total: int) -> None:
        progress.update(done, total, "texts")

    try:
        with contextlib.ExitStack() as stack:
            if source is None and state is not None:
                source = _source_of(state)
            into = {"on_loaded": loaded, "progress": embedded, "streams": streams or (),
                    "state": state.to_json() if state else None, "source": source}  # fmt: skip
            if store is not None:
                report = ingest_into(store, files, corpus, options, **into)
            else:
                report = ingest_files(store_dir, files, corpus, options, **into)
    except KeyboardInterrupt as exc:
        if committed:  # stopped after the load's commit (while embedding): it stays
            exc.written = f"{committed[0].corpus}: text index loaded" + (  # type: ignore[attr-defined]
                "; embeddings incomplete, the next run resumes them" if options.embedding else ""
            )
        raise
    except TooManyRemovals as exc:
        exc.hint = f"if they should go, allow it: `{rerun_with('--max-delete', str(exc.removing))}`"
        raise
    except EmptyInput as exc:
        if exc.held:  # a corpus that is not there is not one to drop
            where = store_flag(store.location if store is not None else store_target(store_dir))
            exc.hint = (
                "check the input (a failed or cut-short producer?); to remove the corpus, "
                f"`docs-flatten drop --corpus {shlex.quote(corpus)}{where}`"
            )
        raise
    except EmbeddingError as exc:
        if exc.report is not None and exc.report.embedded:
            say(exc.report.summary(), err=True)
            exc.hint = (exc.hint + "; " if exc.hint else "") + (
                f"the {exc.report.embedded:,} vectors embedded before the failure are kept: "
                "run the same command again to resume"
            )
        ingest = getattr(exc, "ingest", None)
        if ingest is not None:  # the load happened: the summary says so
            summary.add_load(ingest.load, ingest.chunks_total)
            if exc.report is not None:
                summary.add_vectors(exc.report, ingest.vectors_pending)
        raise
    add_ingest(summary, report)
    if talk and report.vectors is not None:
        say(report.vectors.summary(), err=True)


def ingest_options(
    store_dir: str | None, settings: dict[str, Any], no_embed: bool, base_url: str | None,
    model: str | None, api_key_env: str | None, *, partial: bool, reindex: bool, wait: float,
    max_delete: str | int | None, replace: bool = False,
) -> IngestOptions:  # fmt: skip
    """The load settings from the flags; vectors of another identity refused here, before any
    flattening or crawling."""
    from index.ingest import IngestOptions, refuse_other_identity
    from index.snapshot import parse_limit

    embedding = None
    if not no_embed:
        embedding = embedding_config(settings, base_url, model, api_key_env)
    options = IngestOptions(partial=partial, reindex=reindex, wait=wait, embedding=embedding,
                            max_delete=parse_limit(max_delete), replace=replace)  # fmt: skip
    refuse_other_identity(store_dir, options)
    return options


@dataclass(frozen=True)
class Run:
    """What every job of one `ingest` shares: the store, the config, the flags not per source."""

    store_dir: str | None
    settings: dict[str, Any]
    header: list[str] | None
    workers: int
    reindex: bool
    wait: float
    no_embed: bool
    base_url: str | None
    model: str | None
    api_key_env: str | None
    as_json: bool
    quiet: bool
    replace: bool = False  # each corpus's content replaced by its source's, whatever it held

    def ingest(self, job: Job) -> None:
        """Flatten one source and load it into its corpus; its summary on stdout with --json."""
        from flatten.corpus_sources import corpus_source
        from flatten.report import RunReport
        from index.ingest import refuse_other_source
        from index.loader import spool_records

        v = job.value
        summary = Summary(command="ingest", corpus=job.corpus, source=job.source)
        with summarized(summary, self.as_json):
            loading = ingest_options(self.store_dir, self.settings, self.no_embed,
                                      self.base_url, self.model, self.api_key_env, partial=False,
                                      reindex=self.reindex, wait=self.wait,
                                      max_delete=v("max_delete"),
                                      replace=self.replace)  # fmt: skip
            source = corpus_source(job.kind, job.source)
            # Before the flatten or crawl: a corpus of another source is refused now.
            refuse_other_source(self.store_dir, job.corpus, source, loading)
            options = settings_options(job.settings, self.workers, self.settings)
            crawling = crawl_options(v("url"), v("scope"), v("max_pages"), v("max_depth"),
                                     v("concurrency"), v("delay"), v("timeout"),
                                     str(v("max_page_size")), v("ignore_robots"),
                                     v("no_sitemap"), self.header)  # fmt: skip
            report = RunReport(source=job.source)
            talk = not self.quiet and not self.as_json
            try:
                with Progress("ingest", enabled=not self.quiet) as progress:
                    root = v("root")
                    records = source_records(Path(root) if root is not None else None,
                                             v("repo"), v("ref"), v("subdir"), v("token_env"),
                                             options, report, progress, url=v("url"),
                                             crawling=crawling)  # fmt: skip
                    try:
                        spooled = spool_records(records)
                    finally:
                        close(records)
            finally:
                summary.add_run(report)  # what was seen, even when the flatten failed
            try:
                if talk:
                    say(report.summary(), err=True)
                load_into(self.store_dir, [spooled], job.corpus, loading, summary, talk=talk,
                          source=source)  # fmt: skip
            finally:
                spooled.unlink(missing_ok=True)
