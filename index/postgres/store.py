"""The PostgreSQL store: the SQLite store's semantics on a shared server.

A load is one transaction per corpus. One writer per corpus: a load takes
`pg_advisory_xact_lock` on its corpus (and the store-wide lock shared), so other corpora load in
parallel while a second writer of the same corpus waits up to the busy timeout, then fails with
`store-busy`; a store-wide write (vectors, migrations) takes the store-wide lock alone. Readers
are never blocked (MVCC). A writer killed mid-load, or a server stopped mid-load, leaves the
previous corpus as it was: nothing is visible before COMMIT. Messages show the URL without a
password (`index.postgres.url`).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flatten import __version__
from index.errors import StoreError
from index.postgres import schema
from index.postgres.connection import Connection
from index.postgres.url import StoreURL, parse

CONNECT_TIMEOUT = 10  # seconds to reach the server before `store-unreachable`
STORE_LOCK = "docs-flatten store"  # taken shared by each corpus's writer, alone by the rest


def lock_key(name: str) -> int:
    """A stable 64-bit advisory lock key for `name` (signed, as Postgres's bigint)."""
    digest = hashlib.sha256(f"docs-flatten\0{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PostgresStore:
    """`index.store.Store`'s interface on PostgreSQL: `db` (sqlite3's interface), `readonly`,
    `write()`, `close()`, `location` (what messages show) and `size()`."""

    kind = "postgres"
    path = None  # no file: what needs one (the vector sidecar) asks `kind` first

    def __init__(self, db: Connection, url: StoreURL, readonly: bool, busy_timeout: float):
        self.db = db
        self.url = url
        self.readonly = readonly
        self.busy_timeout = busy_timeout
        self.build_hint: str | None = None  # how to build a store that has no index yet
        self.upgrade_hint: str | None = None  # and how to upgrade one of an older version

    @property
    def location(self) -> str:
        return self.url.shown

    def size(self) -> int:
        return int(self.db.execute("SELECT pg_database_size(current_database())").fetchone()[0])

    @classmethod
    def open(
        cls,
        url: str,
        *,
        readonly: bool = False,
        busy_timeout: float = 60.0,
        build_hint: str | None = None,
        upgrade_hint: str | None = None,
    ):
        parsed = parse(url)
        raw = _connect(parsed, readonly)
        connection = Connection(raw)
        connection.vector_type = parsed.vectors  # what a new HNSW index is built on
        connection.build_memory = parsed.build_memory  # and the most its build may take
        store = cls(connection, parsed, readonly, busy_timeout)
        store.build_hint = build_hint
        store.upgrade_hint = upgrade_hint
        try:
            store._prepare()
        except BaseException:
            store.close()
            raise
        return store

    def _prepare(self) -> None:
        from index.schema import MIGRATIONS, latest

        names = [name for name, _ in MIGRATIONS]
        try:
            done = schema.known(self.db)
        except _psycopg().Error as exc:
            raise self.fault(exc, writing=False) from exc
        ahead = sorted(done - set(names))
        if ahead:
            raise StoreError(
                f"the index at {self.location} was written by a newer docs-flatten (its "
                f"schema is at {ahead[-1]}); this is docs-flatten {__version__} (schema "
                f"{latest()})",
                reason="index-newer",
                hint="use the newer docs-flatten with this store, or point --store elsewhere",
            )
        behind = [name for name in names if name not in done]
        if not behind:
            return
        if self.readonly:
            if not done:
                raise StoreError(
                    f"no index at {self.location}", reason="index-not-built", hint=self.build_hint
                )
            if schema.read_as_if_current(self.db, behind):
                return  # the previous version's store, read as it is; a writer upgrades it
            raise StoreError(
                f"the index at {self.location} predates this version",
                reason="index-outdated",
                hint=self.upgrade_hint or "any load upgrades it",
            )
        with self.write():
            _require_vector(self.db, self.location)
            schema.migrate(self.db)

    @contextmanager
    def write(self, corpus: str | None = None) -> Iterator[Connection]:
        """One write transaction: with a corpus, that corpus's writer lock (others load
        alongside); without, the store-wide lock. A lock not had within the busy timeout:
        `store-busy`, nothing written."""
        psycopg = _psycopg()
        try:
            self.db.execute("BEGIN")
            self.db.execute(f"SET LOCAL lock_timeout = {int(self.busy_timeout * 1000)}")
            if corpus is None:
                self.db.execute("SELECT pg_advisory_xact_lock(?)", (lock_key(STORE_LOCK),))
            else:
                self.db.execute(
                    "SELECT pg_advisory_xact_lock_shared(?), pg_advisory_xact_lock(?)",
                    (lock_key(STORE_LOCK), lock_key(f"corpus\0{corpus}")),
                )
        except psycopg.Error as exc:
            self._rollback()
            raise self.fault(exc, writing=True) from exc
        try:
            yield self.db
            if corpus is not None:
                _finish_load(self.db, corpus)
            self.db.execute("COMMIT")
        except psycopg.Error as exc:
            self._rollback()
            if isinstance(exc, _BUGS):
                raise  # no fault of the server: a bug, shown as one
            raise self.fault(exc, writing=True) from exc
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        # A broken connection has rolled back already (the server discards it): nothing to do.
        if not self.db.raw.closed and self.db.in_transaction:
            with contextlib.suppress(_psycopg().Error):
                self.db.execute("ROLLBACK")

    def fault(self, error: Exception, *, writing: bool) -> StoreError:
        return store_fault(error, self.location, writing=writing)

    def compact(self) -> None:
        """Nothing to do after a load or a drop (`Store.compact` on SQLite): autovacuum gives
        dead rows' space back to the tables on its own."""
        return None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _finish_load(db: Connection, corpus: str) -> None:
    """What the text index does at the end of a corpus's load, inside its transaction (the
    term statistics' deltas folded: see `PostgresTextIndex.finish_load`)."""
    from index.textindex import text_index

    row = db.execute("SELECT id FROM corpora WHERE name = ?", (corpus,)).fetchone()
    if row is not None:
        text_index(db).finish_load(row[0])  # type: ignore[attr-defined]


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # the optional extra is not installed
        raise StoreError(
            "a postgresql:// store needs the PostgreSQL driver, which is not installed",
            reason="store-driver-missing",
            hint="pip install 'docs-flatten[postgres]'",
        ) from exc
    return psycopg


def _bugs() -> tuple[type[BaseException], ...]:
    try:
        from psycopg import errors
    except ImportError:
        return ()
    return (errors.SyntaxErrorOrAccessRuleViolation, errors.DataError, errors.ProgrammingError)


_BUGS = _bugs()


def _connect(url: StoreURL, readonly: bool) -> Any:
    psycopg = _psycopg()
    options = "-c default_transaction_read_only=on" if readonly else None
    try:
        return psycopg.connect(
            url.conninfo,
            password=url.password(),
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT,
            application_name="docs-flatten",
            options=options,
        )
    except psycopg.Error as exc:
        raise StoreError(
            f"cannot connect to the store {url.shown}: {_first_line(exc)}",
            reason="store-unreachable",
            hint="check the server is up and the URL, user and password "
            "(the password comes from the variable named by password_env=, else PGPASSWORD "
            "or ~/.pgpass)",
        ) from exc


def _require_vector(db: Connection, location: str) -> None:
    """pgvector, created when this user may; otherwise a named error before any table."""
    psycopg = _psycopg()
    try:
        db.execute("SAVEPOINT vector")
        db.execute("CREATE EXTENSION IF NOT EXISTS vector")
        db.execute("RELEASE SAVEPOINT vector")
    except psycopg.Error as exc:
        db.execute("ROLLBACK TO SAVEPOINT vector")
        if db.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return
        raise StoreError(
            f"the store {location} lacks the pgvector extension and this user cannot create "
            f"it: {_first_line(exc)}",
            reason="store-extension-missing",
            hint="as a superuser: CREATE EXTENSION vector; in that database",
        ) from exc


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def store_fault(error: Exception, location: str, *, writing: bool) -> StoreError:
    """The named error for what the server or the connection reported."""
    from psycopg import errors

    unchanged = "; the index is as it was before this run" if writing else ""
    if isinstance(error, errors.LockNotAvailable | errors.DeadlockDetected):
        return StoreError(
            f"another docs-flatten run is writing this corpus to {location}",
            reason="store-busy",
            hint="wait for it to finish, then run this again",
        )
    if isinstance(error, errors.ReadOnlySqlTransaction | errors.InsufficientPrivilege):
        return StoreError(
            f"the store {location} is read-only for this user ({_first_line(error)}){unchanged}",
            reason="store-readonly",
            hint="grant this user write access, or point --store elsewhere",
        )
    if isinstance(error, errors.DiskFull | errors.InsufficientResources):
        return StoreError(
            f"cannot write the store {location}: {_first_line(error)}{unchanged}",
            reason="disk-full",
            hint="free some space on the server, then run this again",
        )
    return StoreError(
        f"the store {location} failed: {_first_line(error)}{unchanged}",
        reason="store-write-failed" if writing else "store-unreadable",
        hint="check the server, then run this again",
    )


ID_BLOCK = 1024  # ids reserved per round trip


def reserved_ids(db: Connection, table: str) -> Iterator[int]:
    """Ids from `table`'s identity sequence, a block per round trip. Not contiguous across
    blocks (another corpus's writer may take ids in between), unique always; an id reserved and
    not used (a rolled-back load) is simply skipped."""
    sequence = db.execute("SELECT pg_get_serial_sequence(?, 'id')", (table,)).fetchone()[0]
    while True:
        rows = db.execute(
            "SELECT nextval(?) FROM generate_series(1, ?)", (sequence, ID_BLOCK)
        ).fetchall()
        for (value,) in rows:
            yield int(value)
