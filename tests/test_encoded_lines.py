"""Lines encoded in the workers (`encode_as`, what `flatten` writes) are the bytes the records
themselves encode to, in the same order, with the same run report, in every layout."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from flatten import FlattenOptions, RunReport, UsageError, flatten_root
from flatten.record import PROFILES, encode_line, end_mark, json_line
from flatten.writer import EncodedLines, Sink, _write
from tests.conftest import FIXTURES, write

# Past flatten.parallel.MIN_ITEMS_FOR_PROCESSES, so two workers really fork.
_FILES = {
    **{
        f"docs/p{i:03}.md": f"# Page {i}\n\nSee `run()`.\n\n## Part\n\nbody {i}\n"
        for i in range(120)
    },
    **{
        f"src/m{i:03}.py": f'"""Module {i}."""\n\n\ndef f{i}(x):\n    return x + {i}\n'
        for i in range(90)
    },
    **{f"conf/c{i:03}.yaml": f"name: c{i}\nvalues:\n  - {i}\n" for i in range(30)},
    "docs/ünïcode.md": "# Ünïcode\n\n\u00e9t\u00e9 \u2603 \U0001f600\n",
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("encoded")
    write(root, _FILES)
    shutil.copytree(FIXTURES / "docs-tree", root / "fixture")
    return root


def _report_facts(report: RunReport) -> tuple[object, ...]:
    return (report.files_kept, report.slices, list(report.slices_by_kind.items()),
            report.redactions, report.skipped, report.notes)  # fmt: skip


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("layout", sorted(PROFILES))
def test_lines_encoded_in_the_workers_are_the_records_own_lines(tree, layout, workers):
    options = FlattenOptions(kind="auto", workers=workers)
    plain_report, encoded_report = RunReport(), RunReport()
    records = list(flatten_root(tree, options, plain_report))
    encoded = list(flatten_root(tree, options, encoded_report, encode_as=layout))

    assert all(type(item) is EncodedLines for item in encoded)
    assert b"".join(item.data for item in encoded) == b"".join(
        encode_line(record, layout) for record in records
    )
    assert sum(item.count for item in encoded) == len(records)
    assert _report_facts(encoded_report) == _report_facts(plain_report)


class _Stream(io.BytesIO):
    """An in-memory pipe: the writer ends what it writes to one with the closing mark."""

    def fileno(self) -> int:
        raise OSError("not a real stream")


def test_the_writer_copies_encoded_lines_beside_records_and_counts_them(tree, monkeypatch):
    records = list(flatten_root(tree, FlattenOptions(kind="auto", workers=1)))
    first, rest = records[:3], records[3:]
    block = EncodedLines(b"".join(encode_line(r) for r in rest), len(rest))
    monkeypatch.setattr("flatten.writer._is_stream", lambda handle: True)

    out = _Stream()
    count = _write([*first, block], Sink(out, "pipe"), PROFILES["native"], marked=True)

    expected = b"".join(encode_line(r) for r in records) + json_line(end_mark(len(records)))
    assert count == len(records) and out.getvalue() == expected


def test_an_unknown_layout_is_a_usage_error_before_any_file_is_read(tree):
    with pytest.raises(UsageError) as caught:
        next(flatten_root(tree, FlattenOptions(workers=2), encode_as="parquet"))
    assert caught.value.reason == "bad-layout" and "native" in caught.value.message
