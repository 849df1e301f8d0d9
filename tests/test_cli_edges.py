"""Edges of the command line: `-` for a report, JSON failures of eval and doctor, negative or
endless durations, inputs that are not regular files, hints that fit the situation, and a stop
that lands while a command is still starting."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, assert_clean_failure, run_cli, stop_once

DOCS = FIXTURES / "docs-tree"


# --- --report - ------------------------------------------------------------------------------


def test_report_dash_writes_the_report_to_stdout_when_the_records_go_to_a_file(tmp_path):
    out = tmp_path / "out.jsonl"
    result = run_cli("flatten", "--root", DOCS, "-o", out, "--report", "-", "-q", cwd=tmp_path)
    assert result.code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["command"] == "flatten" and report["ok"] is True
    assert out.read_text().count("\n") == report["slices"]["total"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]  # no file named `-`


def test_report_dash_beside_records_on_stdout_is_refused_before_anything_is_written(tmp_path):
    for command in (["flatten"], ["flatten", "-o", "-"], ["pack"]):
        result = run_cli(*command, "--root", DOCS, "--report", "-", "-q", cwd=tmp_path)
        assert_clean_failure(result, 2, "--report - writes the report to stdout", "-o FILE")
        assert result.stdout == ""
        assert list(tmp_path.iterdir()) == []


# --- eval and doctor: a failure before the report is JSON under --json -----------------------


def _json_error(result) -> dict:
    """The one JSON error object a failed command printed on stdout."""
    answer = json.loads(result.stdout)
    assert answer["ok"] is False and set(answer) == {"command", "ok", "error"}, answer
    return answer["error"]


def test_eval_failing_before_its_report_prints_a_json_error_under_json(tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "query": "install", "expect": ["README"]}\n')
    missing = run_cli("eval", "--queries", tmp_path / "nope.jsonl", "--json", cwd=tmp_path,
                      real=True)  # fmt: skip
    assert_clean_failure(missing, 2, "nope.jsonl")
    assert _json_error(missing)["reason"] == "bad-queries"
    no_store = run_cli("eval", "--queries", queries, "--store", tmp_path / "none", "--json",
                       real=True)  # fmt: skip
    assert_clean_failure(no_store, 1, "no index")
    assert _json_error(no_store)["reason"] == "index-not-built"
    assert json.loads(no_store.stdout)["command"] == "eval"


def test_eval_below_its_floor_prints_its_report_alone(tmp_path):
    store = tmp_path / "store"
    assert run_cli("index", DOCS, "--store", store, "-q").code == 0
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "query": "install", "expect": ["nowhere"]}\n')
    below = run_cli("eval", "--queries", queries, "--store", store, "--json", "--min-ndcg", "0.5")
    assert_clean_failure(below, 1, "below --min-ndcg")
    assert "perQuery" in json.loads(below.stdout)  # the report, and nothing after it


def test_doctor_failing_before_its_report_prints_a_json_error_under_json(tmp_path):
    nothing = run_cli("doctor", "--json", cwd=tmp_path, real=True)
    assert_clean_failure(nothing, 2, "nothing to check")
    assert _json_error(nothing)["reason"] == "nothing-to-check"
    (tmp_path / "bad.yaml").write_text("bogus: 1\n")
    config = run_cli("doctor", "--json", "--config", tmp_path / "bad.yaml", "--store", tmp_path)
    assert_clean_failure(config, 2, "bogus")
    assert _json_error(config)["reason"] == "bad-config"


# --- durations and counts: negative or endless ones are refused ------------------------------


COMMANDS_THAT_WAIT = [["index", "DOCS", "--corpus", "c"], ["ingest", "--root", "DOCS"],
                      ["drop", "--corpus", "c"]]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS_THAT_WAIT)
@pytest.mark.parametrize("wait", ["-1", "inf", "1e300"])
def test_a_wait_that_is_negative_or_past_what_the_store_can_count_is_refused(tmp_path, command,
                                                                             wait):  # fmt: skip
    args = [str(DOCS) if arg == "DOCS" else arg for arg in command]
    store = tmp_path / "store"
    result = run_cli(*args, "--store", store, "--wait", wait, "--json", real=True)
    assert_clean_failure(result, 2, "--wait")
    assert _json_error(result)["reason"] == "bad-parameter"
    assert not store.exists()


@pytest.mark.parametrize("flag", ["--delay", "--timeout"])
@pytest.mark.parametrize("value", ["inf", "nan", "1e308"])
def test_a_crawl_that_would_wait_forever_is_refused(tmp_path, flag, value):
    result = run_cli("flatten", "--url", "http://127.0.0.1:9/docs/", flag, value, real=True)
    assert_clean_failure(result, 2, f"'{flag}'")


# One past each bound of `crawl.options`, and the bound itself (accepted).
CRAWL_BOUNDS = [
    ("--max-pages", "max_pages", "1000001", "1000000"),
    ("--max-depth", "max_depth", "1001", "1000"), ("--concurrency", "concurrency", "33", "32"),
    ("--delay", "delay", "60.5", "60"), ("--timeout", "timeout", "600.5", "600"),
]  # fmt: skip


@pytest.mark.parametrize(("flag", "key", "past", "bound"), CRAWL_BOUNDS)
def test_the_crawl_numbers_have_an_upper_bound_in_flags_and_config(tmp_path, flag, key, past,
                                                                   bound):  # fmt: skip
    # `--delay 1e308` and `delay: 1e308` were accepted: a crawl that never ends.
    url = "http://127.0.0.1:9/docs/"
    refused = run_cli("flatten", "--url", url, flag, past, "-o", tmp_path / "o.jsonl")
    assert_clean_failure(refused, 2, f"'{flag}'", bound)
    (tmp_path / "docs-flatten.yaml").write_text(f"sources:\n  - url: {url}\n    {key}: {past}\n")
    checked = run_cli("config", cwd=tmp_path)
    assert_clean_failure(checked, 2, f"sources[0].{key}: expected ")
    assert f"to {bound} not {past}" in checked.stderr.replace(",", "")
    (tmp_path / "docs-flatten.yaml").write_text(f"sources:\n  - url: {url}\n    {key}: {bound}\n")
    assert run_cli("config", cwd=tmp_path).code == 0
    assert list(tmp_path.iterdir()) == [tmp_path / "docs-flatten.yaml"]


@pytest.mark.parametrize("key", ["delay", "timeout"])
@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
def test_a_configured_source_that_would_wait_forever_is_refused_naming_it(tmp_path, key, value):
    # The flags refuse these (above); a source entry in docs-flatten.yaml used to take them.
    (tmp_path / "docs-flatten.yaml").write_text(
        f"sources:\n  - url: http://127.0.0.1:9/docs/\n    {key}: {value}\n"
    )
    store = tmp_path / "store"
    result = run_cli("ingest", "--store", store, "--json", cwd=tmp_path)
    assert_clean_failure(result, 2, f"sources[0].{key}: expected a finite number of seconds")
    assert json.loads(result.stdout)["error"]["reason"] == "bad-config"
    assert not store.exists()


# --- index PATH: what is not a regular file ---------------------------------------------------


def _index(*paths, store: Path, timeout: float = 60):
    return run_cli("index", *paths, "--corpus", "c", "--store", store, "--json", real=True,
                   timeout=timeout)  # fmt: skip


def test_index_of_the_null_device_is_an_empty_input(tmp_path):
    result = _index(os.devnull, store=tmp_path / "store")
    assert_clean_failure(result, 1, "no records")
    assert json.loads(result.stdout)["error"]["reason"] == "empty-input"


def test_index_of_a_device_or_socket_is_refused_unread_as_not_a_file(tmp_path):
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(tmp_path / "sock"))
        for path in ("/dev/zero", tmp_path / "sock"):  # /dev/zero read to its end: never ends
            result = _index(path, store=tmp_path / "store")
            assert_clean_failure(result, 2, "not a file, a folder or a pipe")
            assert json.loads(result.stdout)["error"]["reason"] == "not-a-file"
    assert not (tmp_path / "store").exists()


def test_index_of_a_missing_path_says_so(tmp_path):
    result = _index(tmp_path / "nope.jsonl", store=tmp_path / "store")
    assert_clean_failure(result, 2, "no such file or directory")
    assert json.loads(result.stdout)["error"]["reason"] == "path-missing"


def test_index_of_a_named_pipe_nothing_writes_to_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    result = _index(tmp_path / "pipe", store=tmp_path / "store", timeout=60)
    assert_clean_failure(result, 1, "no program opened the named pipe")
    assert json.loads(result.stdout)["error"]["reason"] == "pipe-no-writer"


def test_index_of_a_named_pipe_loads_what_its_writer_sends(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    flatten = subprocess.run([sys.executable, "-m", "flatten", "flatten", "--root", DOCS, "-q"],
                             capture_output=True, check=True).stdout  # fmt: skip

    def write() -> None:
        with open(tmp_path / "pipe", "wb") as pipe:  # waits for the reader, as a shell's > does
            pipe.write(flatten)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    result = _index(tmp_path / "pipe", store=tmp_path / "store")
    writer.join(10)
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["load"]["added"] == 8


# --- empty-input: the hint fits the corpus -----------------------------------------------------


def test_an_empty_input_for_a_corpus_not_in_the_store_suggests_no_drop(tmp_path):
    store = tmp_path / "store"
    assert run_cli("index", DOCS, "--store", store, "-q").code == 0
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    new = run_cli("index", empty, "--corpus", "new", "--store", store, real=True)
    assert_clean_failure(new, 1, "no corpus 'new' was made", "check the input")
    assert "drop" not in new.stderr and "is as it was" not in new.stderr
    held = run_cli("index", empty, "--corpus", "docs-tree", "--store", store, real=True)
    assert_clean_failure(held, 1, "corpus 'docs-tree' is as it was",
                         "docs-flatten drop --corpus docs-tree")  # fmt: skip


# --- a stop while the command is still starting -------------------------------------------------


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has its own SIGTERM handler yet (/proc's mask of caught signals)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stop_as_soon_as_the_handler_is_there_exits_128_plus_the_signal(tmp_path, signum, code):
    """The signal lands while typer builds the command, imports its module and parses its
    options: typer's own handling said 130 for SIGTERM there (or printed a traceback)."""
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-m", "flatten", "search", "words", "--store", tmp_path / "none"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        )  # fmt: skip
        while proc.poll() is None and not _catches_sigterm(proc.pid):
            time.sleep(0.0005)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
        if proc.returncode == 1 and "no index" in stderr:
            continue  # the command ran to its end first: nothing to check this time
        assert proc.returncode == code, stderr
        assert stderr == "interrupted: nothing was written\n" and stdout == ""


