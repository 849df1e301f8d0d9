"""A memory-mapped copy of the store's vectors beside it (`vectors.f32`), so a new process scores
its first query without reading every vector out of SQLite.

The store stays the one source of truth: the sidecar is a cache of it, checked against it each
time it is opened, and rebuilt from it when they disagree. It names what it copied (a digest of
the store's vector identity and of every vector's id and key) and holds the rows (in id order, as
the store reads them), their keys, and a checksum of both; a few rows are also compared with the
store's own bytes (a re-embedding under the same identity and keys changes every vector). A
missing, stale, truncated or damaged sidecar is rebuilt; one that cannot be written (a read-only
store folder, a full disk) is skipped, and the vectors are read from SQLite as before. A new
sidecar is written to a temporary file and renamed over the old one, so a reader maps either the
old file or the new, never a torn one; a temporary file a killed writer left behind is removed
by the next open (`remove_stale_temporaries`).

Layout: magic, header length (uint32), the header (JSON), zeros to the next 4 KiB; the rows
(count x dimension little-endian float32); the keys, one per line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import sqlite3
import struct
import tempfile
import time
from pathlib import Path

import numpy as np

from flatten.leftovers import STALE_SECONDS, may_run
from index.vectors.storage import DTYPE, Matrix

SIDECAR_NAME = "vectors.f32"
MAGIC = b"DFVECS01"
ALIGN = 4096  # rows start on a page boundary
SAMPLES = 16  # rows compared with the store's bytes on each open


def sidecar_path(store_file: Path) -> Path:
    return store_file.parent / SIDECAR_NAME


def load_matrix(db: sqlite3.Connection, store_file: Path) -> Matrix:
    """The store's vectors, from the sidecar when it matches the store, else from SQLite (and
    the sidecar rewritten from them when the folder allows). One read transaction: one
    consistent snapshot of the store."""
    in_transaction = db.in_transaction
    if not in_transaction:
        db.execute("BEGIN")
    try:
        remove_stale_temporaries(store_file.parent)
        count, state = store_state(db)
        if not count:
            return Matrix([], np.zeros((0, 0), DTYPE), {})
        path = sidecar_path(store_file)
        matrix = read_sidecar(path, count, state, db)
        if matrix is None:
            matrix = Matrix.load(db)
            write_sidecar(path, state, matrix)
        return matrix
    finally:
        if not in_transaction:
            db.execute("COMMIT")


def refresh(db: sqlite3.Connection, store_file: Path) -> None:
    """Make the sidecar match the store now (after a writer changed the vectors), so the next
    process's first query finds it ready."""
    load_matrix(db, store_file)


def store_state(db: sqlite3.Connection) -> tuple[int, str]:
    """How many vectors the store holds, and a digest of its vector identity and of every
    vector's (id, key): read as one string from the key index (a few MB), not from the table
    that holds the vectors."""
    identity = db.execute(
        "SELECT model, dimension, query_prefix, document_prefix, created_at FROM vector_identity"
    ).fetchone()
    count, pairs = db.execute(
        "SELECT count(*), group_concat(id || ' ' || key, ' ') FROM vectors"
    ).fetchone()
    return count, hashlib.sha256(f"{json.dumps(identity)}\n{pairs or ''}".encode()).hexdigest()


def checksum(vectors: np.ndarray, keys: bytes) -> str:
    """The rows' 32-bit words summed, and each row's sum weighted by its place (any changed word,
    and rows swapped, show: one pass at memory speed), and a hash of the keys. It finds damage;
    the store, not this, is what is trusted."""
    words = vectors.view("<u4").reshape(len(vectors), -1)
    rows = words.sum(axis=1, dtype=np.uint64)
    weights = np.arange(1, len(rows) + 1, dtype=np.uint64)
    plain, placed = int(rows.sum(dtype=np.uint64)), int((rows * weights).sum(dtype=np.uint64))
    return f"{plain:x}-{placed:x}-{hashlib.blake2b(keys, digest_size=16).hexdigest()}"


def _header(state: str, vectors: np.ndarray, keys: bytes) -> bytes:
    fields = {
        "count": int(vectors.shape[0]),
        "dimension": int(vectors.shape[1]),
        "store": state,
        "checksum": checksum(vectors, keys),
    }
    body = json.dumps(fields, sort_keys=True).encode()
    head = MAGIC + struct.pack("<I", len(body)) + body
    return head + b"\0" * (-len(head) % ALIGN)


