"""Progress on stderr: a rich bar on a terminal, a periodic one-line status in CI logs.

The bar is refreshed by the caller, not by rich's background thread: the pipeline forks worker
processes, and forking while another thread holds a lock can deadlock the children.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from flatten.report import RunReport


class Progress:
    """Call it with the report after each file (or `update` with counts); a context manager."""

    def __init__(
        self,
        label: str,
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        interval: float = 10.0,
    ) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.interval = interval
        self._bar = None
        self._task = None
        self._last = time.monotonic()

    def __enter__(self) -> Progress:
        if self.enabled and self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            self._bar = Bar(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=True,
                auto_refresh=False,  # no background thread: see the module docstring
            )
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=None, status="")
        return self

    def __call__(self, report: RunReport) -> None:
        status = f"{report.slices:,} slices, {report.bytes_read / 1e6:,.1f} MB"
        self.update(report.files_done, report.files_total, "files", status)

    def update(self, done: int, total: int, unit: str, status: str = "") -> None:
        """`done` of `total` `unit`s (total 0: not known yet), with a short status."""
        if not self.enabled:
            return
        now = time.monotonic()
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total or None, status=status)
            if now - self._last >= 0.1:
                self._last = now
                self._bar.refresh()
            return
        if now - self._last >= self.interval:
            self._last = now
            line = f"{self.label}: {done:,}/{total:,} {unit}" + (f", {status}" if status else "")
            print(line, file=self.stream, flush=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