# --- the agent's counts: below 1 is refused, as the MCP schema and the CLI refuse it ------------


def test_the_library_refuses_a_count_below_one_as_the_mcp_tool_does(tmp_path):
    from index.agent import MAX_TOP_K, Knowledge

    store = tmp_path / "store"
    assert run_cli("index", DOCS, "--store", store, "-q").code == 0
    knowledge = Knowledge(store)
    try:
        for top_k in (0, -1, True):  # silently searched as top_k=1 before
            answer = knowledge.search("configuration", top_k=top_k)
            assert answer == {"status": "bad_argument", "message": "top_k must be a whole "
                              f"number from 1 to 20, not {top_k!r}."}  # fmt: skip
        assert knowledge.search("configuration", per_doc=0)["status"] == "bad_argument"
        assert knowledge.get("README.md", offset=-1)["status"] == "bad_argument"
        lowered = knowledge.search("configuration", top_k=MAX_TOP_K + 1)
        assert lowered["status"] == "ok" and "top_k was lowered to 20" in lowered["note"]
        assert knowledge.search("configuration", top_k=1)["results"]
    finally:
        knowledge.close()


# --- hostile input: an empty path is an unset variable, never the current folder ----------------


@pytest.mark.parametrize("args", [
    ["flatten", "--root", ""],               # would flatten the current folder
    ["flatten", "--root=", "-o", "out.jsonl"],
    ["flatten", "--root", "DOCS", "-o", ""],  # was "cannot write .: it is a directory"
    ["ingest", "--root", "DOCS", "--out", "", "--json"],  # would write into the current folder
    ["index", "DOCS", "--store", "", "--json"],  # would load into ./.docs-flatten
    ["search", "words", "--store", "", "--json"],
])  # fmt: skip
def test_an_empty_path_option_is_refused_before_anything_runs(tmp_path, args):
    (tmp_path / "a.md").write_text("# A\n\nalpha\n")
    args = [str(DOCS) if arg == "DOCS" else arg for arg in args]
    result = run_cli(*args, cwd=tmp_path, real=True)
    assert_clean_failure(result, 2, "an empty path names", "empty-path")
    if "--json" in args:
        assert _json_error(result)["reason"] == "bad-parameter"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md"]


