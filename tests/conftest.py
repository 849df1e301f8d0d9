"""Shared test helpers: real git repositories in temp dirs, the CLI in process or in a real
subprocess."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from flatten.record import end_mark

PROJECT = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT / "fixtures"
SHARED = PROJECT.parent / "shared"

# A line of a real-looking minified bundle: long lines and almost no spaces.
MINIFIED_BUNDLE = (
    '!function(e,t){"use strict";var n=e.document,r=Object.getPrototypeOf;t(n,r)}'
    "(window,function(n,r){return n&&r});"
)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    out = subprocess.run(
        ["git", "-c", "init.defaultBranch=trunk", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def record(source: str, ordinal: int, content: str, **extra: object) -> dict:
    return {"id": f"{source}#{ordinal}", "source": source, "title": extra.pop("title", source),
            "content": content, "ordinal": ordinal, **extra}  # fmt: skip


def jsonl(path: Path, records: list[dict | str | bytes]) -> Path:
    with open(path, "wb") as out:
        for r in records:
            line = r if isinstance(r, bytes) else (r if isinstance(r, str) else json.dumps(r))
            out.write((line if isinstance(line, bytes) else line.encode()) + b"\n")
    return path


@dataclass
class Repo:
    path: Path

    @property
    def url(self) -> str:
        return self.path.as_uri()

    def commit(self, files: dict[str, str | bytes], message: str = "change") -> str:
        write(self.path, files)
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "-m", message)
        return git(self.path, "rev-parse", "HEAD")


@pytest.fixture
def make_repo(tmp_path: Path):
    def make(name: str = "origin") -> Repo:
        path = tmp_path / name
        path.mkdir()
        git(path, "init", "-q")
        return Repo(path)

    return make


_GIT_SPY = """#!/bin/sh
echo "$*" >> "{log}"
exec "{git}" "$@"
"""


@dataclass
class GitSpy:
    """A `git` first on `env`'s PATH that logs each call's arguments, then runs the real git."""

    env: dict[str, str]
    log: Path

    def calls(self) -> list[str]:
        """The argument lines of the calls since the last `clear`."""
        return self.log.read_text().splitlines()

    def clear(self) -> None:
        self.log.write_text("")


@pytest.fixture
def git_spy(tmp_path: Path) -> GitSpy:
    spy = tmp_path / "git-spy"
    spy.mkdir()
    log = tmp_path / "git-spy.log"
    log.write_text("")
    (spy / "git").write_text(_GIT_SPY.format(log=log, git=shutil.which("git")))
    (spy / "git").chmod(0o755)
    return GitSpy({"PATH": f"{spy}{os.pathsep}{os.environ['PATH']}"}, log)


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def records(self) -> list[dict]:
        """stdout's JSON lines, without the closing mark a piped stream ends with."""
        lines = [json.loads(line) for line in self.stdout.splitlines()]
        if lines and lines[-1] == end_mark(len(lines) - 1):
            lines.pop()
        return lines


# DOCS_FLATTEN_TEST_SUBPROCESS=1 runs every CLI call of the suite in a real interpreter, as
# `real=True` does for one call.
ALL_REAL = os.environ.get("DOCS_FLATTEN_TEST_SUBPROCESS") == "1"
# Read once per process (tempfile caches its directory), so only a new interpreter sees them.
_PROCESS_ENV = {"TMPDIR", "PATH", "TERM", "HOME"}


