"""A shard's manifest: which corpora its JSONL files hold, and what each was made from.

`ingest --out DIR` writes one JSONL file per source and `manifest-<i>-of-<n>.json` beside them
(`index --manifests DIR` reads every manifest below DIR). Deterministic bytes: entries sorted
by corpus, keys in a fixed order, no timestamps, so an unchanged shard rewrites the same file.

    {"schema": 1, "shard": "1/4", "sources": [
      {"corpus": "httpx-docs", "file": "httpx-docs-1a2b3c4d.jsonl", "kind": "repo",
       "source": "https://github.com/encode/httpx", "ref": "0.28.1", "commit": "<sha>",
       "settings": "<sha256 of what shapes the records>", "records": 359,
       "sha256": "<sha256 of the JSONL file>"}]}

The same `SourceState` (an entry without its corpus and file) is what the store keeps of each
corpus's last load, so a source whose state is unchanged is neither cloned nor loaded again.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from flatten.errors import FlattenError, UsageError
from flatten.hashing import sha256_hex
from flatten.writer import OutputFile

SCHEMA = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class ManifestError(FlattenError):
    """A manifest, or a JSONL file it names, cannot be used (the reason says why)."""


@dataclass(frozen=True)
class SourceState:
    """What one corpus was made from: enough to tell that a new run would make the same."""

    kind: str  # repo, root or url
    source: str  # the URL or path as configured
    ref: str | None  # the ref the records name (the default branch's name when none was given)
    commit: str | None
    settings: str  # `settings_digest` of the source's settings
    records: int
    sha256: str  # of the JSONL file

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> SourceState | None:
        """The state stored as `to_json` wrote it; None for anything else (a store of an older
        version, or a corpus loaded another way)."""
        try:
            return cls(**json.loads(text or ""))
        except (ValueError, TypeError):
            return None


@dataclass(frozen=True)
class Entry:
    corpus: str
    file: str  # the JSONL file's name, beside the manifest
    state: SourceState


@dataclass(frozen=True)
class Manifest:
    shard: str  # "1/4"; "1/1" for a run without --shard
    entries: tuple[Entry, ...]
    path: Path | None = None  # where it was read from

    def file_of(self, entry: Entry) -> Path:
        return (self.path.parent if self.path else Path()) / entry.file


def settings_digest(settings: dict[str, Any]) -> str:
    """sha256 of the settings that shape a source's records (JSON-able values), key order aside."""
    return sha256_hex(json.dumps(settings, sort_keys=True, default=str, separators=(",", ":")))


def jsonl_name(corpus: str) -> str:
    """A file name for a corpus's JSONL: readable, and unique even where two names differ only
    in characters a file name cannot hold (`a/b` and `a_b`)."""
    readable = _UNSAFE.sub("_", corpus).strip("._")[:80] or "corpus"
    return f"{readable}-{sha256_hex(corpus)[:8]}.jsonl"


def manifest_name(shard: str) -> str:
    index, _, count = shard.partition("/")
    return f"manifest-{index}-of-{count}.json"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def encode(manifest: Manifest) -> bytes:
    entries = [{"corpus": e.corpus, "file": e.file, **asdict(e.state)}
               for e in sorted(manifest.entries, key=lambda e: e.corpus)]  # fmt: skip
    data = {"schema": SCHEMA, "shard": manifest.shard, "sources": entries}
    return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def write_manifest(directory: Path, manifest: Manifest) -> Path:
    """Write `manifest` into `directory` (whole or not at all); return its path."""
    path = directory / manifest_name(manifest.shard)
    with OutputFile(path) as sink:
        sink.write(encode(manifest))
    return path


def read_manifest(path: Path) -> Manifest:
    """The manifest at `path`, or `ManifestError` (reason `bad-manifest`) naming what is wrong."""

    def bad(why: str) -> ManifestError:
        hint = "write it again with `docs-flatten ingest --out DIR`"
        return ManifestError(f"{path}: {why}", reason="bad-manifest", hint=hint)

    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise bad(f"cannot read it: {exc.strerror}") from exc
    except ValueError as exc:
        raise bad(f"not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise bad(f"not a docs-flatten manifest of schema {SCHEMA}")
    entries = []
    for n, raw in enumerate(data.get("sources") or []):
        try:
            fields = dict(raw)
            corpus, file = str(fields.pop("corpus")), str(fields.pop("file"))
            state = SourceState(**fields)
        except (TypeError, ValueError, KeyError) as exc:
            raise bad(f"sources[{n}] is not a manifest entry ({exc})") from None
        if Path(file).name != file or not file.endswith(".jsonl"):
            raise bad(f"sources[{n}].file must be a .jsonl file beside the manifest: {file!r}")
        entries.append(Entry(corpus, file, state))
    return Manifest(str(data.get("shard", "")), tuple(entries), path)


def find_manifests(directory: Path) -> list[Path]:
    """Every `manifest-*.json` below `directory` (CI artifacts download into one folder each or
    all into one), in path order; `UsageError` when the folder or any manifest is missing."""
    if not directory.is_dir():
        raise UsageError(f"--manifests {directory}: no such directory", reason="manifests-missing",
                         hint="download the shards' artifacts there first")  # fmt: skip
    found = sorted(p for p in directory.rglob("manifest-*-of-*.json") if p.is_file())
    if not found:
        raise UsageError(
            f"--manifests {directory}: no manifest-*-of-*.json below it",
            reason="manifests-missing",
            hint="each shard writes one with `docs-flatten ingest --shard i/n --out DIR`",
        )
    return found


def verify(manifest: Manifest, entry: Entry) -> Path:
    """The entry's JSONL file, once its sha256 matches the manifest's; `ManifestError` naming
    the corpus otherwise (reason `jsonl-missing` or `checksum-mismatch`)."""
    path = manifest.file_of(entry)
    try:
        actual = file_sha256(path)
    except OSError as exc:
        raise ManifestError(f"corpus {entry.corpus!r}: cannot read {path}: {exc.strerror}",
                            reason="jsonl-missing") from exc  # fmt: skip
    if actual != entry.state.sha256:
        raise ManifestError(
            f"corpus {entry.corpus!r}: {path} does not match its manifest (sha256 {actual[:12]}, "
            f"manifest says {entry.state.sha256[:12]}): cut short or changed since the shard "
            "wrote it, so it was not loaded",
            reason="checksum-mismatch",
            hint="run that shard again and download its artifact whole",
        )
    return path