def test_drop_of_an_unknown_corpus_lists_the_others_one_line_each(tmp_path):
    store = tmp_path / "store"
    records = tmp_path / "r.jsonl"
    records.write_text('{"source": "a.md", "content": "alpha"}\n')
    assert run_cli("index", records, "--corpus", "evil\nname", "--store", store, "-q").code == 0
    result = run_cli("drop", "--corpus", "typo", "--store", store, real=True)
    assert_clean_failure(result, 2, "holds no corpus 'typo'")
    assert result.stderr.splitlines()[-1] == "hint: it holds: evil\\nname"


def test_a_report_and_an_output_naming_one_file_are_refused(tmp_path):
    (tmp_path / "out").mkdir()
    for command in ("flatten", "pack"):
        result = run_cli(command, "--root", DOCS, "-o", tmp_path / "out" / "x.json", "--report",
                         "out/./x.json", "-q", cwd=tmp_path, real=True)  # fmt: skip
        assert_clean_failure(result, 2, "--report and -o both name")
        assert list((tmp_path / "out").iterdir()) == []  # the records were lost to the report
    devices = run_cli("flatten", "--root", DOCS, "-o", os.devnull, "--report", os.devnull, "-q")
    assert devices.code == 0, devices.stderr


# --- files named by options: a device is refused unread, a pipe is read once ---------------------


