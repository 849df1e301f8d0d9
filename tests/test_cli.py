"""The CLI in a real subprocess: exit codes, messages, atomic output, reports, determinism."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import (
    FIXTURES,
    assert_clean_failure,
    jsonl,
    record,
    run_cli,
    stop_once,
    write,
)


def test_help_reads_well():
    result = run_cli("--help")
    assert result.code == 0 and "flatten" in result.stdout
    sub = run_cli("flatten", "--help")
    for flag in (
        "--root",
        "--repo",
        "--ref",
        "--subdir",
        "--kind",
        "--output",
        "--include",
        "--exclude",
        "--max-file-size",
        "--report",
        "--format",
        "--token-env",
    ):
        assert flag in sub.stdout


def test_flatten_a_folder_to_stdout_with_a_summary_on_stderr(tmp_path):
    write(tmp_path, {"a.md": "# A\ntext\n", "b.rst": "B\n=\n\nbody\n"})
    result = run_cli("flatten", "--root", tmp_path)
    assert result.code == 0, result.stderr
    records = result.records()
    assert [r["id"] for r in records] == ["a.md#1", "b.rst#1"]
    assert "files: 2 seen, 2 kept" in result.stderr
    assert "slices: 2 (markdown 1, rst 1)" in result.stderr


def test_same_tree_gives_byte_identical_output(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "docs-tree", tree)
    first = run_cli("flatten", "--root", tree, "--kind", "auto", "-q")
    second = run_cli("flatten", "--root", tree, "--kind", "auto", "-q", "--workers", "1")
    assert first.code == 0 and first.stdout == second.stdout


def test_parallel_workers_give_the_same_bytes_as_one(tmp_path):
    write(tmp_path, {f"d{i // 50}/f{i:04}.md": f"# Doc {i}\n\nbody {i}\n" for i in range(600)})
    one = run_cli("flatten", "--root", tmp_path, "-q", "--workers", "1")
    two = run_cli("flatten", "--root", tmp_path, "-q", "--workers", "2")
    assert one.code == 0 and one.stdout == two.stdout and len(one.records()) == 600


def test_ids_are_unique_and_fields_follow_the_contract(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "docs-tree", tree)
    records = run_cli("flatten", "--root", tree).records()
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids))
    for r in records:
        assert list(r)[:7] == ["id", "source", "title", "content", "chunkSize", "repoUrl", "commit"]
        assert r["chunkSize"] == len(r["content"].encode("utf-8"))
        assert r["title"] and r["id"] == f"{r['source']}#{r['ordinal']}"


def test_missing_root_is_a_clear_failure(tmp_path):
    assert_clean_failure(run_cli("flatten", "--root", tmp_path / "nope"), 1, "root not found")


def test_root_that_is_a_file_is_a_clear_failure(tmp_path):
    (tmp_path / "f.md").write_text("x")
    assert_clean_failure(run_cli("flatten", "--root", tmp_path / "f.md"), 1, "not a directory")


def test_root_and_repo_together_is_a_usage_error(tmp_path):
    assert_clean_failure(run_cli("flatten", "--root", tmp_path, "--repo", "x"), 2, "exactly one")


def test_unknown_kind_is_a_usage_error(tmp_path):
    result = run_cli("flatten", "--root", tmp_path, "--kind", "all")
    assert result.code == 2 and "Traceback" not in result.stderr


def test_bad_repo_url_is_a_usage_error():
    assert_clean_failure(run_cli("flatten", "--repo", "not a url at all"), 2, "not a git URL")


def test_nonexistent_repo_and_ref_fail_with_named_reasons(tmp_path, make_repo):
    assert_clean_failure(
        run_cli("flatten", "--repo", (tmp_path / "x.git").as_uri()), 1, "not found"
    )
    repo = make_repo()
    repo.commit({"a.md": "# A\n"})
    assert_clean_failure(
        run_cli("flatten", "--repo", repo.url, "--ref", "nope"), 1, "ref 'nope' does not exist"
    )


def test_subdir_traversal_is_refused(make_repo):
    repo = make_repo()
    repo.commit({"a.md": "# A\n"})
    assert_clean_failure(run_cli("flatten", "--repo", repo.url, "--subdir", "../.."), 2, "--subdir")


def test_docs_kind_on_a_code_only_tree_hints_at_kind_code(tmp_path):
    write(tmp_path, {f"src/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(5)})
    out = tmp_path / "out.jsonl"
    result = run_cli("flatten", "--root", tmp_path, "-o", out)
    assert_clean_failure(result, 1, "--kind code")
    assert not out.exists()
    code = run_cli("flatten", "--root", tmp_path, "--kind", "code")
    assert code.code == 0 and {r["lang"] for r in code.records()} == {"python"}


def test_failed_run_leaves_no_output_file_and_no_temp_files(tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "corpus.jsonl").write_text("previous good output\n")
    write(tmp_path / "src", {"x.py": "print(1)\n"})
    result = run_cli("flatten", "--root", tmp_path / "src", "-o", out_dir / "corpus.jsonl")
    assert result.code == 1
    assert (out_dir / "corpus.jsonl").read_text() == "previous good output\n"
    assert [p.name for p in out_dir.iterdir()] == ["corpus.jsonl"]


def test_output_into_a_missing_directory_is_a_clear_failure(tmp_path):
    write(tmp_path, {"a.md": "# A\n"})
    assert_clean_failure(
        run_cli("flatten", "--root", tmp_path, "-o", tmp_path / "no/dir/x.jsonl"),
        1,
        "does not exist",
    )


def test_interrupted_run_leaves_no_partial_file(tmp_path):
    write(
        tmp_path / "src", {f"f{i:05}.md": f"# Doc {i}\n" + "text line\n" * 200 for i in range(4000)}
    )
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flatten",
            "flatten",
            "--root",
            str(tmp_path / "src"),
            "-o",
            str(out),
            "--workers",
            "1",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    # Signal only once the run is writing (its handler is installed by then): a signal that
    # lands during interpreter start-up would test Python, not us.
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".out.jsonl.*.tmp")) and proc.poll() is None:
        assert time.monotonic() < deadline, "the run never started writing"
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal; nothing to check")
    assert proc.returncode == 143 and "interrupted" in stderr and "Traceback" not in stderr
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["src"]


def test_report_lists_every_skipped_path_with_its_reason(tmp_path):
    write(
        tmp_path / "t",
        {
            "a.md": "# A\n",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00",
            "blob.md": b"\x00\x01binary",
            "package-lock.json": "{}",
            ".env": "TOKEN=x",
            "big.md": "x" * 3000,
            "notes.md": "Caf\xe9\n".encode("latin-1"),
            "empty.md": "\n\n",
        },
    )
    report_path = tmp_path / "report.json"
    result = run_cli(
        "flatten", "--root", tmp_path / "t", "--max-file-size", "2k", "--report", report_path
    )
    assert result.code == 0, result.stderr
    report = json.loads(report_path.read_text())
    reasons = {s["path"]: s["reason"] for s in report["skipped"]}
    assert reasons == {
        "logo.png": "binary",
        "blob.md": "binary",
        "package-lock.json": "lockfile",
        ".env": "secret-file",
        "big.md": "too-large",
        "empty.md": "empty",
    }
    assert report["ok"] is True and report["files"]["kept"] == 2 and report["files"]["seen"] == 8
    assert report["notes"] == [{"path": "notes.md", "note": "not-utf8: decoded as cp1252"}]
    assert {r["source"] for r in result.records()} == {"a.md", "notes.md"}


def test_failed_run_still_writes_a_report_saying_why(tmp_path):
    write(tmp_path / "t", {"x.py": "print(1)\n"})
    report_path = tmp_path / "r.json"
    run_cli("flatten", "--root", tmp_path / "t", "--report", report_path)
    report = json.loads(report_path.read_text())
    assert report["ok"] is False and report["error"]["reason"] == "no-docs"


def test_secrets_inside_kept_files_are_redacted_and_counted(tmp_path):
    write(tmp_path, {"ops.md": "# Ops\nUse key AKIA2E0A8F3B244C9986 here.\n"})
    result = run_cli("flatten", "--root", tmp_path)
    record = result.records()[0]
    assert "AKIA2E0A8F3B244C9986" not in result.stdout
    assert record["redactions"] == 1 and "[REDACTED:aws-access-key]" in record["content"]
    assert "secrets redacted: aws-access-key 1" in result.stderr


def test_include_and_exclude(tmp_path):
    write(tmp_path, {"docs/a.md": "# A\n", "docs/b.md": "# B\n", "README.md": "# R\n"})
    result = run_cli("flatten", "--root", tmp_path, "--include", "docs/*", "--exclude", "*b.md")
    assert [r["source"] for r in result.records()] == ["docs/a.md"]


def test_headings_inside_html_blocks_do_not_split(tmp_path):
    write(tmp_path, {"a.md": "# Top\n<details>\n# inner\n</details>\n"})
    assert [r["title"] for r in run_cli("flatten", "--root", tmp_path).records()] == ["Top"]


def test_non_tty_progress_is_periodic_lines_not_a_bar(tmp_path):
    write(tmp_path, {"a.md": "# A\n"})
    result = run_cli("flatten", "--root", tmp_path)
    assert "\x1b[" not in result.stderr  # no terminal escapes in CI logs


def test_repo_flatten_records_provenance_and_drops_the_clone(make_repo, tmp_path):
    repo = make_repo()
    sha = repo.commit({"docs/a.md": "# A\n"})
    result = run_cli("flatten", "--repo", repo.url, env={"TMPDIR": str(tmp_path)})
    record = result.records()[0]
    assert (record["commit"], record["ref"], record["repoUrl"]) == (sha, "trunk", repo.url)
    assert not [p for p in Path(tmp_path).iterdir() if p.name.startswith("docs-flatten-clone")]


def test_progress_bar_on_a_terminal_does_not_touch_stdout(tmp_path):
    import os
    import pty
    import threading

    write(tmp_path / "t", {f"f{i:04}.md": f"# Doc {i}\n\nbody\n" for i in range(300)})
    leader, follower = pty.openpty()
    terminal = bytearray()

    def drain() -> None:  # a terminal reads all the time; an unread pty would block the writer
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                return
            if not chunk:
                return
            terminal.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "flatten", "--root", str(tmp_path / "t")],
        stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    os.close(follower)
    reader.join(timeout=10)
    os.close(leader)
    assert proc.returncode == 0
    # The bar never reaches stdout: 300 records and the closing mark of a piped stream.
    assert len(proc.stdout.decode().splitlines()) == 301
    assert b"files: 300 seen, 300 kept" in bytes(terminal)


def test_crawl_flag_defaults_are_the_crawlers_own():
    from crawl.crawler import CrawlOptions
    from flatten.cli.settings import CRAWL_DEFAULTS, DEFAULTS, parse_size
    from flatten.pipeline import FlattenOptions

    crawl = CrawlOptions()
    assert {**CRAWL_DEFAULTS, "max_page_size": parse_size(CRAWL_DEFAULTS["max_page_size"])} == {
        "max_pages": crawl.max_pages, "max_depth": crawl.max_depth,
        "concurrency": crawl.concurrency, "delay": crawl.delay, "timeout": crawl.timeout,
        "max_page_size": crawl.max_page_bytes,
    }  # fmt: skip
    flatten = FlattenOptions()
    assert parse_size(DEFAULTS["max_file_size"]) == flatten.max_file_size
    assert DEFAULTS["max_chars"] == flatten.max_chars


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_search_json_object_says_its_tier_as_queries_lines_and_the_mcp_tool_do(tmp_path):
    from index.agent import Knowledge
    from index.vectors.client import EmbeddingConfig
    from tests.embedserver import EmbeddingServer
    from tests.sites import serve

    store = tmp_path / "store"
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "q1", "query": "install with docker"}\n')
    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base:
        loaded = run_cli("index", FIXTURES / "docs-tree", "--store", store, "--base-url",
                         base + "/v1", "--model", "hash-64", "-q")  # fmt: skip
        assert loaded.code == 0, loaded.stderr
    gone = f"http://127.0.0.1:{_free_port()}/v1"  # the same model, its server stopped
    dead = EmbeddingConfig(base_url=gone, model="hash-64")
    for flags, embeddings in [((), None), (("--base-url", gone, "--model", "hash-64"), dead)]:
        one = run_cli("search", "install with docker", "--json-object", "--store", store, *flags)
        assert one.code == 0, one.stderr
        answer = json.loads(one.stdout)
        assert sorted(answer) == ["query", "results", "tier"]
        assert answer["results"][0]["source"] == "docs/guide/install.md"
        many = run_cli("search", "--queries", questions, "--store", store, *flags)
        line = json.loads(many.stdout)
        knowledge = Knowledge(store, embeddings=embeddings)
        served = knowledge.search("install with docker")
        knowledge.close()
        assert answer["tier"] == line["tier"] == served["tier"]
        assert answer["results"] == line["results"]
        listed = run_cli("search", "install with docker", "--json", "--store", store, *flags)
        assert json.loads(listed.stdout) == answer["results"]  # --json alone: the list, as ever
    tier = answer["tier"]
    assert tier["name"] == "lexical" and tier["degraded"] is True
    assert "unreachable" in tier["reason"]


class HeldSite:
    """A docs site whose second page is held until released: a crawl that is surely under way
    (its first page written) when the test signals it, with no timing to guess."""

    def __init__(self) -> None:
        import threading

        self.asked, self.released = threading.Event(), threading.Event()

    def handler(self) -> type:
        from tests.sites import Responder, page

        site = self

        class Handler(Responder):
            def do_GET(self) -> None:
                if self.path == "/docs/":
                    self.respond(200, page("Home", "<p>Start</p><a href='/docs/next'>next</a>"))
                elif self.path == "/docs/next":
                    site.asked.set()
                    site.released.wait(60)
                    self.respond(200, page("Next", "<p>Later</p>"))
                else:
                    self.respond(404, b"")

        return Handler


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_flatten_exits_128_plus_its_number_and_leaves_no_output(tmp_path, signum,
                                                                               code):  # fmt: skip
    from tests.sites import serve

    site = HeldSite()
    out = tmp_path / "out" / "docs.jsonl"
    out.parent.mkdir()
    with serve(site.handler()) as base:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flatten", "flatten", "--url", base + "/docs/", "-o", str(out),
             "--delay", "0"],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert site.asked.wait(60), "the crawl never asked for its second page"
            proc.send_signal(signum)
            _, stderr = proc.communicate(timeout=60)
        finally:
            site.released.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == code, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert list(out.parent.iterdir()) == []  # neither the file nor its temporary


def _locked_for_writing(db: Path) -> bool:
    """Whether another connection holds the store's write transaction (a load under way)."""
    import sqlite3

    probe = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as exc:
        assert "locked" in str(exc) or "busy" in str(exc), exc
        return True
    finally:
        probe.close()


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_load_rolls_the_index_back_and_exits_128_plus_its_number(tmp_path, signum,
                                                                               code):  # fmt: skip
    store = tmp_path / "store"
    before = jsonl(tmp_path / "before.jsonl", [record("a.md", 1, "alpha original words")])
    assert run_cli("index", before, "--corpus", "c", "--store", store, "-q").code == 0
    # Big enough that the load is still in its transaction when the lock is seen.
    after = jsonl(tmp_path / "after.jsonl", [record(f"d/{n:06}.md", 1, f"replacement text {n} "
                                                    * 20) for n in range(60_000)])  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "flatten", "index", str(after), "--corpus", "c", "--store",
         str(store), "--max-delete", "100%"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    stderr = stop_once(proc, lambda: _locked_for_writing(store / "index.sqlite"), signum,
                       "the load's transaction")  # fmt: skip
    assert proc.returncode == code, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    listed = run_cli("sources", "--store", store, "--json")
    assert [s["source"] for s in json.loads(listed.stdout)["sources"]] == ["a.md"]
    assert not _locked_for_writing(store / "index.sqlite")


