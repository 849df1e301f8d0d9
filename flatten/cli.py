"""The `docs-flatten` command: argument parsing and output over the library API, nothing more.

Data goes to stdout, diagnostics to stderr. Exit codes: 0 ok, 1 the run failed, 2 usage error.
Every failure prints what was wrong and what to do; no traceback reaches the user.
"""

from __future__ import annotations

import functools
import re
import signal
import sys
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from flatten import __version__
from flatten.errors import FlattenError, UsageError
from flatten.pipeline import DEFAULT_MAX_FILE_SIZE, FlattenOptions, flatten_repo, flatten_root
from flatten.profiles import PROFILES
from flatten.progress import Progress
from flatten.record import Record
from flatten.report import RunReport
from flatten.writer import write_json, write_jsonl
from slicers import DEFAULT_MAX_CHARS

app = typer.Typer(
    name="docs-flatten",
    help="Turn documentation and code into a searchable, citable corpus of JSONL records.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., Any])


class Kind(StrEnum):
    docs = "docs"
    code = "code"
    auto = "auto"


class Format(StrEnum):
    native = "native"
    langchain = "langchain"
    llamaindex = "llamaindex"
    haystack = "haystack"


def fail(message: str, *, hint: str | None = None, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    if hint:
        typer.echo(f"hint: {hint}", err=True)
    raise typer.Exit(code)


def reports_errors(command: F) -> F:
    """Map the error hierarchy (and Ctrl-C) to messages and exit codes, in one place."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except FlattenError as exc:
            fail(exc.message, hint=exc.hint, code=exc.exit_code)
        except KeyboardInterrupt:
            typer.echo("interrupted: nothing was written", err=True)
            raise typer.Exit(130) from None
        except BrokenPipeError:
            sys.stderr.close()  # the reader went away (`| head`): not an error
            raise typer.Exit(0) from None

    return wrapper  # type: ignore[return-value]


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]i?b?|b)?\s*$", re.I)
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "m": 1000**2,
    "g": 1000**3,
    "ki": 1024,
    "mi": 1024**2,
    "gi": 1024**3,
}


def parse_size(text: str) -> int:
    """`1048576`, `512k`, `1MiB`, `2MB` -> bytes."""
    match = _SIZE.match(text)
    if not match:
        raise UsageError(
            f"not a size: {text!r} (try 1MiB, 512k or a number of bytes)", reason="bad-size"
        )
    unit = (match.group(2) or "").lower().removesuffix("b")
    return int(float(match.group(1)) * _UNITS[unit])


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"docs-flatten {__version__}")
        raise typer.Exit(0)


@app.command()
@reports_errors
def flatten(
    root: Annotated[
        Path | None,
        typer.Option("--root", help="A local directory to flatten.", show_default=False),
    ] = None,
    repo: Annotated[
        str | None,
        typer.Option(
            "--repo",
            help="A git URL or path to clone (shallow, into a temporary directory).",
            show_default=False,
        ),
    ] = None,
    ref: Annotated[
        str | None,
        typer.Option(
            "--ref",
            help="Branch, tag or commit SHA [default: the remote's default branch].",
            show_default=False,
        ),
    ] = None,
    subdir: Annotated[
        str | None,
        typer.Option(
            "--subdir",
            help="Only this folder of the repository (sources stay repository-relative).",
            show_default=False,
        ),
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            metavar="NAME",
            help="Environment variable holding a token for the clone (never printed or stored).",
            show_default=False,
        ),
    ] = None,
    kind: Annotated[
        Kind,
        typer.Option(
            "--kind", help="docs: markdown, reST, AsciiDoc, text. code/auto: every text file."
        ),
    ] = Kind.docs,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Write JSONL here (atomically) [default: stdout].",
            show_default=False,
        ),
    ] = None,
    include: Annotated[
        list[str] | None,
        typer.Option(
            "--include",
            metavar="GLOB",
            help="Only paths matching (repeatable).",
            show_default=False,
        ),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            metavar="GLOB",
            help="Skip paths matching (repeatable).",
            show_default=False,
        ),
    ] = None,
    max_file_size: Annotated[
        str,
        typer.Option(
            "--max-file-size", metavar="SIZE", help="Skip larger files (1MiB, 512k, bytes)."
        ),
    ] = "1MiB",
    max_chars: Annotated[
        int, typer.Option("--max-chars", help="Size budget of one slice, in characters.")
    ] = DEFAULT_MAX_CHARS,
    fmt: Annotated[
        Format,
        typer.Option(
            "--format", help="Record layout: native v1, or the document layout of a RAG framework."
        ),
    ] = Format.native,
    report_path: Annotated[
        Path | None,
        typer.Option(
            "--report", metavar="FILE", help="Write the run report as JSON.", show_default=False
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Worker processes [default: one per core on large trees].",
            show_default=False,
        ),
    ] = 0,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress or summary.")] = False,
) -> None:
    """Flatten a folder or a git repository into JSONL records, one per structural slice."""
    if (root is None) == (repo is None):
        raise UsageError("give exactly one of --root DIR or --repo URL", reason="bad-source")
    if root is not None and (ref or subdir or token_env):
        raise UsageError("--ref, --subdir and --token-env go with --repo", reason="bad-source")
    options = FlattenOptions(
        kind=kind.value,
        include=tuple(include or ()),
        exclude=tuple(exclude or ()),
        max_file_size=parse_size(max_file_size) if max_file_size else DEFAULT_MAX_FILE_SIZE,
        max_chars=max_chars,
        workers=workers,
    )
    report = RunReport(source=str(root or repo))
    try:
        with Progress("flatten", enabled=not quiet) as progress:
            if root is not None:
                records = flatten_root(root, options, report, on_progress=progress)
            else:
                assert repo is not None
                records = flatten_repo(
                    repo,
                    ref,
                    options,
                    report,
                    subdir=subdir,
                    token_env=token_env,
                    on_progress=progress,
                )
            try:
                write_jsonl(records, output, PROFILES[fmt.value])
            finally:
                _close(records)
    except FlattenError as exc:
        report.error = {"reason": exc.reason, "message": exc.message}
        raise
    finally:
        if report_path is not None:
            write_json(report.to_dict(), report_path)
    if not quiet:
        typer.echo(report.summary(), err=True)


def _close(records: Iterator[Record]) -> None:
    """End the generator now, so a clone's temporary directory goes before we return."""
    close = getattr(records, "close", None)
    if close:
        close()


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # run the same clean-up as Ctrl-C


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    app()


if __name__ == "__main__":
    main()