@pytest.mark.parametrize("args", [
    ["search", "words", "--config", "/dev/zero"],   # read to its end: never ended
    ["search", "--queries", "/dev/zero"],
    ["eval", "--queries", "/dev/zero"],
    ["ingest", "--sources", "/dev/zero"],
])  # fmt: skip
def test_an_option_file_that_is_a_device_is_refused_unread(tmp_path, args):
    result = run_cli(*args, "--store", tmp_path / "store", real=True, timeout=60)
    assert_clean_failure(result, 2, "/dev/zero is a character device")


def test_an_option_file_that_is_a_pipe_is_read_once_or_refused_when_nothing_writes(tmp_path):
    store = tmp_path / "store"
    assert run_cli("index", DOCS, "--store", store, "-q").code == 0
    os.mkfifo(tmp_path / "queries")
    idle = run_cli("search", "--queries", tmp_path / "queries", "--store", store, real=True)
    assert_clean_failure(idle, 1, "no program opened the named pipe")

    def write() -> None:
        with open(tmp_path / "queries", "w") as pipe:
            pipe.write('{"id": "q1", "query": "configuration"}\n')

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    fed = run_cli("search", "--queries", tmp_path / "queries", "--store", store, real=True)
    writer.join(10)
    assert fed.code == 0, fed.stderr
    assert json.loads(fed.stdout)["id"] == "q1"


FORKING = [["flatten", "--root", "DOCS", "--workers", "100000", "-q"],
           ["ingest", "--root", "DOCS", "--jobs", "100000", "--store", "S"]]  # fmt: skip


@pytest.mark.parametrize("args", FORKING)
def test_a_process_count_past_any_machine_is_refused_before_forking(tmp_path, args):
    given = {"DOCS": str(DOCS), "S": str(tmp_path / "s")}
    result = run_cli(*[given.get(arg, arg) for arg in args], real=True)
    assert_clean_failure(result, 2, "less than or equal to 256")
    assert not (tmp_path / "s").exists()