@pytest.fixture(scope="module")
def docs_store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("docs") / "store"
    assert run_cli("index", FIXTURES / "docs-tree", "--store", store, "-q").code == 0
    return store


@pytest.mark.parametrize(
    "asked, meant",
    [
        ("docs/guide/install.md/", "docs/guide/install.md"),  # a trailing slash
        ("./docs/guide/install.md", "docs/guide/install.md"),
        ("docs/guide/install.md#3", "docs/guide/install.md"),  # a token, as --json gives it
        ("install.md (slice 3)", "docs/guide/install.md"),  # a slice, as search prints it
        ("docs/guide/install.md:16-35", "docs/guide/install.md"),  # a citation
        ("docs/guide/instal.md", "docs/guide/install.md"),  # a near miss
        ("docs/Guide/Install.MD", "docs/guide/install.md"),
        ("install.md", "docs/guide/install.md"),  # the name without its folder
        ("docs/reference/cli.md", "docs/reference/cli.rst"),
        ("docs-tree/docs/guide/install.md", "docs/guide/install.md"),  # with the folder indexed
        ("/home/me/docs-tree/docs/guide/install.md", "docs/guide/install.md"),
    ],
)
def test_get_of_a_missing_source_suggests_the_one_meant(docs_store, asked, meant):
    result = run_cli("get", asked, "--store", docs_store)
    assert_clean_failure(result, 1, f"no document '{asked}'", f"did you mean '{meant}'?")


