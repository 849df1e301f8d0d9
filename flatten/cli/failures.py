"""Failures as the user reads them, in one place: the message (with the flag at fault) and the
hint on stderr, and the exit code. Without typer: `flatten.cli.app` raises typer's exit with the
code, `flatten.cli.quick` exits with it.

Exit codes: 0 ok, 1 the run failed, 2 usage error, 130 interrupted (Ctrl-C), 143 stopped by
SIGTERM; a closed pipe (`| head`) is no error.
"""

from __future__ import annotations

import re
import sys

from flatten.errors import FlattenError, interrupted_exit_code

# What a command's failure can be, short of a bug: each has its message and exit code here.
REPORTED = (FlattenError, KeyboardInterrupt, BrokenPipeError)

_EMBEDDINGS_HINT = (
    "set embeddings.base_url and embeddings.model in docs-flatten.yaml, or pass --base-url and "
    "--model"
)
# A query error names the value at fault, never a flag: the flag (and hint) of each reason.
QUERY_FLAGS: dict[str, tuple[str, str | None]] = {
    "bad-tier": ("--tier", None),
    "no-embeddings": ("--tier", _EMBEDDINGS_HINT),
    "bad-rerank": ("--rerank", None),
    "rerank-needs-vectors": ("--rerank", _EMBEDDINGS_HINT),
    "bad-offset": ("--offset", None),
    "unknown-corpus": ("--corpus", "docs-flatten stats lists the corpora"),
}


def add_cli_hint(exc: BaseException) -> None:
    """The library's errors name the reason and the value at fault; a way out that is a flag of
    this command line is added here (before the --json summary or the message shows it)."""
    if isinstance(exc, FlattenError) and exc.reason == "identity-mismatch" and exc.hint is None:
        from flatten.cli.jobs import rerun_with

        exc.hint = f"re-embed everything with the new settings: {rerun_with('--reindex')}"


def error_lines(exc: FlattenError) -> list[str]:
    """What the user reads for a failure: the message (with its flag), then the hint."""
    # Only on failure: the index's error and the redaction scan load with these.
    from index.errors import QueryError
    from index.text import clean

    add_cli_hint(exc)
    message, hint = exc.message, exc.hint
    if isinstance(exc, QueryError) and exc.reason in QUERY_FLAGS:
        flag, flag_hint = QUERY_FLAGS[exc.reason]
        message, hint = f"{flag}: {message}", hint or flag_hint
    return [clean(f"error: {message}")] + ([clean(f"hint: {hint}")] if hint else [])


def reported_exit_code(exc: FlattenError | KeyboardInterrupt | BrokenPipeError) -> int:
    """Say on stderr what went wrong (nothing for a closed pipe) and return the exit code. A
    stop says what was written: nothing (every load's transaction rolled back), unless the
    command that caught it says otherwise in its `written` (`flatten.cli.loading.load_into`)."""
    if isinstance(exc, FlattenError):
        for line in error_lines(exc):
            echo_err(line)
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        echo_err(f"interrupted: {getattr(exc, 'written', None) or 'nothing was written'}")
        return interrupted_exit_code(exc)
    return 0  # the reader went away: not an error


# What click strips from a line it prints to anything but a terminal (`click.echo`).
_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def echo_err(line: str) -> None:
    """A line on stderr, as `typer.echo(line, err=True)` prints it, without importing typer."""
    if sys.stderr is None:  # no stream to print to (click prints nothing either)
        return
    if not sys.stderr.isatty():
        line = _ANSI.sub("", line)
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