def test_index_of_stdin_redirected_from_a_device_is_refused_unread(tmp_path):
    with open("/dev/zero", "rb") as zeros:  # copied to a temporary file until the disk filled
        proc = subprocess.run([sys.executable, "-m", "flatten", "index", "-", "--corpus", "c",
                               "--store", tmp_path / "s"], stdin=zeros, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: stdin is a character device")
    assert not (tmp_path / "s").exists()


# --- hostile input: bytes that are not UTF-8 in a command line ---------------------------------

# `$'\xff'` from a shell reaches Python as the surrogate escape '\udcff' (as sys.argv holds it);
# subprocess writes it back as the byte 0xff.
FF = "\udcff"


@pytest.fixture(scope="module")
def byte_named(tmp_path_factory):
    """A store (in a folder whose name is not UTF-8) of a tree holding a file whose name is not
    UTF-8: paths on disk may be any bytes, and work."""
    top = tmp_path_factory.mktemp("bytes")
    root = top / "tree"
    root.mkdir()
    (root / f"b{FF}.md").write_text("# Bee\n\nbytes in its name\n")
    (root / "a.md").write_text("# Pool\n\npool timeout words\n")
    store = top / f"store{FF}"
    loaded = run_cli("ingest", "--root", root, "--corpus", "c", "--store", store, real=True)
    assert loaded.code == 0, loaded.stderr
    return top, root, store


NOT_UTF8 = [
    (["match", f"{FF}"], "WORDS"), (["match", "pool", "--corpus", f"c{FF}"], "--corpus"),
    (["match", "pool", "--path", f"{FF}"], "--path"), (["words", f"^pool{FF}"], "REGEX"),
    (["get", f"a{FF}.md"], "source"), (["show", f"a{FF}.md#1"], "token"),
    (["toc", f"a{FF}"], "prefix"), (["card", "--corpus", f"c{FF}"], "--corpus"),
    (["sources", "--corpus", f"c{FF}"], "--corpus"), (["search", f"pool{FF}"], "query"),
    (["search", "pool", "--corpus", f"c{FF}"], "--corpus"),
    (["search", "pool", "--path", f"{FF}"], "--path"),
    (["index", "DOCS", "--corpus", f"c{FF}"], "--corpus"),
    (["ingest", "--root", "DOCS", "--corpus", f"c{FF}"], "--corpus"),
    (["drop", "--corpus", f"c{FF}"], "--corpus"),
]  # fmt: skip


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize(("args", "named"), NOT_UTF8, ids=lambda v: " ".join(v).encode(
    "utf-8", "backslashreplace").decode() if isinstance(v, list) else v)  # fmt: skip
def test_text_that_is_not_utf8_is_a_usage_error_naming_its_flag(byte_named, args, named,
                                                                 as_json):  # fmt: skip
    # Was a UnicodeEncodeError traceback from sqlite (exit 1), and no JSON under --json.
    top, _, store = byte_named
    args = [str(DOCS) if arg == "DOCS" else arg for arg in args]
    result = run_cli(*args, "--store", store, *(["--json"] if as_json else []), real=True)
    assert_clean_failure(result, 2, f"'{named}'", "'", "not-utf8")
    assert "\\x" + "ff" in result.stderr  # the byte as the user reads it
    if as_json:
        error = _json_error(result)
        assert error["reason"] == "bad-parameter"
        assert f"'{named}'" in error["message"] and "not-utf8" in error["message"]
    assert sorted(p.name for p in top.iterdir()) == [f"store{FF}", "tree"]


@pytest.mark.parametrize("args", [["--include", f"{FF}*"], ["--url", f"http://x{FF}/"],
                                  ["--header", f"A:{FF}"]])  # fmt: skip
def test_flatten_refuses_text_that_is_not_utf8_on_its_fast_path_too(tmp_path, args):
    result = run_cli("flatten", "--root", DOCS, *args, "-o", tmp_path / "out.jsonl", real=True)
    assert_clean_failure(result, 2, f"'{args[0]}'", "not-utf8")
    assert list(tmp_path.iterdir()) == []


def test_paths_on_disk_may_be_any_bytes_and_a_name_is_fetched_as_shown(byte_named, make_repo):
    top, root, store = byte_named
    # The refusal shows the name as the index spells it: that spelling fetches the file.
    got = run_cli("get", "b\\xff.md", "--store", store, real=True)
    assert got.code == 0, got.stderr
    assert "bytes in its name" in got.stdout
    out = top / f"out{FF}.jsonl"
    flattened = run_cli("flatten", "--root", root, "-o", out, "-q", real=True)  # the fast path
    assert flattened.code == 0, flattened.stderr
    assert "b\\\\xff.md" in out.read_text()
    repo = make_repo(f"repo{FF}")
    repo.commit({f"sub{FF}/c.md": "# Sea\n\nin a folder named in bytes\n"})
    cloned = run_cli("flatten", "--repo", repo.path, "--subdir", f"sub{FF}", "-q", real=True)
    assert cloned.code == 0, cloned.stderr
    assert [r["source"] for r in cloned.records()] == ["sub\\xff/c.md"]


# --- data on stdout, diagnostics on stderr: the load summaries ---------------------------------


@pytest.fixture
def embeddings_server():
    from tests.embedserver import EmbeddingServer
    from tests.sites import serve

    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base:
        yield base + "/v1"
    EmbeddingServer.reset()


def test_the_load_summaries_of_index_ingest_and_drop_go_to_stderr(tmp_path, embeddings_server):
    # They went to stdout: `x=$(docs-flatten index ...)` captured them (README: "A summary goes
    # to stderr at the end of every run").
    store, embed = tmp_path / "s", ["--base-url", embeddings_server, "--model", "m"]
    ingested = run_cli("ingest", "--root", DOCS, "--corpus", "c", "--store", store, *embed)
    assert ingested.code == 0, ingested.stderr
    assert ingested.stdout == ""
    assert "c: " in ingested.stderr and " added, " in ingested.stderr
    assert "vectors (m, dim 64): " in ingested.stderr
    records = tmp_path / "r.jsonl"
    assert run_cli("flatten", "--root", DOCS, "-o", records, "-q").code == 0
    indexed = run_cli("index", records, "--corpus", "d", "--store", store, "--no-embed")
    assert indexed.code == 0 and indexed.stdout == ""
    assert indexed.stderr.startswith("d: ") and " added, " in indexed.stderr
    dropped = run_cli("drop", "--corpus", "d", "--store", store)
    assert dropped.code == 0 and dropped.stdout == ""
    assert dropped.stderr.startswith("d: dropped (")
    # --json: the summary is the command's data, on stdout, and alone there.
    again = run_cli("index", records, "--corpus", "d", "--store", store, "--no-embed", "--json")
    assert again.code == 0 and json.loads(again.stdout)["load"]["added"] > 0
    assert " added, " not in again.stderr


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stop_while_embedding_says_the_text_load_stays_and_the_next_run_resumes(
    tmp_path, embeddings_server, signum, code
):
    # It said "interrupted: nothing was written" though the text load was committed.
    from tests.embedserver import EmbeddingServer

    store, embed = tmp_path / "s", ["--base-url", embeddings_server, "--model", "m"]
    EmbeddingServer.delay = 120  # the server hangs: the load is committed, the embedding waits
    proc = subprocess.Popen([sys.executable, "-m", "flatten", "index", str(DOCS), "--corpus",
                             "c", "--store", str(store), *embed],
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    # Asked for vectors: the text load is done.
    stderr = stop_once(proc, lambda: bool(EmbeddingServer.requests), signum, "the embedding")
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and "nothing was written" not in stderr
    assert stderr.rstrip().endswith(
        "interrupted: c: text index loaded; embeddings incomplete, the next run resumes them"
    ), stderr
    stats = json.loads(run_cli("stats", "--store", store, "--json").stdout)
    assert stats["documents"] > 0, stats
    EmbeddingServer.reset()  # answers at once now
    again = run_cli("index", DOCS, "--corpus", "c", "--store", store, *embed, "--json")
    assert again.code == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["load"]["added"] == 0 and summary["vectors"]["embedded"] > 0, summary
    assert summary["vectors"]["pending"] == 0, summary
