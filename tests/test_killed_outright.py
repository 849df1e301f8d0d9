"""A `flatten` killed outright (SIGKILL: the OOM killer, `kill -9`, `timeout -s KILL`, a CI step
timeout) runs no clean-up of its own: its worker processes must still end with it, so a reader
of its output sees the stream end, and `index -` refuses the cut stream rather than waiting."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.conftest import PROJECT, write
from tests.processes import still_running, wait_for_children

FILES = 300  # over flatten.parallel.MIN_ITEMS_FOR_PROCESSES: the run starts its workers


def _tree(root) -> None:
    # ~1.5 MB of records: far more than a pipe holds, so a run whose stdout nobody reads is
    # stuck mid-run (its workers started, its output unfinished) until it is killed.
    write(root, {
        f"docs/page{i:03}.md": f"# Page {i}\n\n" + f"Paragraph {i} of the guide, in words. " * 120
        for i in range(FILES)
    })  # fmt: skip


def _stdout_once_started(pid: int, within: float = 60) -> str:
    deadline = time.monotonic() + within
    while (target := os.readlink(f"/proc/{pid}/fd/1")) != os.devnull:
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return target


def test_a_flatten_killed_mid_run_leaves_no_worker_and_index_sees_the_stream_cut(tmp_path):
    _tree(tmp_path / "src")
    read_end, write_end = os.pipe()
    flatten = subprocess.Popen(
        [sys.executable, "-m", "flatten", "flatten", "--root", str(tmp_path / "src"),
         "--workers", "2", "-q"],
        stdout=write_end, stderr=subprocess.PIPE, cwd=PROJECT,
    )  # fmt: skip
    os.close(write_end)
    workers: dict[int, bytes | None] = {}
    try:
        workers = wait_for_children(flatten.pid, 2)
        # They send their results to the parent: the caller's stdout is not theirs to hold
        # (let go of as they start, a moment after they are seen).
        assert {_stdout_once_started(pid) for pid in workers} == {os.devnull}
        flatten.kill()
        # stderr to its end: it ends only once no worker holds it (capture_output's wait).
        _, stderr = flatten.communicate(timeout=120)
        assert flatten.returncode == -9 and b"Traceback" not in stderr
        assert still_running(workers) == []
    finally:  # a failed run here must not leave its workers to the rest of the suite
        flatten.kill()
        for pid in still_running(workers, within=0):
            os.kill(pid, signal.SIGKILL)
    # Read only now, the pipe holds what was written before the kill, then its end: `index -`
    # sees no closing mark, loads nothing and says why (it waited forever while workers lived).
    with os.fdopen(read_end, "rb") as cut:
        loaded = subprocess.run(
            [sys.executable, "-m", "flatten", "index", "-", "--corpus", "c",
             "--store", str(tmp_path / "store"), "--json"],
            stdin=cut, capture_output=True, text=True, cwd=PROJECT, timeout=120,
        )  # fmt: skip
    assert loaded.returncode != 0 and "Traceback" not in loaded.stderr
    assert json.loads(loaded.stdout)["error"]["reason"] == "stream-incomplete"