def run_cli(
    *args: str | os.PathLike[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    real: bool = False,
    **popen: Any,  # e.g. preexec_fn (resource limits) or user (an unprivileged run)
) -> CliResult:
    """The CLI's answer to `args`. In this process (the app's click command with its own
    stdin, stdout and stderr: about 0.3 s less than a new interpreter), unless the call needs a
    real process: `real=True` (what is tested is the process: exit on a signal, start-up, the
    main module), popen options, environment read at start-up, or `-` (stdin or stdout as a
    file descriptor)."""
    argv = [str(arg) for arg in args]
    if real or ALL_REAL or popen or "-" in argv or _PROCESS_ENV & set(env or ()):
        proc = subprocess.run(
            [sys.executable, "-m", "flatten", *argv],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            **popen,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)
    return _run_in_process(argv, env or {}, cwd)


@cache
def _click_command() -> Any:
    """The app's click command, built once per test process: typer builds it anew on every
    call (15 ms), and the suite runs the CLI in process hundreds of times. Click makes a new
    context for each invocation, so one command serves them all."""
    from typer.main import get_command

    from flatten.cli.app import app

    return get_command(app)


def _run_in_process(argv: list[str], env: dict[str, str], cwd: Path | None) -> CliResult:
    from click.testing import CliRunner

    before, before_argv = Path.cwd(), sys.argv
    # As `python -m flatten` sets them: hints rebuild the command line from sys.argv.
    sys.argv = [str(PROJECT / "flatten" / "__main__.py"), *argv]
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(_click_command(), argv, env=env, prog_name="python -m flatten")
    finally:
        os.chdir(before)
        sys.argv = before_argv
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # What the interpreter prints for an uncaught exception: tests look for it.
        stderr += "".join(traceback.format_exception(result.exception))
    return CliResult(result.exit_code, result.stdout, stderr)


def file_size_limit(limit: int):
    """A preexec_fn: the child may write no file past `limit` bytes (writes fail with EFBIG,
    as on a full disk; Python ignores SIGXFSZ, so the write fails instead of killing it)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def assert_clean_failure(result: CliResult, code: int, *words: str) -> None:
    """A failure the user can act on: the exit code, a named reason, and no traceback."""
    assert result.code == code, (result.code, result.stderr)
    assert "Traceback" not in result.stderr
    # A ranked search says its tier (and eval its warnings) on stderr before a failure after
    # the search (eval's floors).
    said = "".join(line for line in result.stderr.splitlines(keepends=True)
                   if not line.startswith(("tier: ", "warning: ")))  # fmt: skip
    assert said.startswith("error: ") or "Usage" in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)


# --- PostgreSQL: one real server per test process (tests/pgserver.py) -----------------------


def started_postgres():  # -> tests.pgserver.PostgresServer
    """A new real PostgreSQL + pgvector server. Under CI=true a server that cannot start FAILS
    the test that needs it (a skipped store is an untested store); elsewhere it skips, saying
    why."""
    from tests.pgserver import ServerUnavailable, start_server

    try:
        return start_server()
    except (ServerUnavailable, OSError, subprocess.SubprocessError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the PostgreSQL test server cannot start: {exc}")
        pytest.skip(f"the PostgreSQL test server cannot start here: {exc}")


@pytest.fixture(scope="session")
def postgres_server():
    """The PostgreSQL server of this test process (`started_postgres`)."""
    server = started_postgres()
    yield server
    server.remove()


_databases = iter(range(1, 1 << 30))


@pytest.fixture
def postgres_url(postgres_server, monkeypatch) -> Iterator[str]:
    """A fresh, empty database on the test server: its store URL, naming the environment
    variable that holds the password (set here; the URL itself holds none)."""
    from tests.pgserver import PASSWORD, PASSWORD_ENV

    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    name = f"t{os.getpid()}_{next(_databases)}"
    url = postgres_server.create_database(name)
    yield f"{url}?password_env={PASSWORD_ENV}"
    postgres_server.drop_database(name)


def lexical_engine(store: object) -> str:
    """What the tier line calls the lexical engine of this store (a folder or a URL)."""
    return "bm25 (postgres)" if str(store).startswith("postgresql://") else "FTS5"


@pytest.fixture
def store(store_url):
    """The store, on SQLite and on PostgreSQL (`store_url`): every test using it runs on both."""
    from index.store import Store

    with Store.open(store_url) as opened:
        yield opened


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def module_store_url(request, tmp_path_factory) -> Iterator[str]:
    """`store_url` for a module's shared fixtures (one store per module and kind)."""
    if request.param == "sqlite":
        yield str(tmp_path_factory.mktemp("store") / "store")
        return
    from tests.pgserver import PASSWORD, PASSWORD_ENV

    server = request.getfixturevalue("postgres_server")
    os.environ[PASSWORD_ENV] = PASSWORD  # the test server's, on loopback; no test unsets it
    name = f"m{os.getpid()}_{next(_databases)}"
    url = server.create_database(name)
    yield f"{url}?password_env={PASSWORD_ENV}"
    server.drop_database(name)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path: Path) -> str:
    """The one parametrised store: each test using it runs on SQLite (a folder) and on
    PostgreSQL (a fresh database on the test server)."""
    if request.param == "sqlite":
        return str(tmp_path / "store")
    return request.getfixturevalue("postgres_url")


