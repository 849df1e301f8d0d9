"""SIGTERM and Ctrl-C, one stop: the same clean-up (every `except KeyboardInterrupt` and
`finally` runs: temporary files removed, the index transaction rolled back), and exit 128 + the
signal (143, 130). Ctrl-C goes through the same handler rather than Python's default one: with
the default, a load stopped mid-transaction exited by SIGINT itself (-2) about one time in two
on a loaded machine, after its clean-up and message, instead of 130.

Raised where the signal lands, except inside an event loop (a crawl): raised in the middle of a
task it would leave that task's exception never retrieved (asyncio prints it, traceback and
all, when the task is collected). There the loop raises it between callbacks, so asyncio cancels
the tasks and awaits their clean-up, as it does for Ctrl-C.

Outside a command (while the app starts: typer builds the command, imports its module, parses
its options; or once it has returned) there is nothing to clean up, and a stop raised there
would meet typer's own handling (exit 130 whatever the signal, or a traceback): the process
exits at once with 128 + the signal, after the same message.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator

from flatten.errors import Interrupted

_in_command = False  # a command is running: a stop is raised so that its clean-up runs


def stop_on_signals() -> None:
    # SIGINT first: once SIGTERM is caught (what /proc shows a supervisor), both are; the
    # other way round, a Ctrl-C between the two calls met Python's default handler.
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)


@contextlib.contextmanager
def stops_raised() -> Iterator[None]:
    """The block is a command: a stop raises `Interrupted` in it (its clean-up runs, then the
    command's error handling exits 128 + the signal)."""
    global _in_command
    outer, _in_command = _in_command, True
    try:
        yield
    finally:
        _in_command = outer


def _stop(signum: int, frame: object) -> None:
    if not _in_command:
        sys.stderr.write("interrupted: nothing was written\n")
        raise SystemExit(128 + signum)
    loop = _running_loop()
    if loop is not None:
        try:
            loop.call_soon_threadsafe(_raise, signum)  # wakes the loop out of its wait
            return
        except RuntimeError:
            pass  # the loop is closing: raise here
    _raise(signum)


def _raise(signum: int) -> None:
    raise Interrupted(signum)


def _running_loop() -> object | None:
    asyncio = sys.modules.get("asyncio")  # never imported: no loop (and no import cost)
    if asyncio is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