def write_sidecar(path: Path, state: str, matrix: Matrix) -> bool:
    """Write the sidecar through a temporary file renamed over the old one; False (and no file
    left behind) when the folder or the disk does not allow it. Not fsynced: a file a crash left
    damaged fails its checksum at the next open and is rebuilt."""
    keys = "\n".join(matrix.keys).encode()
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(os.getpid()), suffix=".tmp",
                                   dir=path.parent)  # fmt: skip
        with os.fdopen(fd, "wb") as out:
            out.write(_header(state, matrix.vectors, keys))
            for start in range(0, len(matrix.keys), 4096):  # no second copy of all rows
                block = matrix.vectors[start : start + 4096]
                out.write(np.ascontiguousarray(block, dtype=DTYPE).tobytes())
            out.write(keys)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False


def _temporary_prefix(pid: int) -> str:
    """Where a writer's temporary file starts: its pid says whether the writer still runs."""
    return f".{SIDECAR_NAME}-{pid}-"


def remove_stale_temporaries(folder: Path, now: float | None = None) -> list[Path]:
    """Remove the temporary files of sidecar writers that died mid-write (killed, or a machine
    that stopped): those whose writer's pid no longer runs here, and those nobody has written to
    for `STALE_SECONDS`. Returns what was removed. Harmless even if the writer still runs (a
    pid of another machine): its rename then fails, and it skips the sidecar as for a full
    disk; a folder that allows no removal keeps them."""
    now = time.time() if now is None else now
    removed = []
    for candidate in folder.glob(f".{SIDECAR_NAME}-*.tmp"):
        pid = candidate.name.removeprefix(f".{SIDECAR_NAME}-").split("-")[0]
        try:
            stale = now - candidate.stat().st_mtime > STALE_SECONDS
            if stale or (pid.isdigit() and not may_run(int(pid))):
                candidate.unlink()
                removed.append(candidate)
        except OSError:  # gone already (another reader removed it), or not ours to remove
            continue
    return removed


def read_sidecar(path: Path, count: int, state: str, db: sqlite3.Connection) -> Matrix | None:
    """The sidecar as a matrix (its rows memory-mapped) when it is whole and copies the store
    state `state` of `count` vectors; else None."""
    try:
        with open(path, "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # missing, unreadable, or empty (mmap refuses length 0)
        return None
    try:
        fields, offset = _read_header(mapped)
        if fields["count"] != count or fields["store"] != state:
            return None
        end = offset + count * int(fields["dimension"]) * DTYPE.itemsize
        if end > len(mapped):
            return None  # truncated
        vectors = np.frombuffer(mapped, DTYPE, (end - offset) // DTYPE.itemsize, offset)
        vectors = vectors.reshape(count, -1)
        keys_block = mapped[end:]
        if checksum(vectors, keys_block) != fields["checksum"]:
            return None
        keys = keys_block.decode().split("\n")
        if len(keys) != count or not _samples_match(db, keys, vectors):
            return None
    except (ValueError, KeyError, TypeError, struct.error):
        return None
    return Matrix(keys, vectors, {key: i for i, key in enumerate(keys)})


def _read_header(mapped: mmap.mmap) -> tuple[dict[str, int | str], int]:
    if mapped[: len(MAGIC)] != MAGIC:
        raise ValueError("not a vector sidecar")
    (length,) = struct.unpack_from("<I", mapped, len(MAGIC))
    start = len(MAGIC) + 4
    if start + length > len(mapped):
        raise ValueError("header past the end")
    fields = json.loads(mapped[start : start + length])
    if not isinstance(fields, dict):
        raise ValueError("header is not an object")
    return fields, start + length + (-(start + length) % ALIGN)


def _samples_match(db: sqlite3.Connection, keys: list[str], vectors: np.ndarray) -> bool:
    """A few rows, spread over the sidecar, equal to the store's bytes for the same keys."""
    count = len(keys)
    rows = sorted({round(i * (count - 1) / max(SAMPLES - 1, 1)) for i in range(SAMPLES)})
    for row in rows:
        stored = db.execute("SELECT embedding FROM vectors WHERE key = ?", (keys[row],))
        found = stored.fetchone()
        if found is None or found[0] != vectors[row].tobytes():
            return False
    return True