def test_search_prints_a_slice_by_its_label_and_show_and_get_take_it_back(docs_store):
    # `source#3` after a URL reads as the page's anchor 3: search prints `source (slice 3)`.
    found = run_cli("search", "install", "--store", docs_store, "-k", "1")
    assert found.code == 0, found.stderr
    first = found.stdout.splitlines()[0]
    label = first.removeprefix("1. ").split("  ")[0]
    source, ordinal = label.removesuffix(")").split(" (slice ")
    assert "#" not in label and int(ordinal) >= 1
    shown = run_cli("show", label, "--store", docs_store)
    assert shown.code == 0, shown.stderr
    assert shown.stdout.startswith(f"{label}  [")
    assert run_cli("show", f"{source}#{ordinal}", "--store", docs_store).stdout == shown.stdout
    got = run_cli("get", label, "--store", docs_store, "--all")
    assert got.code == 0, got.stderr
    assert got.stdout == run_cli("get", source, "--store", docs_store, "--all").stdout != ""


def test_get_of_a_folder_names_documents_in_it(docs_store):
    result = run_cli("get", "docs/reference", "--store", docs_store)
    assert_clean_failure(result, 1, "is a folder", "docs/reference/api.adoc",
                         "docs/reference/cli.rst",
                         "`docs-flatten toc docs/reference/ --store")  # fmt: skip


