"""Loading hostile JSONL: every bad line is a malformed line with its number and the rest loads;
a piped stream is a snapshot only when the writer's closing mark ends it; inputs a user gives
(corpus names, queries, judgments, config) are checked as usage errors."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flatten.errors import UsageError
from flatten.record import INT_MAX, encode_line, end_mark, error_mark
from flatten.writer import write_jsonl
from index.documents import show, sources
from index.loader import EmptyInput, StreamError, load_files, load_records
from index.store import Store
from tests.conftest import assert_clean_failure, jsonl, record, run_cli, write

GOOD = record("good.md", 1, "a good line about otters")
GOOD2 = record("good.md", 2, "another good line")
DEEP = "[" * 100_000 + "]" * 100_000


def loaded_sources(store: Store) -> set[str]:
    return {s.source for s in sources(store)[0]}


# Each would stop the whole load on the old loader (UnicodeEncodeError, RecursionError,
# OverflowError, ValueError): the same bad value in our own layout (placed from its head, parsed
# in pass 2) and in a foreign one (parsed in pass 1).
HOSTILE = {
    "lone surrogate": '"content": "a \\ud800 b"',
    "lone surrogate in a key": '"content": "x", "\\udc00": 1',
    "deep nesting in an unused field": f'"content": "x", "unused": {DEEP}',
    "endLine past 64 bits": '"content": "x", "endLine": 99999999999999999999999',
    "startLine below 64 bits": '"content": "x", "startLine": -99999999999999999999999',
    "ordinal past 64 bits as text": '"content": "x", "ordinal": "99999999999999999999999"',
    "redactions of 5,000 digits": '"content": "x", "redactions": ' + "9" * 5000,
    "a digit that is not ASCII": '"content": "x", "startLine": "²"',
}


@pytest.mark.parametrize("layout", ["native", "foreign"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_value_is_a_malformed_line_and_the_rest_loads(store, tmp_path, name, layout):
    head = '"id": "bad.md#1", "source": "bad.md", ' if layout == "native" else '"source": "b.md", '
    bad = "{" + head + HOSTILE[name] + "}"
    report = load_files(store, [jsonl(tmp_path / "a.jsonl", [GOOD, bad, GOOD2])],
                        "docs")  # fmt: skip
    assert [line for _, line, _ in report.malformed] == [2], report.malformed
    assert loaded_sources(store) == {"good.md"} and report.chunks == 2


def test_the_cli_lists_hostile_lines_and_loads_the_rest(tmp_path):
    lines = [GOOD, '{"source": "s.md", "content": "a \\ud800"}', '{"text": "x", "n": ' + DEEP + "}",
             '{"source": "i.md", "content": "x", "endLine": 99999999999999999999999}']  # fmt: skip
    result = run_cli(
        "index",
        jsonl(tmp_path / "h.jsonl", lines),
        "--corpus",
        "h",
        "--store",
        tmp_path / "s",
        "--json",
    )
    assert result.code == 0, result.stderr
    report = json.loads(result.stdout)
    load = report["load"]
    assert [m["line"] for m in load["malformedLines"]] == [2, 3, 4] and load["added"] == 1
    reasons = " ".join(m["reason"] for m in load["malformedLines"])
    assert "surrogate" in reasons and "nested too deeply" in reasons and "out of range" in reasons


@pytest.mark.parametrize("digits", [23, 5000])
def test_show_with_an_ordinal_past_64_bits_finds_nothing_cleanly(tmp_path, digits):
    good = jsonl(tmp_path / "a.jsonl", [GOOD])
    assert run_cli("index", good, "--corpus", "a", "--store", tmp_path / "s").code == 0
    result = run_cli("show", "x.md#" + "9" * digits, "--store", tmp_path / "s")
    assert result.code in (1, 2) and "Traceback" not in result.stderr, result.stderr


def test_show_finds_the_largest_ordinal(store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", [record("x.md", INT_MAX, "the last one")])], "d")
    assert show(store, f"x.md#{INT_MAX}").content == "the last one"


# The property suite: any JSON value or any bytes on a line never stops a load.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)  # fmt: skip
field_names = st.sampled_from(["id", "id_", "_id", "source", "title", "content", "text",
                               "page_content", "ordinal", "startLine", "endLine", "section",
                               "redactions", "metadata", "meta", "docTitle", "url"])  # fmt: skip
record_like = st.dictionaries(field_names, json_values, max_size=6)
hostile_lines = st.sampled_from(
    [("{" + '"source": "h.md", ' + v + "}").encode() for v in HOSTILE.values()]
    + [b'{"source": "h.md", "content": "caf\xe9"}', b"\x00", b'{"content": "a\x00b"}',
       b'{"id":"h.md#1","source":"h.md","content":"a \\ud800"}',
       b'{"docsFlatten":{"end":"nope"}}', b"\xff\xfe{", b"[" * 5000]
)  # fmt: skip
any_line = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    record_like.map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")),
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b" ")),
    st.just(b'{"text": "' + b"long " * 4_000 + b'"}'),
)  # fmt: skip
# Printable: shown content has control characters stripped.
good_lines = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=50
).filter(str.strip)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(
        st.tuples(st.sampled_from(["good", "hostile", "any"]), good_lines, hostile_lines, any_line),
        min_size=1,
        max_size=12,
    )
)
def test_loading_any_lines_never_raises_and_counts_every_bad_line(lines):
    written: list[bytes] = []
    good: dict[int, str] = {}
    hostile: set[int] = set()
    for number, (kind, content, bad, anything) in enumerate(lines, start=1):
        if kind == "good":
            good[number] = content
            written.append(json.dumps(record(f"good/{number}.md", 1, content)).encode())
        else:
            (hostile.add(number) if kind == "hostile" else None)
            written.append(bad if kind == "hostile" else anything)
    with tempfile.TemporaryDirectory() as tmp:
        path = jsonl(Path(tmp) / "any.jsonl", written)
        with Store.open(Path(tmp) / "store") as store:
            try:
                report = load_files(store, [path], "any")
            except EmptyInput:  # no record read: refused, nothing written
                assert not good
                assert store.db.execute("SELECT count(*) FROM corpora").fetchone()[0] == 0
                return
            malformed = {line for _, line, _ in report.malformed}
            assert report.lines == len(written)
            assert hostile <= malformed and not malformed & set(good)
            assert all(number <= len(written) for number in malformed)
            for number, content in good.items():
                assert show(store, f"good/{number}.md#1").content == content


# A piped stream is a snapshot only with the closing mark.
DOCS = [record("a.md", 1, "alpha otters"), record("b.md", 1, "beta otters")]


def test_a_stream_without_the_closing_mark_loads_nothing_and_removes_nothing(store, tmp_path):
    load_files(store, [jsonl(tmp_path / "full.jsonl", DOCS)], "d")
    cut = jsonl(tmp_path / "cut.jsonl", DOCS[:1])
    with pytest.raises(StreamError) as refused:
        load_files(store, [cut], "d", streams=[cut])
    assert refused.value.reason == "stream-incomplete"
    assert loaded_sources(store) == {"a.md", "b.md"}
    partial = load_files(store, [cut], "d", streams=[cut], partial=True)  # asked for: no removals
    assert partial.removed == 0 and loaded_sources(store) == {"a.md", "b.md"}


def test_a_stream_with_the_closing_mark_is_a_snapshot_and_the_mark_is_no_malformed_line(
    store, tmp_path
):
    load_files(store, [jsonl(tmp_path / "full.jsonl", DOCS)], "d")
    whole = jsonl(tmp_path / "whole.jsonl", [DOCS[0], end_mark(1)])
    report = load_files(store, [whole], "d", streams=[whole])
    assert (report.removed, report.malformed) == (1, []) and loaded_sources(store) == {"a.md"}


@pytest.mark.parametrize(
    "lines",
    [[DOCS[0], error_mark("disk-full")], [DOCS[0], DOCS[1], end_mark(1)],
     [DOCS[0], end_mark(1), DOCS[1]]],
    ids=["error mark", "miscounted", "records after the mark"],
)  # fmt: skip
def test_a_failed_or_spliced_stream_is_never_committed(store, tmp_path, lines):
    load_files(store, [jsonl(tmp_path / "full.jsonl", DOCS)], "d")
    before = {s.source: s.indexed_at for s in sources(store)[0]}
    bad = jsonl(tmp_path / "bad.jsonl", lines)
    with pytest.raises(StreamError):
        load_files(store, [bad], "d", streams=[bad])
    assert {s.source: s.indexed_at for s in sources(store)[0]} == before


def test_an_error_mark_in_a_file_is_refused_too(store, tmp_path):
    saved = jsonl(tmp_path / "tee.jsonl", [DOCS[0], error_mark("SourceError")])
    with pytest.raises(StreamError, match="error mark"):
        load_files(store, [saved], "d", partial=True)
    assert loaded_sources(store) == set()


def test_the_writer_frames_a_pipe_with_the_closing_or_the_error_mark(tmp_path):
    def failing():
        yield from ({"id": "a.md#1", "source": "a.md", "content": "x"},) * 2
        raise UsageError("boom", reason="bad-thing")

    for records, tail in ((iter(DOCS), end_mark(2)), (failing(), error_mark("bad-thing"))):
        read, write_end = os.pipe()
        out: list[bytes] = []
        reader = threading.Thread(target=lambda r=read, o=out: o.append(os.fdopen(r, "rb").read()))
        reader.start()
        with os.fdopen(write_end, "wb") as pipe, pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, "stdout", type("S", (), {"buffer": pipe})())
            with contextlib.suppress(UsageError):
                write_jsonl(records, None, lambda d: d, marked=True)
        reader.join(timeout=30)
        lines = out[0].splitlines()
        assert len(lines) == 3 and json.loads(lines[-1]) == tail
    file_out = tmp_path / "o.jsonl"
    write_jsonl(iter(DOCS), file_out, lambda d: d, marked=True)  # a file: no mark
    assert file_out.read_bytes() == b"".join(encode_line(d) for d in DOCS)


def pipe_into_index(producer: list[str], store: Path, *extra: str) -> tuple[int, str]:
    """`producer | docs-flatten index - --corpus d`, through a real OS pipe."""
    feed = subprocess.Popen(producer, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert feed.stdout is not None
    index = subprocess.run(
        [sys.executable, "-m", "flatten", "index", "-", "--corpus", "d", "--store", str(store),
         *extra], stdin=feed.stdout, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    feed.stdout.close()
    feed.wait(timeout=120)
    return index.returncode, index.stderr


def indexed(store: Path) -> list[str]:
    listed = run_cli("sources", "--store", store, "--json")
    return sorted(s["source"] for s in json.loads(listed.stdout)["sources"])


FLATTEN = [sys.executable, "-m", "flatten", "flatten", "-q"]


def test_flatten_piped_into_index_is_a_snapshot_and_a_failed_producer_removes_nothing(tmp_path):
    store = tmp_path / "store"
    write(tmp_path / "docs", {"a.md": "# A\notters\n", "b.md": "# B\nbeavers\n"})
    code, stderr = pipe_into_index([*FLATTEN, "--root", str(tmp_path / "docs")], store)
    assert code == 0, stderr
    assert indexed(store) == ["a.md", "b.md"]
    write(tmp_path / "code", {"main.py": "print(1)\n"})  # --kind docs: the run fails at its end
    producers = [
        [*FLATTEN, "--root", str(tmp_path / "code")],  # an error mark and no records
        [*FLATTEN, "--repo", (tmp_path / "no-such-repo").as_uri()],  # fails before writing
        [sys.executable, "-c", "import os, signal, sys; sys.stdout.write(" + repr(
            encode_line(record("a.md", 1, "cut")).decode()) + "); sys.stdout.flush(); "
            "os.kill(os.getpid(), signal.SIGKILL)"],  # killed after one record
    ]  # fmt: skip
    for producer in producers:
        code, stderr = pipe_into_index(producer, store)
        assert code == 1 and "Traceback" not in stderr, stderr
        assert "nothing was loaded" in stderr
        assert indexed(store) == ["a.md", "b.md"]


def test_a_file_redirected_to_stdin_needs_no_mark(tmp_path):
    corpus = jsonl(tmp_path / "c.jsonl", DOCS)
    with open(corpus, "rb") as handle:
        result = subprocess.run(
            [sys.executable, "-m", "flatten", "index", "-", "--corpus", "c", "--store",
             str(tmp_path / "s")],
            stdin=handle, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr


# Inputs a user gives are usage errors when they are wrong.
@pytest.mark.parametrize("name", ["", "   "])
@pytest.mark.parametrize("command", [("index", "FILE"), ("ingest", "--root", "DIR"),
                                     ("search", "otters"), ("match", "otters"), ("toc",),
                                     ("show", "a.md#1"), ("get", "a.md"),
                                     ("sources",)])  # fmt: skip
def test_an_empty_corpus_name_is_refused_by_every_command(tmp_path, command, name):
    write(tmp_path / "docs", {"a.md": "# A\notters\n"})
    args = [{"FILE": jsonl(tmp_path / "c.jsonl", DOCS), "DIR": tmp_path / "docs"}.get(a, a)
            for a in command]  # fmt: skip
    result = run_cli(*args, "--corpus", name, "--store", tmp_path / "s")
    assert_clean_failure(result, 2, "corpus name cannot be empty")
    assert not (tmp_path / "s").exists()


def test_the_library_refuses_an_empty_corpus_name(store, tmp_path):
    with pytest.raises(UsageError, match="empty"):
        load_files(store, [jsonl(tmp_path / "c.jsonl", DOCS)], " ")


@pytest.mark.parametrize(
    ("queries", "qrels", "words"),
    [(b'{"id": "q1", "query": "caf\xe9"}\n', b"q1 a.md 1\n", ("queries.jsonl:1", "UTF-8")),
     (b'{"id": "q1", "query": "otters"}\n', b"q1 a.md 1\nq1 b\xff.md 1\n",
      ("qrels.tsv:2", "UTF-8")),
     (b'{"id": "q1", "query": "otters"}\n', b"q1 a.md 1e400\n", ("not a finite number",)),
     (b'{"id": "q1", "query": "otters"}\n', b"q1 a.md nan\n", ("not a finite number",)),
     (b'{"id": "q1", "query": "otters"}\n', b"q1 a.md -inf\n", ("not a finite number",))],
    ids=["queries not UTF-8", "qrels not UTF-8", "score inf", "score nan", "score -inf"],
)  # fmt: skip
def test_eval_inputs_that_are_not_utf8_or_finite_are_usage_errors(tmp_path, queries, qrels, words):
    (tmp_path / "queries.jsonl").write_bytes(queries)
    (tmp_path / "qrels.tsv").write_bytes(qrels)
    result = run_cli("eval", "--queries", tmp_path / "queries.jsonl", "--qrels",
                     tmp_path / "qrels.tsv", "--store", tmp_path / "s")  # fmt: skip
    assert_clean_failure(result, 2, *words)


@pytest.mark.parametrize("floor", ["nan", "inf", "-inf"])
def test_a_non_finite_ndcg_floor_is_a_usage_error(tmp_path, floor):
    (tmp_path / "q.jsonl").write_text('{"id": "q1", "query": "otters"}\n')
    (tmp_path / "qrels.tsv").write_text("q1 a.md 1\n")
    result = run_cli("eval", "--queries", tmp_path / "q.jsonl", "--qrels", tmp_path / "qrels.tsv",
                     "--min-ndcg", floor, "--store", tmp_path / "s")  # fmt: skip
    assert_clean_failure(result, 2, "finite")


def test_a_config_that_is_not_utf8_is_a_usage_error(tmp_path):
    (tmp_path / "docs-flatten.yaml").write_bytes(b"embeddings:\n  model: caf\xe9\n")
    corpus = jsonl(tmp_path / "c.jsonl", DOCS)
    result = run_cli("index", corpus, "--corpus", "c", "--store", tmp_path / "s", cwd=tmp_path)
    assert_clean_failure(result, 2, "docs-flatten.yaml", "not valid UTF-8")


def _foreign_export(layout: str, run: int, pages: int = 12) -> list[dict]:
    """Another framework's export of `pages` files, two chunks each, as its writer makes it on
    run `run`: node and document ids are fresh UUID-like strings every run (LlamaIndex's and
    Haystack's defaults), only the file path stays."""
    lines = []
    for page in range(pages):
        path = f"/checkout/docs/page{page}.md"
        for part in range(2):
            text = f"part {part} of page {page} about sprockets"
            node_id = f"{run:08x}-{page:04x}-{part:04x}"
            if layout == "llamaindex":
                lines.append({"id_": node_id, "text": text,
                              "metadata": {"file_path": path, "file_name": f"page{page}.md"},
                              "relationships": {"1": {"node_id": f"doc-{run}-{page}",
                                                      "node_type": "4"}}})  # fmt: skip
            else:  # haystack
                lines.append({"id": node_id, "content": text, "meta": {"file_path": path}})
    return lines


@pytest.mark.parametrize("layout", ["llamaindex", "haystack"])
def test_a_foreign_export_refreshed_keeps_its_documents_by_file_path(tmp_path, layout):
    """Each export of the same files names its nodes anew; the loader groups them by the file
    they came from, so a refresh finds every document unchanged rather than removing all of them
    (which the removal limit refuses: a CI refresh that fails every run)."""
    store = Store.open(tmp_path / "store")
    first = load_records(store, _foreign_export(layout, 1), "fx")
    assert (first.added, first.removed) == (12, 0)
    again = load_records(store, _foreign_export(layout, 2), "fx")
    assert (again.added, again.unchanged, again.removed) == (0, 12, 0)
    sources = [r[0] for r in store.db.execute("SELECT source FROM documents ORDER BY source")]
    assert sources[0] == "/checkout/docs/page0.md"
    store.close()


def test_a_byte_order_mark_alone_on_a_line_is_a_blank_line(tmp_path):
    """An editor's BOM before an empty first line is no malformed line (nor is a BOM-only file
    a record: it is an empty input)."""
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\xef\xbb\xbf\n" + jsonl(tmp_path / "r.jsonl", DOCS).read_bytes())
    with Store.open(tmp_path / "s") as store:
        report = load_files(store, [path], "c")
    assert report.malformed == [] and report.added > 0
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf\n")
    with Store.open(tmp_path / "s") as store, pytest.raises(EmptyInput) as empty:
        load_files(store, [tmp_path / "bom.jsonl"], "c")
    assert "malformed" not in str(empty.value)


def test_a_streamed_load_keeps_no_lines_of_the_documents_it_has_settled(tmp_path, monkeypatch):
    """Memory stays flat: four times the lines in four times the documents raise the load's
    peak of Python memory by less than a quarter (what each line needs is let go once its
    document is written; a document that comes back starts pass 1 over instead). Documents too
    large to hold, so that their lines are what pass 1 keeps."""
    import tracemalloc

    from index.loader import _BatchWriter

    monkeypatch.setattr(_BatchWriter, "BATCH_CHARS", 1 << 14)
    monkeypatch.setattr(_BatchWriter, "FIRST_BATCH_CHARS", 1 << 14)
    peaks = []
    for documents in (4, 16):
        path = jsonl(tmp_path / f"{documents}.jsonl", [
            record(f"d{d}.md", k, f"line {k} of {d}")
            for d in range(documents)
            for k in range(1, 3001)
        ])  # fmt: skip
        with Store.open(tmp_path / f"store-{documents}") as store:
            tracemalloc.start()
            load_files(store, [path], "c", hold_chars=1 << 10)  # its lines read back
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
    assert peaks[1] < 1.25 * peaks[0], peaks