def indexed_tree(
    root: Path, files: dict[str, str | bytes], corpus: str, kind: str = "auto"
) -> Path:
    """`files` written under `root/repo`, flattened (`kind`) and loaded into `root/store`: the
    store's path."""
    from flatten.pipeline import FlattenOptions, flatten_root
    from index.loader import load_records
    from index.store import Store

    write(root / "repo", files)
    with Store.open(root / "store") as opened:
        load_records(opened, flatten_root(root / "repo", FlattenOptions(kind=kind)), corpus)
    return root / "store"


# --- Workers: one and a half per CPU --------------------------------------------------------


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (what `make test` runs) starts half as many workers again as there are CPUs
    (3 on 2). About a fifth of a worker's time is spent waiting, not computing (on a server, a
    child process, a bounded timeout); a worker more fills it: on 2 CPUs, in the same minutes,
    59.6 s with 2 workers, 53.3 s with 3 (84 s with 4). PYTEST_XDIST_AUTO_NUM_WORKERS still
    decides when set (xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cpus or 1) + max(1, (cpus or 1) // 2)


# --- Order: the longest tests first ----------------------------------------------------------

# Tests that take several seconds each (CPU or waiting on a server or a child process), measured
# with --durations. Run first, they overlap the rest of the suite on the other worker instead of
# being a tail one worker runs alone while the other is done. None of them holds an expensive
# module fixture (moved out of its module's run, a module fixture is built again); the text
# index's is one empty database. A renamed test only loses its early start.
LONGEST_FIRST = (
    "test_postgres_bm25_scores_and_ranks_as_fts5",
    "test_libyaml_path_slices_generated_specs_as_ruamel_does",
    "test_libyaml_path_rejects_and_accepts_damaged_specs_as_ruamel_does",
    "test_a_server_stopped_mid_load_leaves_the_previous_corpus_intact",
    "test_flatten_piped_into_index_is_a_snapshot_and_a_failed_producer_removes_nothing",
    "test_a_writer_killed_mid_load_leaves_the_previous_corpus_intact",
    "test_a_loader_killed_mid_load_leaves_the_previous_index_intact",
    "test_interrupted_run_leaves_no_partial_file",
    "test_loading_any_lines_never_raises_and_counts_every_bad_line",
    "test_every_slicer_keeps_the_invariant_with_long_lines",
    "test_a_50_mb_one_line_file_becomes_many_records_through_the_cli",
    "test_libyaml_path_equals_ruamel_on_specs_dumped_by_ruamel",
    "test_two_corpora_loaded_at_once_both_commit",
    "test_under_ci_a_server_that_cannot_start_fails_the_postgres_tests",
    "test_backtracking_gitignore_pattern_cannot_stall_the_walk",
    "test_a_hostile_site_ends_bounded_reported_and_with_the_rest_intact",
    "test_json_line_writes_the_bytes_json_writes",
    "test_429_and_500_are_retried_after_retry_after",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests in LONGEST_FIRST move to the front, in its order; the rest keep theirs (every
    xdist worker collects the same order, as it must)."""
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(getattr(item, "originalname", item.name), len(rank)))


def stop_once(proc: subprocess.Popen, ready: Callable[[], bool], signum: int, what: str) -> str:
    """Send `signum` to `proc` once `ready()` (within two minutes; `what` names the moment
    waited for), and return its stderr; killed if it outlives the test."""
    try:
        deadline = time.monotonic() + 120
        while not ready():
            assert proc.poll() is None, f"it ended before {what}: {proc.communicate()[1]}"
            assert time.monotonic() < deadline, f"{what} never came"
            time.sleep(0.005)
        proc.send_signal(signum)
        return proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
