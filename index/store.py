"""The index store: one SQLite file, 0600 inside a 0700 directory, in WAL mode.

One writer at a time (a second waits up to `busy_timeout`, then fails with a clear message);
readers are never blocked by a writer. A load is one transaction: a crash or Ctrl-C in the
middle leaves the previous index as it was.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from index.errors import StoreError
from index.schema import MIGRATIONS, known, migrate

STORE_ENV = "DOCS_FLATTEN_STORE"
DEFAULT_STORE = ".docs-flatten"
DB_NAME = "index.sqlite"


def store_dir(store: str | os.PathLike[str] | None = None) -> Path:
    """--store, else $DOCS_FLATTEN_STORE, else ./.docs-flatten."""
    return Path(store or os.environ.get(STORE_ENV) or DEFAULT_STORE).expanduser()


def build_hint() -> str:
    return "build it with `docs-flatten index corpus.jsonl` or `docs-flatten ingest --root DIR`"


class Store:
    def __init__(self, db: sqlite3.Connection, path: Path, readonly: bool) -> None:
        self.db = db
        self.path = path
        self.readonly = readonly

    @classmethod
    def open(
        cls,
        store: str | os.PathLike[str] | None = None,
        *,
        readonly: bool = False,
        busy_timeout: float = 60.0,
    ) -> Store:
        directory = store_dir(store)
        path = directory / DB_NAME
        if readonly:
            if not path.exists():
                raise StoreError(
                    f"no index at {directory}", reason="index-not-built", hint=build_hint()
                )
            db = _connect(f"{path.resolve().as_uri()}?mode=ro", busy_timeout, uri=True)
            store_obj = cls(db, path, True)
            if {name for name, _ in MIGRATIONS} - _known_or_empty(db):
                # An older store: a writer upgrades it; a reader refuses to guess.
                raise StoreError(
                    f"the index at {directory} predates this version",
                    reason="index-outdated",
                    hint="run `docs-flatten index` once to upgrade it",
                )
            return store_obj
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(directory, 0o700)
        except OSError as exc:
            raise StoreError(
                f"cannot create the store {directory}: {exc.strerror}", reason="store-unwritable"
            ) from exc
        old_umask = os.umask(0o077)  # the database, its WAL and SHM files: owner only
        try:
            db = _connect(str(path), busy_timeout)
            db.execute("PRAGMA journal_mode=WAL")
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        store_obj = cls(db, path, False)
        with store_obj.write():
            migrate(db)
        return store_obj

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; taken at the start, so a second writer waits here."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreError(
                    f"another docs-flatten run is writing to {self.path.parent}",
                    reason="store-busy",
                    hint="wait for it to finish, then run this again",
                ) from exc
            raise
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        else:
            self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connect(target: str, busy_timeout: float, *, uri: bool = False) -> sqlite3.Connection:
    try:
        db = sqlite3.connect(
            target, timeout=busy_timeout, uri=uri, isolation_level=None, check_same_thread=False
        )
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA cache_size=-65536")  # 64 MiB: FTS5 merges touch many pages
        db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        return db
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"cannot open the index {target}: {exc}",
            reason="store-unreadable",
            hint="if the file is damaged, remove the store and index again",
        ) from exc


def _known_or_empty(db: sqlite3.Connection) -> set[str]:
    try:
        return known(db)
    except sqlite3.DatabaseError:
        return set()
