"""The `docs-flatten` console script and `python -m flatten`: the stop handler is installed
before the app is imported. Importing typer and the app is most of a command's start-up; a
SIGTERM landing there ended the process by the signal itself (no message, no exit status)
rather than exiting 143 after "interrupted: nothing was written" (`flatten.cli.stopping`).

A plain `flatten` command line runs without typer (`flatten.cli.quick`); any other goes to the
app."""

from __future__ import annotations

import sys

from flatten.cli.stopping import stop_on_signals


def main() -> None:
    stop_on_signals()
    if sys.argv[1:2] == ["flatten"]:
        from flatten.cli.quick import run

        code = run(sys.argv[2:])
        if code is not None:
            raise SystemExit(code)
    from flatten.cli.app import main as run_app  # typer and the commands load after it

    run_app()
