"""Processes seen through /proc (Linux): who a process's children are, and whether a pid still
runs the program it ran (not a zombie, not a pid reused by another program)."""

from __future__ import annotations

import os
import time


def _stat(pid: int) -> tuple[str, int] | None:
    """A process's state letter and parent pid, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return fields[0].decode(), int(fields[1])


def children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None and stat[1] == pid:
                found.append(int(name))
    return sorted(found)


def command_line(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return None


def running(pid: int, command: bytes | None) -> bool:
    """Whether `pid` runs, and runs `command` (its /proc cmdline, as seen when it ran)."""
    stat = _stat(pid)
    if stat is None or stat[0] in "ZX":  # a zombie has ended; its reaper is not ours to wait for
        return False
    return command is None or command_line(pid) == command


def still_running(commands: dict[int, bytes | None], within: float = 60) -> list[int]:
    """The pids of `commands` that still run after `within` seconds (a generous bound on a
    loaded machine; the wait ends as soon as none runs)."""
    deadline = time.monotonic() + within
    while True:
        alive = [pid for pid, command in commands.items() if running(pid, command)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def wait_for_children(pid: int, count: int, within: float = 60) -> dict[int, bytes | None]:
    """The first `count` children of `pid` (with their command lines) once it has them."""
    deadline = time.monotonic() + within
    while True:
        found = children(pid)
        if len(found) >= count:
            return {child: command_line(child) for child in found[:count]}
        assert time.monotonic() < deadline, f"process {pid} never had {count} children"
        time.sleep(0.02)
