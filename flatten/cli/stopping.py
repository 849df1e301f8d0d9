"""SIGTERM and Ctrl-C, one stop: the same clean-up (every `except KeyboardInterrupt` and
`finally` runs: temporary files removed, the index transaction rolled back), and exit 128 + the
signal (143, 130). Ctrl-C goes through the same handler rather than Python's default one: with
the default, a load stopped mid-transaction exited by SIGINT itself (-2) about one time in two
on a loaded machine, after its clean-up and message, instead of 130.

Raised where the signal lands, except inside an event loop (a crawl): raised in the middle of a
task it would leave that task's exception never retrieved (asyncio prints it, traceback and
all, when the task is collected). There the loop raises it between callbacks, so asyncio cancels
the tasks and awaits their clean-up, as it does for Ctrl-C.
"""

from __future__ import annotations

import signal
import sys

from flatten.errors import Interrupted


def stop_on_signals() -> None:
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)


def _stop(signum: int, frame: object) -> None:
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
