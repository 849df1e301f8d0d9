"""Many sources in one run (issue 16, section 1): `ingest` over the configured sources with
--jobs, repositories skipped without cloning while their remote has not moved, --shard i/n with
--out and a manifest per shard, and `index --manifests DIR`. Real git repositories in temp
dirs, cloned through file://; a real store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flatten.errors import UsageError
from flatten.manifest import Entry, Manifest, SourceState, encode, read_manifest, write_manifest
from flatten.shards import Shard, parse_shard, pick, shard_of
from tests.conftest import PROJECT, git, run_cli, write


@pytest.fixture
def remotes(tmp_path: Path):
    """`make(n)`: n bare repositories (r0..), each with a docs page, and a config listing them;
    returns their bare paths. `change(i)` commits a change to repository i."""
    work = tmp_path / "work"

    def make(count: int, extra: str = "") -> list[Path]:
        bares = []
        for i in range(count):
            tree = work / f"r{i}"
            write(tree, {"docs/guide.md": f"# Guide {i}\n\nhow to use r{i}\n\n## More\n\ntext\n"})
            git(tree.parent, "init", "-q", str(tree))
            git(tree, "add", "-A")
            git(tree, "commit", "-q", "-m", "first")
            bare = tmp_path / "remotes" / f"r{i}.git"
            git(tmp_path, "clone", "-q", "--bare", str(tree), str(bare))
            bares.append(bare)
        entries = "".join(f"  - repo: {b.as_uri()}\n" for b in bares)
        (tmp_path / "docs-flatten.yaml").write_text(f"sources:\n{entries}{extra}")
        return bares

    return make


def change(tmp_path: Path, i: int, text: str = "revised") -> None:
    tree = tmp_path / "work" / f"r{i}"
    write(tree, {"docs/guide.md": f"# Guide {i}\n\n{text}\n"})
    git(tree, "commit", "-q", "-am", "change")
    git(tree, "push", "-q", str(tmp_path / "remotes" / f"r{i}.git"), "HEAD")


def lines(result) -> list[dict]:
    return [json.loads(x) for x in result.stdout.splitlines() if x.strip()]


def ingest(tmp_path: Path, *args: str):
    return run_cli("ingest", "--store", tmp_path / "store", *args, cwd=tmp_path, timeout=300)


def strip_objects(bare: Path) -> None:
    """Leave the refs (ls-remote still answers) but no objects: any clone now fails."""
    for path in (bare / "objects").rglob("*"):
        if path.is_file():
            path.unlink()


# --shard i/n: parsing and the share of each shard.


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "x", "1/2/3", "-1/2", "", "1 of 2"])
def test_a_bad_shard_is_a_usage_error_naming_the_form(text):
    with pytest.raises(UsageError) as caught:
        parse_shard(text)
    assert caught.value.reason == "bad-shard"


def test_a_shard_reads_as_written():
    assert parse_shard("2/4") == Shard(2, 4) and str(parse_shard(" 3 / 5 ")) == "3/5"


@given(st.lists(st.text(min_size=1, max_size=20), unique=True, max_size=60),
       st.integers(1, 12))  # fmt: skip
def test_shards_cover_every_source_once(keys, count):
    taken = [pick(keys, str, Shard(i, count)) for i in range(1, count + 1)]
    assert sorted(k for share in taken for k in share) == sorted(keys)


@given(st.lists(st.text(min_size=1, max_size=20), unique=True, min_size=1, max_size=80),
       st.integers(1, 10))  # fmt: skip
def test_one_more_shard_moves_only_sources_to_the_new_shard(keys, count):
    for key in keys:
        before, after = shard_of(key, count), shard_of(key, count + 1)
        assert after == before or after == count + 1


def test_adding_a_shard_moves_few_sources():
    keys = [f"corpus-{i}" for i in range(1000)]
    moved = sum(shard_of(k, 4) != shard_of(k, 5) for k in keys)
    assert 100 < moved < 300  # about 1/5, where `hash mod n` would move about 4/5


# The manifest: deterministic bytes, read back as written.


def test_a_manifest_is_deterministic_and_reads_back(tmp_path):
    state = SourceState("repo", "file:///x.git", "main", "a" * 40, "s" * 64, 3, "f" * 64)
    entries = (Entry("b", "b-1.jsonl", state), Entry("a", "a-1.jsonl", state))
    one = encode(Manifest("1/2", entries))
    assert one == encode(Manifest("1/2", entries[::-1]))
    path = write_manifest(tmp_path, Manifest("1/2", entries))
    assert path.name == "manifest-1-of-2.json" and path.read_bytes() == one
    back = read_manifest(path)
    assert [e.corpus for e in back.entries] == ["a", "b"] and back.entries[0].state == state


# ingest over the configured sources.


def test_sources_load_in_parallel_and_unchanged_repositories_are_not_cloned(tmp_path, remotes):
    bares = remotes(3)
    first = ingest(tmp_path, "--jobs", "2", "--json")
    assert first.code == 0, first.stderr
    rows = lines(first)
    assert [r["corpus"] for r in rows] == ["r0", "r1", "r2"]  # the config's order
    assert all(r["ok"] and r["upToDate"] is False and r["load"]["added"] == 1 for r in rows)
    for bare in bares:
        strip_objects(bare)  # a clone would fail now; ls-remote still answers
    again = ingest(tmp_path, "--jobs", "2", "--json")
    assert again.code == 0, again.stderr
    rows = lines(again)
    assert all(r["ok"] and r["upToDate"] is True and r["load"] is None for r in rows)
    assert [r["commit"] for r in rows] == [r["commit"] for r in lines(first)]
    text = ingest(tmp_path)
    assert text.code == 0 and "3 up to date (not cloned)" in text.stderr
    assert text.stderr.count("not cloned") == 4


def test_only_the_changed_repository_is_loaded_again(tmp_path, remotes):
    remotes(3)
    assert ingest(tmp_path, "-j", "2").code == 0
    change(tmp_path, 1)
    result = ingest(tmp_path, "-j", "2", "--json")
    assert result.code == 0, result.stderr
    rows = {r["corpus"]: r for r in lines(result)}
    assert [rows[c]["upToDate"] for c in ("r0", "r1", "r2")] == [True, False, True]
    assert rows["r1"]["load"]["updated"] == 1
    found = run_cli("search", "revised", "--store", tmp_path / "store", cwd=tmp_path)
    assert found.code == 0 and "r1" in found.stdout


def test_a_changed_setting_flattens_again(tmp_path, remotes):
    remotes(2)
    assert ingest(tmp_path).code == 0
    config = tmp_path / "docs-flatten.yaml"
    config.write_text(config.read_text() + "flatten:\n  max-chars: 400\n")
    rows = lines(ingest(tmp_path, "--json"))
    assert [r["upToDate"] for r in rows] == [False, False]


def test_another_load_of_the_corpus_forgets_its_state(tmp_path, remotes):
    remotes(2)
    assert ingest(tmp_path).code == 0
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x.md#1", "source": "x.md", "title": "x",
                                 "content": "other words", "ordinal": 1}) + "\n")  # fmt: skip
    loaded = run_cli("index", other, "--corpus", "r0", "--store", tmp_path / "store",
                     "--max-delete", "100%", cwd=tmp_path)  # fmt: skip
    assert loaded.code == 0, loaded.stderr
    rows = {r["corpus"]: r for r in lines(ingest(tmp_path, "--json"))}
    assert (rows["r0"]["upToDate"], rows["r1"]["upToDate"]) == (False, True)


def test_an_unreachable_repository_fails_alone(tmp_path, remotes):
    remotes(2, extra=f"  - repo: {(tmp_path / 'gone.git').as_uri()}\n")
    result = ingest(tmp_path, "-j", "2", "--json")
    assert result.code == 1 and "Traceback" not in result.stderr
    assert "1 of 3 sources failed" in result.stderr and "repository not found" in result.stderr
    rows = lines(result)
    assert [r["ok"] for r in rows] == [True, True, False]
    assert rows[2]["error"]["reason"] == "repo-not-found"


def test_sources_come_from_a_file_too(tmp_path, remotes):
    remotes(2)
    listed = tmp_path / "list.yaml"
    shutil.move(tmp_path / "docs-flatten.yaml", listed)
    result = ingest(tmp_path, "--sources", listed, "--json")
    assert result.code == 0, result.stderr
    assert [r["corpus"] for r in lines(result)] == ["r0", "r1"]
    listed.write_text("- repo: x\n  kindd: docs\n")
    bad = ingest(tmp_path, "--sources", listed)
    assert bad.code == 2 and "sources[0].kindd: not a setting" in bad.stderr


@pytest.mark.parametrize("shard", ["0/3", "4/3", "two/3", "1/0"])
def test_a_bad_shard_on_the_command_line_fails_before_anything_runs(tmp_path, remotes, shard):
    remotes(1)
    result = ingest(tmp_path, "--shard", shard, "--out", tmp_path / "out")
    assert result.code == 2 and "--shard" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "store").exists()


# Shards: each writes JSONL and a manifest; index --manifests loads them all.


def run_shards(tmp_path: Path, count: int, *args: str) -> list:
    results = []
    for i in range(1, count + 1):
        out = tmp_path / "artifacts" / f"shard-{i}"
        results.append(ingest(tmp_path, "--shard", f"{i}/{count}", "--out", out, *args))
    return results


def index_manifests(tmp_path: Path, *args: str):
    return run_cli("index", "--manifests", tmp_path / "artifacts", "--store",
                   tmp_path / "central", *args, cwd=tmp_path, timeout=300)  # fmt: skip


def test_shards_write_manifests_that_one_index_run_loads(tmp_path, remotes):
    remotes(5)
    assert all(r.code == 0 for r in run_shards(tmp_path, 3))
    manifests = sorted((tmp_path / "artifacts").rglob("manifest-*.json"))
    assert [m.name for m in manifests] == [f"manifest-{i}-of-3.json" for i in (1, 2, 3)]
    corpora = [e.corpus for m in manifests for e in read_manifest(m).entries]
    assert sorted(corpora) == ["r0", "r1", "r2", "r3", "r4"]
    entry = next(e for m in manifests for e in read_manifest(m).entries)
    assert len(entry.state.commit) == 40 and entry.state.records == 2
    assert entry.state.ref == "trunk" and len(entry.state.sha256) == 64
    before = [m.read_bytes() for m in manifests]

    loaded = index_manifests(tmp_path, "--json")
    assert loaded.code == 0, loaded.stderr
    assert sorted(r["corpus"] for r in lines(loaded)) == sorted(corpora) and not any(
        r["upToDate"] for r in lines(loaded)
    )
    again = index_manifests(tmp_path, "--json")
    assert all(r["upToDate"] and r["load"] is None for r in lines(again))

    # The next CI run restores the artifacts: nothing moved, so nothing is cloned or loaded.
    for bare in (tmp_path / "remotes").iterdir():
        strip_objects(bare)
    assert all(r.code == 0 for r in run_shards(tmp_path, 3))
    assert [m.read_bytes() for m in manifests] == before  # deterministic bytes
    assert all(r["upToDate"] for r in lines(index_manifests(tmp_path, "--json")))


def test_a_changed_repository_reloads_only_its_corpus(tmp_path, remotes):
    remotes(4)
    run_shards(tmp_path, 2)
    assert index_manifests(tmp_path).code == 0
    change(tmp_path, 2)
    assert all(r.code == 0 for r in run_shards(tmp_path, 2))
    rows = {r["corpus"]: r for r in lines(index_manifests(tmp_path, "--json"))}
    assert {c for c, r in rows.items() if not r["upToDate"]} == {"r2"}
    assert rows["r2"]["load"]["updated"] == 1


def test_a_truncated_jsonl_fails_its_corpus_and_the_others_load(tmp_path, remotes):
    remotes(3)
    run_shards(tmp_path, 1)
    cut = sorted((tmp_path / "artifacts").rglob("r1-*.jsonl"))[0]
    cut.write_bytes(cut.read_bytes()[:-30])
    result = index_manifests(tmp_path, "--json")
    assert result.code == 1 and "Traceback" not in result.stderr
    rows = {r["corpus"]: r for r in lines(result)}
    assert rows["r1"]["ok"] is False and rows["r1"]["error"]["reason"] == "checksum-mismatch"
    assert "corpus 'r1'" in result.stderr and "1 of 3 sources failed" in result.stderr
    assert rows["r0"]["ok"] and rows["r2"]["ok"] and rows["r0"]["load"]["added"] == 1
    listed = run_cli("sources", "--store", tmp_path / "central", cwd=tmp_path)
    assert "r0" in listed.stdout and "r1" not in listed.stdout


def test_a_broken_manifest_fails_alone(tmp_path, remotes):
    remotes(2)
    run_shards(tmp_path, 1)
    broken = tmp_path / "artifacts" / "other" / "manifest-1-of-1.json"
    broken.parent.mkdir()
    broken.write_text('{"schema": 1, "sources": [{"corpus": "x"}]}')
    result = index_manifests(tmp_path, "--json")
    assert result.code == 1 and "bad-manifest" in result.stdout and "Traceback" not in result.stderr
    assert sorted(r["corpus"] for r in lines(result) if r["ok"]) == ["r0", "r1"]


def test_the_same_corpus_in_two_manifests_is_not_loaded(tmp_path, remotes):
    remotes(2)
    run_shards(tmp_path, 1)
    shutil.copytree(tmp_path / "artifacts" / "shard-1", tmp_path / "artifacts" / "copy")
    result = index_manifests(tmp_path, "--json")
    assert result.code == 1 and "shared-corpus" in result.stdout
    assert not any(r["ok"] for r in lines(result))


def test_a_missing_or_empty_manifest_dir_is_a_usage_error(tmp_path):
    missing = index_manifests(tmp_path)
    assert missing.code == 2 and "no such directory" in missing.stderr
    assert "Traceback" not in missing.stderr
    (tmp_path / "artifacts").mkdir()
    empty = index_manifests(tmp_path, "--json")
    assert empty.code == 2 and json.loads(empty.stdout)["error"]["reason"] == "manifests-missing"
    both = run_cli("index", "x.jsonl", "--manifests", tmp_path / "artifacts", cwd=tmp_path)
    assert both.code == 2 and "give no PATH" in both.stderr


def test_a_source_gone_from_a_shard_leaves_its_artifact(tmp_path, remotes):
    remotes(3)
    run_shards(tmp_path, 1)
    out = tmp_path / "artifacts" / "shard-1"
    assert len(list(out.glob("*.jsonl"))) == 3
    config = tmp_path / "docs-flatten.yaml"
    config.write_text("\n".join(config.read_text().splitlines()[:-1]) + "\n")  # drop r2
    assert run_shards(tmp_path, 1)[0].code == 0
    assert sorted(p.name[:2] for p in out.glob("*.jsonl")) == ["r0", "r1"]


def test_the_github_matrix_example_runs_one_job_per_shard_then_one_index_job():
    from ruamel.yaml import YAML

    flow = YAML(typ="safe").load((PROJECT / "examples/ci/github-actions-shards.yml").read_text())
    shard, index = flow["jobs"]["shard"], flow["jobs"]["index"]
    shards = shard["strategy"]["matrix"]["shard"]
    runs = " ".join(s.get("run", "") for s in shard["steps"])
    assert "--shard ${{ matrix.shard }}/" + str(len(shards)) in runs and "--out" in runs
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in shard["steps"])
    assert index["needs"] == "shard"
    assert "index --manifests" in " ".join(s.get("run", "") for s in index["steps"])
