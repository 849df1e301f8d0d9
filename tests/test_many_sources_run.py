"""A many-source run (`ingest --sources FILE --jobs N`, `index --manifests DIR`): stopped by
Ctrl-C (SIGINT to the process group, as a terminal sends it) or by SIGTERM it leaves no
temporary file behind (not the JSONL of a source flattened and not yet loaded, not one being
written, not a clone); and it opens the store once, not once per corpus. Real processes, real
signals, real git repositories cloned through file://."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import git, run_cli, write

REPOS = 8
PAGES = 120  # per repository: enough that each takes a moment to flatten


def make_sources(tmp_path: Path, repos: int = REPOS, pages: int = PAGES) -> Path:
    """Bare repositories with many pages each, and a sources file listing them."""
    entries = []
    for i in range(repos):
        tree = tmp_path / "work" / f"r{i}"
        body = "words and more words. " * 200
        write(tree, {f"docs/page{p:03}.md": f"# Page {p} of r{i}\n\n{body}\n\n## Section\n\n"
                     f"kubectl apply {p}\n" for p in range(pages)})  # fmt: skip
        git(tree.parent, "init", "-q", str(tree))
        git(tree, "add", "-A")
        git(tree, "commit", "-q", "-m", "first")
        bare = tmp_path / "remotes" / f"r{i}.git"
        git(tmp_path, "clone", "-q", "--bare", str(tree), str(bare))
        entries.append(f"- repo: {bare.as_uri()}\n")
    sources = tmp_path / "sources.yaml"
    sources.write_text("".join(entries))
    return sources


def interrupted_run(tmp_path: Path, send) -> tuple[int, str, list[str]]:
    """Start the run with its own TMPDIR, wait until the first source has loaded, `send` a
    signal; the exit code, stderr, and what is left in TMPDIR."""
    temp = tmp_path / "tmpdir"
    temp.mkdir()
    sources = make_sources(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "flatten", "ingest", "--sources", str(sources), "--jobs", "2",
         "--store", str(tmp_path / "store"), "--no-embed"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(temp)}, start_new_session=True,
    )  # fmt: skip
    said = []
    assert proc.stderr is not None
    for line in proc.stderr:
        said.append(line)
        if sum(x.startswith("read:") for x in said) == 2:  # two flattened: others in flight
            break
    send(proc)
    try:
        _, rest = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    # A killed worker's git may still be finishing: it has a few seconds to clean up.
    deadline = time.monotonic() + 5
    while (left := sorted(str(p.relative_to(temp)) for p in temp.rglob("*"))) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)
    return proc.returncode, "".join(said) + rest, left


@pytest.mark.parametrize(
    "send, exit_code",
    [
        pytest.param(lambda p: os.killpg(p.pid, signal.SIGINT), 130, id="ctrl-c"),
        pytest.param(lambda p: p.send_signal(signal.SIGTERM), 143, id="sigterm"),
    ],
)
def test_an_interrupted_many_source_run_leaves_no_temporary_file(tmp_path, send, exit_code):
    code, said, left = interrupted_run(tmp_path, send)
    assert code == exit_code, said
    assert "Traceback" not in said, said
    assert left == [], left
    assert "interrupted: ingest: " in said and "before the stop (those stay)" in said


@pytest.mark.parametrize("embedded", [False, True], ids=["lexical", "embeddings"])
def test_a_many_source_run_opens_the_store_once(tmp_path, monkeypatch, embedded):
    from index.store import Store
    from tests.embedserver import EmbeddingServer
    from tests.sites import serve

    sources = make_sources(tmp_path, repos=3, pages=2)
    opened = []
    real_open = Store.open.__func__

    def counted(cls, *args, **kwargs):
        opened.append(kwargs.get("readonly", False))
        return real_open(cls, *args, **kwargs)

    monkeypatch.setattr(Store, "open", classmethod(counted))
    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base:
        embed = ["--base-url", base + "/v1", "--model", "m"] if embedded else ["--no-embed"]
        done = run_cli("ingest", "--sources", sources, "--store", tmp_path / "store",
                       "--jobs", "1", *embed, cwd=tmp_path)  # fmt: skip
    assert done.code == 0, done.stderr
    assert "3 loaded" in done.stderr
    # One writer's open for all three loads, and with embeddings the one read-only look at
    # the vectors' identity before anything is flattened.
    assert opened == ([True] if embedded else []) + [False]


def test_a_stopped_run_still_prints_a_json_summary_per_source(capsys):
    """Ctrl-C or SIGTERM during `ingest --json` over many sources (a cancelled CI job): stdout
    still holds one summary per source, the ones not done saying `interrupted`, so the CI
    recipe's table and `jq` have something to read; the exit code is 130."""
    import typer

    from flatten.cli.many import Outcomes
    from flatten.summary import Summary

    outcomes = Outcomes(as_json=True, quiet=True)
    done, under_way = Summary(command="ingest", corpus="a"), Summary(command="ingest", corpus="b")
    outcomes.summaries = [done, under_way]
    with pytest.raises(typer.Exit) as stopped, outcomes.stoppable("ingest"):
        outcomes.counts["loaded"] += 1
        outcomes.settle(done)
        raise KeyboardInterrupt
    assert stopped.value.exit_code == 130
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(s["corpus"], s["ok"]) for s in lines] == [("a", True), ("b", False)]
    assert lines[1]["error"]["reason"] == "interrupted"


def test_a_stop_before_any_source_ran_prints_the_json_failure(capsys):
    """A stop while the config is read and the plan made: `--json` still prints one summary."""
    from flatten.cli.loading import failure_summary

    with pytest.raises(KeyboardInterrupt), failure_summary("ingest", as_json=True):
        raise KeyboardInterrupt
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["error"]["reason"] == "interrupted"


@pytest.mark.parametrize(
    "args",
    [["ingest", "--sources", "{sources}", "--store", "{blocker}"],
     ["ingest", "--sources", "{sources}", "--out", "{blocker}"],
     ["index", "--manifests", "{manifests}", "--store", "{blocker}"]],
    ids=["store", "out", "manifests"],
)  # fmt: skip
def test_a_many_source_run_that_cannot_start_still_prints_its_json_failure(tmp_path, args):
    """A store or --out that cannot be used fails the run before any source: --json still
    prints one summary saying why (the CI recipe's table reads it), not an empty stdout."""
    write(tmp_path / "notes", {"a.md": "# A\n\nalpha\n"})
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"- root: {tmp_path / 'notes'}\n  corpus: notes\n")
    made = run_cli("ingest", "--sources", sources, "--out", tmp_path / "shard")
    assert made.code == 0, made.stderr
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    paths = {"sources": sources, "blocker": blocker, "manifests": tmp_path / "shard"}
    result = run_cli(*[a.format(**paths) for a in args], "--json")
    assert result.code == 1, result.stderr
    (summary,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert summary["ok"] is False and summary["error"]["reason"], summary
