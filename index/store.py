"""The index store: one SQLite file in its own folder, in WAL mode.

What it writes: the folder, created 0700 when the tool creates it (a folder that already exists
keeps its mode: `--store /tmp` must not chmod /tmp), and in it the database, created 0600;
SQLite gives its `-wal` and `-shm` files the database's mode. An existing database keeps its
mode too: one made read-only stays read-only and is reported as such.

One writer at a time (a second waits up to `busy_timeout`, then fails with a clear message);
readers are never blocked by a writer. A load is one transaction: a crash, Ctrl-C, a full disk
or a read-only file in the middle leaves the previous index as it was, and the failure is a
named error, never a traceback.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from flatten import __version__
from flatten.userinfo import strip_credentials
from index.errors import StoreError
from index.postgres.url import is_postgres, refuse_other_urls, shown
from index.schema import latest, migrate, missing, newer, read_as_if_current

STORE_ENV = "DOCS_FLATTEN_STORE"
DEFAULT_STORE = ".docs-flatten"
DB_NAME = "index.sqlite"
# A store whose free pages (SQLite's freelist, what deleted rows leave) are at least this share
# of its pages is compacted after the write that freed them. VACUUM rewrites every live page to
# win back the free ones: past a quarter the file shrinks by at least that much for a rewrite of
# at most three times as much; below it, free pages are not waste but room (SQLite fills them
# before it grows the file), and the next load uses them.
SPARSE_SHARE = 0.25


def store_dir(store: str | os.PathLike[str] | None = None) -> Path:
    """--store, else $DOCS_FLATTEN_STORE, else ./.docs-flatten."""
    return Path(store or os.environ.get(STORE_ENV) or DEFAULT_STORE).expanduser()


def store_flag(directory: str | os.PathLike[str] | None) -> str:
    """` --store DIR` for a command a hint prints, unless DIR is the default store: the hint
    must work as printed (an environment variable's store is named too: a hint outlives it)."""
    if directory is None or str(directory) == DEFAULT_STORE:
        return ""
    return f" --store {shlex.quote(shown_argument(str(directory)))}"


def shown_argument(text: str) -> str:
    """A command-line argument as a message may print it: a store URL without its password,
    any other URL without credentials (`flatten.userinfo`)."""
    return shown(text) if is_postgres(text) else strip_credentials(text)


def build_hint(directory: str | os.PathLike[str] | None = None) -> str:
    """The commands that build the store at `directory` (placeholders in capitals)."""
    flag = store_flag(directory)
    return (f"build it with `docs-flatten ingest --root DIR{flag}` (or --repo URL, --url URL), "
            f"or load JSONL with `docs-flatten index FILE.jsonl --corpus NAME{flag}`")  # fmt: skip


def upgrade_hint(directory: str | os.PathLike[str] | None = None, does: str = "upgrades it") -> str:
    """What upgrades an older store at `directory`: any load (the commands as for a build);
    `does`: what else any load does to it (`compacts it`)."""
    flag = store_flag(directory)
    return (f"any load {does}, e.g. `docs-flatten ingest --root DIR{flag}` or "
            f"`docs-flatten index FILE.jsonl --corpus NAME{flag}`")  # fmt: skip


def store_target(store: str | os.PathLike[str] | None = None) -> str | os.PathLike[str] | None:
    """--store, else $DOCS_FLATTEN_STORE (a folder or a `postgresql://` URL), else None."""
    return store or os.environ.get(STORE_ENV) or None


def new_ids(db: sqlite3.Connection, table: str) -> Iterator[int]:
    """Ids for new rows of `table` (documents, chunks), handed out here so rows need no round
    trip for their id. SQLite: after the largest (one writer per store). PostgreSQL: blocks
    from the table's sequence, as other corpora may be writing alongside."""
    if not isinstance(db, sqlite3.Connection):
        from index.postgres.store import reserved_ids

        return reserved_ids(db, table)
    start = db.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {table}").fetchone()[0]
    return itertools.count(start)


@dataclass(frozen=True)
class Compaction:
    """What compacting a store did: its size before and after, in bytes (pages x page size,
    what the file holds once SQLite has checkpointed its write-ahead log)."""

    bytes_before: int
    bytes_after: int

    def summary(self) -> str:
        """The line a load's or a drop's summary adds."""
        return (f"compacted: {_mib(self.bytes_before)} -> {_mib(self.bytes_after)} "
                "(FTS5 optimize, VACUUM)")  # fmt: skip


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"


class Store:
    kind = "sqlite"

    def __init__(self, db: sqlite3.Connection, path: Path, readonly: bool) -> None:
        self.db = db
        self.path = path
        self.readonly = readonly

    @property
    def location(self) -> str:
        """The store as messages and `stats` name it."""
        return str(self.path.parent)

    def size(self) -> int:
        return self.path.stat().st_size

    @classmethod
    def open(
        cls,
        store: str | os.PathLike[str] | None = None,
        *,
        readonly: bool = False,
        busy_timeout: float = 60.0,
    ) -> Store:
        """The store at a folder, or on a PostgreSQL server when `store` (or the environment
        variable) is a `postgresql://` URL: same interface, same semantics."""
        target = store_target(store)
        refuse_other_urls(target)
        if is_postgres(target):
            from index.postgres.store import PostgresStore

            return PostgresStore.open(  # type: ignore[return-value]
                str(target),
                readonly=readonly,
                busy_timeout=busy_timeout,
                build_hint=build_hint(str(target)),
                upgrade_hint=upgrade_hint(str(target)),
            )
        directory = store_dir(store)
        path = directory / DB_NAME
        _refuse_links(path)
        _refuse_odd_shapes(directory, path)
        if readonly:
            if not path.exists():
                raise StoreError(
                    f"no index at {directory}",
                    reason="index-not-built",
                    hint=build_hint(directory),
                )
            target, uri = _readonly_uri(path), True
        else:
            _make_folder(directory)
            _make_database(path)
            target, uri = str(path), False
        try:
            db = _connect(target, busy_timeout, uri=uri)
        except sqlite3.DatabaseError as exc:
            raise store_fault(exc, directory, writing=not readonly) from exc
        store_obj = cls(db, path, readonly)
        try:
            store_obj._prepare()
        except BaseException:
            store_obj.close()
            raise
        return store_obj

    def _prepare(self) -> None:
        """Refuse a store of a newer schema; a writer upgrades an older one, a reader reads
        one that lacks only added columns (as their defaults) and refuses to guess otherwise."""
        directory = self.path.parent
        try:
            if not self.readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
            ahead, behind = newer(self.db), missing(self.db)
        except sqlite3.DatabaseError as exc:
            raise store_fault(exc, directory, writing=not self.readonly) from exc
        if ahead:
            raise StoreError(
                f"the index at {directory} was written by a newer docs-flatten (its schema "
                f"is at {ahead[-1]}); this is docs-flatten {__version__} (schema {latest()})",
                reason="index-newer",
                hint="use the newer docs-flatten with this store, or point --store elsewhere",
            )
        if not behind:
            return
        if self.readonly:
            if read_as_if_current(self.db, behind):
                return  # the previous version's store, read as it is; a writer upgrades it
            raise StoreError(
                f"the index at {directory} predates this version",
                reason="index-outdated",
                hint=upgrade_hint(directory),
            )
        with self.write():
            migrate(self.db)

    @contextmanager
    def write(self, corpus: str | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction; taken at the start, so a second writer waits here (SQLite
        has one writer per store: `corpus`, which the PostgreSQL store locks alone, is moot)."""
        directory = self.path.parent
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise store_fault(exc, directory, writing=True) from exc
        try:
            yield self.db
            self.db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            self._rollback()
            if not _errorname(exc).startswith(_FAULTS):
                raise  # no fault of the disk or the file: a bug, shown as one
            raise store_fault(exc, directory, writing=True) from exc
        except BaseException:
            self._rollback()
            raise

    def free_pages(self) -> tuple[int, int]:
        """(free pages, pages) of the database: what deleted rows left unused, of the whole."""
        free = self.db.execute("PRAGMA freelist_count").fetchone()[0]
        return free, self.db.execute("PRAGMA page_count").fetchone()[0]

    def sparse(self) -> bool:
        """Whether free pages are `SPARSE_SHARE` of the store or more (see `compact`)."""
        free, pages = self.free_pages()
        return pages > 0 and free >= SPARSE_SHARE * pages

    def compact(self) -> Compaction | None:
        """After a write that freed much of the store (a snapshot that removed most of a
        corpus, a drop): when `sparse`, FTS5's 'optimize' merges each text index into one
        segment (a deleted row stays in a segment as a tombstone until then), then VACUUM
        rewrites the file without its free pages. None when the store is not sparse.

        Run after the write's transaction has committed (VACUUM cannot run inside one), as the
        one writer: 'optimize' takes the write lock as any write does (a second writer waits
        as it waits for a load), and VACUUM is itself one write transaction. Readers are never
        blocked and never see a half-compacted store: in WAL mode VACUUM's pages go through the
        log like any commit, and a reader keeps the snapshot it began with. VACUUM is atomic:
        a crash or a kill in the middle leaves the store as the write left it. A stop (SIGTERM,
        Ctrl-C) does not cut it short: SQLite finishes it, then the stop is raised."""
        if self.readonly or not self.sparse():
            return None
        before = self._bytes()
        try:
            with self.write() as db:
                for (table,) in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND sql LIKE 'CREATE VIRTUAL TABLE % USING fts5(%' ORDER BY name"
                ).fetchall():
                    db.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
            self.db.execute("VACUUM")
            # The file shrinks when the log is copied back; a reader still on an older snapshot
            # holds that off until a later checkpoint (PASSIVE: never waits for readers).
            self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except (StoreError, sqlite3.DatabaseError) as exc:
            raise StoreError(
                f"compacting the index at {self.location} failed ({exc}); what was written "
                "before is committed, the store is as that write left it",
                reason="compact-failed",
                hint="free some space (VACUUM needs room for a copy of what remains); then "
                + upgrade_hint(self.location, "compacts it (a reload of the same input too)"),
            ) from exc
        return Compaction(before, self._bytes())

    def _bytes(self) -> int:
        page_size = self.db.execute("PRAGMA page_size").fetchone()[0]
        return self.free_pages()[1] * page_size

    def _rollback(self) -> None:
        # SQLite may have rolled back already (a full disk does); the WAL keeps the old
        # index either way, so a failed ROLLBACK changes nothing.
        if self.db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# What SQLite reports when the file, its folder or the disk fails us (not a bug of ours).
_FAULTS = (
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_READONLY",
    "SQLITE_FULL",
    "SQLITE_IOERR",
    "SQLITE_CORRUPT",
    "SQLITE_NOTADB",
    "SQLITE_CANTOPEN",
    "SQLITE_PERM",
)


def _errorname(error: sqlite3.Error) -> str:
    return getattr(error, "sqlite_errorname", None) or ""


def store_fault(error: sqlite3.DatabaseError, directory: Path, *, writing: bool) -> StoreError:
    """The named error for what SQLite reported."""
    code = _errorname(error)
    unchanged = "; the index is as it was before this run" if writing else ""
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(
            f"another docs-flatten run is writing to {directory}",
            reason="store-busy",
            hint="wait for it to finish, then run this again",
        )
    if code.startswith("SQLITE_READONLY"):
        return StoreError(
            f"the index at {directory} is read-only ({error}){unchanged}",
            reason="store-readonly",
            hint="make the folder and its index.sqlite writable by this user, "
            "or point --store elsewhere",
        )
    if code == "SQLITE_FULL":
        return StoreError(
            f"cannot write the index at {directory}: {error}{unchanged}",
            reason="disk-full",
            hint="free some space, then run this again",
        )
    if code.startswith("SQLITE_IOERR") and writing:
        return StoreError(
            f"cannot write the index at {directory}: {error} (a full disk or a file size "
            f"limit?){unchanged}",
            reason="store-write-failed",
            hint="check the disk, then run this again",
        )
    return StoreError(
        f"cannot open the index at {directory}: {error}",
        reason="store-unreadable",
        hint="if the file is damaged, remove the store and index again",
    )


def _refuse_links(path: Path) -> None:
    """The database and SQLite's files beside it are never reached through a link: in a shared
    folder (`--store /tmp/x`) a planted link would put the index, or read one, elsewhere."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"):
        if (path.parent / name).is_symlink():
            raise StoreError(
                f"refusing the store {path.parent}: {name} is a symbolic link",
                reason="store-link",
                hint="remove the link, or point --store at a folder of your own",
            )


def _refuse_odd_shapes(directory: Path, path: Path) -> None:
    """A store is a folder holding a file: a file given as the store, or a folder where its
    index.sqlite goes, is said plainly (a reader was told to build an index there, and SQLite
    answered a folder with a disk I/O error)."""
    if directory.exists() and not directory.is_dir():
        raise _not_a_folder(directory)
    if path.exists() and not path.is_file():
        raise StoreError(
            f"the store {directory} holds {path.name}, but it is not a file",
            reason="store-unreadable",
            hint="point --store at a store's folder, or at a path that does not exist yet",
        )


def _not_a_folder(directory: Path) -> StoreError:
    return StoreError(
        f"the store {directory} is not a folder",
        reason="store-not-a-folder",
        hint="point --store at a folder, or at a path that does not exist yet",
    )


def _readonly_uri(path: Path) -> str:
    """A read-only connection's URI. A store on a read-only volume (a Docker or Kubernetes
    mount) has no `-shm` file and no way to make one, which SQLite's WAL readers need: there,
    when no write-ahead log holds committed pages outside the database file, the file cannot
    change under us, and SQLite reads it as immutable."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    wal = path.with_name(path.name + "-wal")
    if os.access(path.parent, os.W_OK) or (wal.exists() and wal.stat().st_size > 0):
        return uri
    if path.with_name(path.name + "-shm").exists():
        return uri
    return uri + "&immutable=1"


def _make_folder(directory: Path) -> None:
    """The store's folder: created 0700, or used as it is."""
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            if not directory.is_dir():
                raise _not_a_folder(directory) from None
            return
        os.chmod(directory, 0o700)  # mkdir's mode passes through the umask
    except OSError as exc:
        raise StoreError(
            f"cannot create the store {directory}: {exc.strerror}", reason="store-unwritable"
        ) from exc


def _make_database(path: Path) -> None:
    """An empty database file, 0600, unless one is there (it keeps its mode)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise StoreError(
            f"cannot create the index {path}: {exc.strerror}", reason="store-unwritable"
        ) from exc
    try:
        os.fchmod(fd, 0o600)  # the umask may have taken bits away
    finally:
        os.close(fd)


def _connect(target: str, busy_timeout: float, *, uri: bool) -> sqlite3.Connection:
    db = sqlite3.connect(
        target, timeout=busy_timeout, uri=uri, isolation_level=None, check_same_thread=False
    )
    try:
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA cache_size=-65536")  # 64 MiB: FTS5 merges touch many pages
        db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
    except BaseException:
        db.close()
        raise
    return db
