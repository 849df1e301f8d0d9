"""Workers fold each chunk of files into one batch (records or lines, and the report's counts):
the output and the run report are what one process makes file by file, in the same order, down
to the order of the report's counters, skips and notes."""

from __future__ import annotations

from pathlib import Path

import pytest

from flatten import FlattenOptions, RunReport, flatten_root
from flatten.parallel import MIN_ITEMS_FOR_PROCESSES
from flatten.record import encode_line
from tests.conftest import write


def _tree_files() -> dict[str, str | bytes]:
    """Files that are kept, skipped, noted, redacted or hold placeholders, spread so chunks of
    every size mix them, with kinds and redaction rules first seen in different chunks."""
    files: dict[str, str | bytes] = {}
    for i in range(MIN_ITEMS_FOR_PROCESSES + 60):
        name = f"d{i // 37}/f{i:04}"
        if i % 11 == 0:
            files[name + ".bin"] = b"\x00\x01binary" * 4  # skipped: binary
        elif i % 13 == 0:
            files[name + ".md"] = "\n\n"  # skipped: empty
        elif i % 17 == 0:
            files[name + ".md"] = b"# Caf\xe9\n\nLatin-1 text\n"  # kept, with a note
        elif i % 19 == 0:
            files[name + ".yaml"] = f"db:\n  password: hunter{i}x\n"  # redacted
        elif i % 23 == 0:
            files[name + ".env.example"] = "API_KEY=${API_KEY}\npassword: changeme\n"
        elif i % 3 == 0:
            files[name + ".py"] = f'"""M{i}."""\n\n\ndef f{i}():\n    return {i}\n'
        elif i % 5 == 0:
            files[name + ".rst"] = f"Title {i}\n========\n\nBody {i}.\n"
        else:
            files[name + ".md"] = f"# Doc {i}\n\n## Part\n\nbody {i}\n"
    return files


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("batches")
    write(root, _tree_files())
    return root


def _facts(report: RunReport) -> tuple[object, ...]:
    return (report.files_total, report.files_done, report.files_kept, report.bytes_read,
            report.slices, list(report.slices_by_kind.items()), list(report.redactions.items()),
            list(report.placeholders.items()), report.skipped, report.notes)  # fmt: skip


@pytest.mark.parametrize("encode_as", [None, "native"])
def test_two_workers_give_one_process_bytes_and_report(tree, encode_as):
    runs = {}
    for workers in (1, 2):
        report = RunReport()
        items = list(flatten_root(tree, FlattenOptions(kind="auto", workers=workers), report,
                                  encode_as=encode_as))  # fmt: skip
        data = b"".join(item.data if encode_as else encode_line(item) for item in items)
        runs[workers] = data, _facts(report)
    (one, one_facts), (two, two_facts) = runs[1], runs[2]
    assert one == two and one_facts == two_facts
    # The tree mixes what a batch folds: skips, notes, redactions and placeholders.
    assert {s.reason for s in one_facts[-2]} >= {"binary", "empty"}
    assert one_facts[-1] and one_facts[6] and one_facts[7]


def test_progress_is_told_after_every_chunk_with_counts_that_only_grow(tree):
    seen: list[tuple[int, int]] = []
    report = RunReport()
    list(flatten_root(tree, FlattenOptions(kind="auto", workers=2), report,
                      on_progress=lambda r: seen.append((r.files_done, r.files_kept))))  # fmt: skip
    assert seen == sorted(seen) and seen[-1] == (report.files_total, report.files_kept)
    assert len(seen) < report.files_total  # told per chunk of files, not per file