def test_get_of_something_unlike_any_source_suggests_nothing(docs_store):
    result = run_cli("get", "kubernetes/operators.txt", "--store", docs_store)
    assert_clean_failure(result, 1, "no document", "list them with")
    assert "did you mean" not in result.stderr


@pytest.mark.parametrize(
    "args, reason, words",
    [
        (("search", "docker", "--json", "--bogus"), "no-such-option", "--bogus"),
        (("search", "docker", "--json", "--top-k", "0"), "bad-parameter", "--top-k"),
        (("search", "docker", "--json", "--top-k"), "bad-option-usage", "--top-k"),
        (("get", "--json"), "missing-parameter", "source"),
        (("stats", "--json", "extra"), "usage-error", "extra"),
    ],
)
def test_a_usage_error_under_json_is_also_a_json_error_object_on_stdout(args, reason, words):
    result = run_cli(args[0], "--store", "/nonexistent/never-opened", *args[1:])
    assert result.code == 2, result.stderr
    answer = json.loads(result.stdout)
    assert answer["ok"] is False and answer["command"] == args[0]
    assert answer["error"]["reason"] == reason, answer
    assert words in answer["error"]["message"] and "\n" not in answer["error"]["message"]
    assert "--help" in answer["error"]["hint"]
    assert "Traceback" not in result.stderr and "Error" in result.stderr  # as ever, for people


