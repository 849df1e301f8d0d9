"""The `docs-flatten` console script and `python -m flatten`: the stop handler is installed
before the app is imported. Importing typer and the app is most of a command's start-up; a
SIGTERM landing there ended the process by the signal itself (no message, no exit status)
rather than exiting 143 after "interrupted: nothing was written" (`flatten.cli.stopping`)."""

from __future__ import annotations

from flatten.cli.stopping import stop_on_signals


def main() -> None:
    stop_on_signals()
    from flatten.cli.app import main as run_app  # typer and the commands load after it

    run_app()
