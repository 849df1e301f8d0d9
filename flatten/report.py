"""The run report: what was seen, kept and skipped (with reasons), and what came out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flatten.jsonform import to_json
from flatten.record import Provenance, Record
from flatten.sources.base import Skip

# The summary's dataclasses load when a run writes its report (--report) or fails.
if TYPE_CHECKING:
    from flatten.summary import ErrorInfo


@dataclass
class RunReport:
    source: str = ""
    kind: str = "docs"
    listing: str = ""  # how files were listed: "git ls-files", "walk" or "crawl"
    provenance: Provenance = field(default_factory=Provenance)
    files_kept: int = 0
    files_total: int = 0  # candidates after path rules, known once listing is done
    files_done: int = 0
    bytes_read: int = 0
    slices: int = 0
    slices_by_kind: Counter[str] = field(default_factory=Counter)
    skipped: list[Skip] = field(default_factory=list)
    redactions: Counter[str] = field(default_factory=Counter)
    placeholders: Counter[str] = field(default_factory=Counter)  # stand-ins kept, not redacted
    notes: list[tuple[str, str]] = field(default_factory=list)  # (path, note): kept, with a caveat
    seconds: float = 0.0
    error: ErrorInfo | None = None  # set when the run failed
    crawl: dict[str, Any] | None = None  # for --url: pages fetched, frontier, truncated, ...
    expanded: tuple[str, str] | None = None  # (shorthand, URL): `--repo owner/repo` expanded
    dirty: bool | None = None  # a work tree with uncommitted changes below the root (None: no git)
    pack: dict[str, Any] | None = None  # for `pack`: style, tokens, tokenizer, tokens per file

    @property
    def partial(self) -> dict[str, str] | None:
        """{reason, detail} when the run saw only part of its source (a crawl cut by a bound or
        that lost pages to errors): not a snapshot, so a load of it must not remove documents."""
        return self.crawl.get("partial") if self.crawl else None

    def fail(self, exc: BaseException) -> None:
        """Record why the run ended early. Any exception counts: a failed run never says ok."""
        from flatten.summary import error_info

        self.error = error_info(exc)

    def skip(self, entry: Skip) -> None:
        self.skipped.append(entry)

    def keep(
        self,
        records: Sequence[Record],
        redactions: Counter[str],
        placeholders: Counter[str] | None = None,
    ) -> None:
        """Count a kept file (or page), its records, its redactions and kept placeholders."""
        self.keep_counted(Counter(record.kind for record in records), redactions, placeholders)

    def keep_counted(
        self,
        kinds: Counter[str],
        redactions: Counter[str],
        placeholders: Counter[str] | None = None,
        *,
        files: int = 1,
    ) -> None:
        """`keep` for `files` files whose records (and redactions) were counted where they were
        made (a worker that sends their encoded lines, not the records), summed."""
        self.files_kept += files
        self.slices += sum(kinds.values())
        self.redactions.update(redactions)
        self.placeholders.update(placeholders or {})
        self.slices_by_kind.update(kinds)

    @property
    def skipped_by_reason(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for entry in self.skipped:
            counts[entry.reason] += entry.files
        return counts

    @property
    def files_skipped(self) -> int:
        return sum(entry.files for entry in self.skipped)

    @property
    def files_seen(self) -> int:
        return self.files_kept + self.files_skipped

    def to_dict(self, command: str = "flatten") -> dict[str, Any]:
        """The run summary (schema 1, `flatten.summary`) of this run alone, as JSON data."""
        from flatten.summary import Summary

        summary = Summary(command=command, source=self.source or None)
        summary.add_run(self)
        return to_json(summary)  # type: ignore[no-any-return]

    def summary(self) -> str:
        """A few lines for stderr at the end of a run."""

        def counts(counter: Counter[str]) -> str:
            return ", ".join(f"{k} {v:,}" for k, v in counter.most_common())

        lines: list[str] = []
        if self.expanded:
            lines.append(f"source expanded: {self.expanded[0]} -> {self.expanded[1]}")
        lines += [
            f"files: {self.files_seen:,} seen, {self.files_kept:,} kept, "
            f"{self.files_skipped:,} skipped"
            + (f" ({counts(self.skipped_by_reason)})" if self.skipped else ""),
            f"slices: {self.slices:,}"
            + (f" ({counts(self.slices_by_kind)})" if self.slices_by_kind else ""),
            f"read: {self.bytes_read / 1e6:,.1f} MB in {self.seconds:.2f} s",
        ]
        dirs = [s for s in self.skipped if s.directory]
        if dirs:
            shown = ", ".join(f"{s.path} ({s.reason})" for s in dirs[:5])
            more = f" and {len(dirs) - 5} more" if len(dirs) > 5 else ""
            lines.append(f"skipped directories: {shown}{more}")
        if self.crawl:
            lines.append(
                f"crawl: {self.crawl['pagesFetched']:,} pages fetched, "
                f"{self.crawl['frontier']:,} left in the frontier"
                + (", TRUNCATED by a bound (see --max-pages, --max-depth)"
                   if self.crawl["truncated"] else "")
            )  # fmt: skip
            lines.extend(f"crawl: {n['note']} ({n['url']})" for n in self.crawl.get("notes", []))
            if self.partial:
                lines.append(
                    f"crawl: PARTIAL ({self.partial['reason']}: "
                    f"{self.partial['detail']}): loads add and update, remove nothing"
                )
            elif deeper := self.crawl["skippedByReason"].get("depth", 0):
                # Not partial: the depth bound is the crawl's scope, as --scope is. Said, since
                # a load then removes the pages an earlier, deeper crawl indexed.
                lines.append(
                    f"crawl: {deeper:,} linked pages past --max-depth not fetched: a load "
                    "removes pages indexed from deeper (raise --max-depth to keep them)"
                )

            if self.crawl.get("scopeHint"):
                refused = self.crawl["skippedByReason"].get("scope", 0)
                lines.append(
                    f"crawl: the scope {self.crawl['scope']} refused {refused:,} pages of this "
                    f"site; --scope {self.crawl['scopeHint']} would admit "
                    f"{self.crawl['scopeHintAdmits']:,} of them"
                )
        if self.redactions:
            lines.append(f"secrets redacted: {counts(self.redactions)}")
        if self.placeholders:
            lines.append(f"placeholders kept (not secrets): {counts(self.placeholders)}")
        if self.notes:
            lines.append(f"kept with caveats: {len(self.notes)} file(s), see --report")
        return "\n".join(lines)