def test_a_usage_error_without_json_prints_nothing_on_stdout():
    for args in (("search", "docker", "--bogus"), ("search", "--", "--json", "--bogus")):
        result = run_cli(*args)
        assert result.code == 2 and result.stdout == ""


@pytest.mark.parametrize(
    "args, code, reason",
    [
        (("search", "%", "--json"), 2, "bad-query"),
        (("search", "%", "--json-object"), 2, "bad-query"),
        (("search", "docker", "--json", "--corpus", "nope"), 2, "unknown-corpus"),
        (("get", "kubernetes/operators.txt", "--json"), 1, "no-document"),
    ],
)
def test_a_query_command_failure_under_json_is_also_a_json_error_object(docs_store, args,
                                                                        code, reason):  # fmt: skip
    """A script reading --json gets the failure on stdout in the usage error's shape, not an
    empty stdout it cannot tell from a crash; people still read it on stderr."""
    result = run_cli(args[0], "--store", docs_store, *args[1:])
    assert_clean_failure(result, code)
    answer = json.loads(result.stdout)
    assert answer["ok"] is False and answer["command"] == args[0]
    assert answer["error"]["reason"] == reason and answer["error"]["message"], answer


def test_a_query_command_failure_without_json_prints_nothing_on_stdout(docs_store):
    result = run_cli("search", "%", "--store", docs_store)
    assert result.code == 2 and result.stdout == ""
