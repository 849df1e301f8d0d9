"""What `flatten` (and `pack`) run once their flags are parsed, without typer: the pipeline on
the flags' settings, its records to a consumer, the report filled, written and summed up.
`flatten.cli.flatten` declares the command for typer; `flatten.cli.quick` parses a plain
`flatten` command line itself and calls the same `flatten_to_jsonl`.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from flatten.cli.failures import echo_err
from flatten.cli.jobs import command_name, flatten_settings
from flatten.cli.settings import (
    Format,
    Kind,
    close,
    crawl_options,
    read_config,
    settings_options,
    source_records,
)
from flatten.errors import UsageError

# The codec, the writer and the progress line load when a command runs, not for --help.
if TYPE_CHECKING:
    from flatten.record import Record
    from flatten.report import RunReport
    from flatten.writer import Sink


def flatten_to_jsonl(
    fmt: Format, output: Path | None, *, given: set[str] | None = None, **flags: object
) -> RunReport:
    """`flatten` itself: the records of `run_flatten(**flags)` as JSONL in the `fmt` layout, to
    `output` (atomically) or stdout. `given`: the flags on the command line (None: typer's)."""
    from flatten.record import PROFILES
    from flatten.writer import write_jsonl

    return run_flatten(
        lambda records, report: write_jsonl(
            records, output, PROFILES[fmt.value], marked=fmt is Format.native,
            partial=lambda: report.partial["reason"] if report.partial else None,
        ),
        encode_as=fmt.value,  # the workers encode the lines: see flatten.pipeline
        output=output, given=given, **flags,  # type: ignore[arg-type]
    )  # fmt: skip


# Quoted: the report (and the walker under it) loads when a command runs, not for --help.
Consumer = Callable[[Iterator["Record"], "RunReport"], object]


def run_flatten(
    consume: Consumer, *, root: Path | None, repo: str | None, ref: str | None,
    subdir: str | None, token_env: str | None, url: str | None, scope: str | None,
    max_pages: int, max_depth: int, concurrency: int, delay: float, timeout: float,
    max_page_size: str, ignore_robots: bool, no_sitemap: bool, header: list[str] | None,
    kind: Kind, output: Path | None, include: list[str] | None, exclude: list[str] | None,
    max_file_size: str, max_chars: int, report_path: Path | None, workers: int,
    config: Path | None, quiet: bool, encode_as: str | None = None,
    given: set[str] | None = None,
) -> RunReport:  # fmt: skip
    """Run the pipeline on the flags of `flatten` and hand its records to `consume` (which
    writes them); the report is filled, written (--report) and summed up whatever happens.
    `flatten` and `pack` differ only in their consumer (and `encode_as`: `flatten`'s records
    may come as lines already encoded in that layout, which its writer copies). `given`: the
    flags given on the command line, which the config does not override (None: ask typer)."""
    from flatten.progress import Progress
    from flatten.report import RunReport
    from flatten.writer import json_document

    report_opener = _report_opener(report_path, output)
    settings = read_config(config)
    flat = flatten_settings({"kind": kind, "include": include, "exclude": exclude,
                             "max_file_size": max_file_size, "max_chars": max_chars},
                            settings, given)  # fmt: skip
    options = settings_options(flat, workers, settings)
    # What this run writes is never read as input (`--root . -o out.jsonl`, run twice).
    outputs = tuple(str(p) for p in (output, report_path) if p is not None and str(p) != "-")
    options = replace(options, outputs=outputs)
    crawling = crawl_options(url, scope, max_pages, max_depth, concurrency, delay, timeout,
                             max_page_size, ignore_robots, no_sitemap, header)  # fmt: skip
    report = RunReport(source=str(root or repo or url), kind=options.kind)
    failure: BaseException | None = None
    # The report file is opened (checked as -o is: no folder, no link) before any output: a
    # target refused only at the end failed a run whose stream had already said it succeeded.
    with report_opener() as report_sink:
        try:
            with Progress("flatten", enabled=not quiet) as progress:
                records = source_records(root, repo, ref, subdir, token_env, options, report,
                                         progress, url=url, crawling=crawling,
                                         encode_as=encode_as)  # fmt: skip
                try:
                    consume(records, report)
                finally:
                    close(records)
        except BaseException as exc:
            report.fail(exc)
            failure = exc
        if report_sink is not None:  # written whatever happened, so a failed run says why
            report_sink.write(json_document(report.to_dict(command_name("flatten"))))
            report_sink.flush()
    if failure is not None:
        raise failure
    if not quiet:
        echo_err(report.summary())
    return report


def _report_opener(
    report_path: Path | None, output: Path | None
) -> Callable[[], contextlib.AbstractContextManager[Sink | None]]:
    """Where `--report` goes, checked before the run: a file (as `-o` is), stdout for `-` (as
    `-o -` means), or nowhere. `--report -` beside records or a pack on stdout is refused: two
    documents in one stream would break whatever reads it."""
    from flatten.writer import OutputFile, Sink

    if report_path is None:
        return contextlib.nullcontext
    if str(report_path) != "-":
        if output is not None and _same_file(report_path, output):
            raise UsageError(
                f"--report and -o both name {output}: the report would replace the output",
                reason="same-output",
                hint="give the report a file of its own",
            )
        return lambda: OutputFile(report_path)
    if output is None:
        raise UsageError(
            "--report - writes the report to stdout, where the output already goes",
            reason="stdout-taken",
            hint="write the output to a file with -o FILE, or the report with --report FILE",
        )
    return lambda: contextlib.nullcontext(Sink(sys.stdout.buffer, "stdout"))


def _same_file(one: Path, other: Path) -> bool:
    """Whether two output paths name one regular file (or one that does not exist yet); a
    device or a pipe (`/dev/null` for both) takes both writes as they come."""
    if os.path.realpath(one) != os.path.realpath(other):
        return False
    try:
        return stat.S_ISREG(os.stat(one).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False
