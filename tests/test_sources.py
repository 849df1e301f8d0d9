"""Sources against real git repositories cloned through file:// (and smart HTTP on loopback)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from flatten import FlattenOptions, RunReport, flatten_repo, flatten_root
from flatten.errors import SourceError, UsageError
from flatten.sources import list_tree
from flatten.sources.gitcmd import strip_credentials
from flatten.sources.repo import validate_subdir
from tests.conftest import git, run_cli, write
from tests.githttp import serve_git


def flat(records) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for record in records:
        out.setdefault(record.source, []).append(record.to_dict())
    return out


@pytest.fixture
def origin(make_repo):
    repo = make_repo()
    first = repo.commit({"README.md": "# Project\nv1\n", "docs/guide.md": "# Guide\none\n"})
    git(repo.path, "tag", "v1.0")
    repo.commit({"README.md": "# Project\nv2\n"}, "v2")
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.commit({"docs/feature.md": "# Feature\nnew\n"}, "feature")
    git(repo.path, "checkout", "-q", "trunk")
    repo.first = first
    return repo


def test_default_branch_is_the_remotes_not_main(origin):
    report = RunReport()
    docs = flat(flatten_repo(origin.url, report=report))
    assert set(docs) == {"README.md", "docs/guide.md"}
    record = docs["README.md"][0]
    assert record["ref"] == "trunk"
    assert record["commit"] == git(origin.path, "rev-parse", "trunk")
    assert record["repoUrl"] == origin.url
    assert "v2" in record["content"]


def test_branch_tag_and_commit_sha_refs(origin):
    assert "docs/feature.md" in flat(flatten_repo(origin.url, "feature"))
    tagged = flat(flatten_repo(origin.url, "v1.0"))["README.md"][0]
    assert "v1" in tagged["content"] and tagged["ref"] == "v1.0"
    by_sha = flat(flatten_repo(origin.url, origin.first))["README.md"][0]
    assert by_sha["commit"] == origin.first and "v1" in by_sha["content"]
    short = flat(flatten_repo(origin.url, origin.first[:10]))["README.md"][0]
    assert short["commit"] == origin.first


def test_local_path_works_like_a_file_url(origin):
    assert "README.md" in flat(flatten_repo(str(origin.path)))


def test_missing_ref_names_the_ref_and_lists_some(origin):
    with pytest.raises(SourceError) as err:
        list(flatten_repo(origin.url, "no-such-branch"))
    assert err.value.reason == "ref-not-found"
    assert "trunk" in (err.value.hint or "")


def test_missing_repository_is_repo_not_found(tmp_path):
    with pytest.raises(SourceError) as err:
        list(flatten_repo((tmp_path / "nope.git").as_uri()))
    assert err.value.reason == "repo-not-found"


def test_empty_repository_says_so(make_repo):
    with pytest.raises(SourceError) as err:
        list(flatten_repo(make_repo().url))
    assert err.value.reason == "empty-repo"


def test_subdir_limits_the_walk_and_keeps_repository_paths(origin):
    assert set(flat(flatten_repo(origin.url, subdir="docs"))) == {"docs/guide.md"}


@pytest.mark.parametrize("bad", ["/etc", "../outside", "docs/../../x", "C:\\x"])
def test_subdir_may_not_leave_the_repository(bad):
    with pytest.raises(UsageError):
        validate_subdir(bad)


def test_clone_temp_dir_is_removed_after_success_and_failure(origin, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    list(flatten_repo(origin.url))
    with pytest.raises(SourceError):
        list(flatten_repo(origin.url, subdir="missing"))
    assert list((tmp_path / "tmp").iterdir()) == []


def test_lfs_pointers_submodules_and_outside_symlinks_are_skipped_with_reasons(make_repo, tmp_path):
    sub = make_repo("sub")
    sub.commit({"README.md": "# Sub\n"})
    repo = make_repo("main")
    outside = tmp_path / "secret.md"
    outside.write_text("# Outside\nshould never be read\n")
    write(
        repo.path,
        {
            "README.md": "# Main\n",
            "model.md": "version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 10\n",
        },
    )
    os.symlink(outside, repo.path / "leak.md")
    os.symlink("README.md", repo.path / "alias.md")
    git(
        repo.path,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        sub.url,
        "vendored-sub",
    )
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-q", "-m", "all")
    report = RunReport()
    docs = flat(flatten_root(repo.path, report=report))
    assert set(docs) == {"README.md", "alias.md"}
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["model.md"] == "lfs-pointer"
    assert reasons["leak.md"] == "symlink-outside-root"
    assert reasons["vendored-sub/"] == "submodule"
    assert not any("should never" in r["content"] for rs in docs.values() for r in rs)


def test_git_listing_and_walk_agree_and_respect_nested_gitignore(make_repo, tmp_path):
    files = {
        ".gitignore": "*.log\nbuild-out/\n!keep.log\n",
        "docs/.gitignore": "drafts/\n/local.md\n",
        "docs/a.md": "a",
        "docs/local.md": "x",
        "docs/drafts/d.md": "d",
        "docs/sub/local.md": "s",
        "app.log": "l",
        "keep.log": "k",
        "build-out/x.md": "b",
        "node_modules/p/README.md": "n",
    }
    repo = make_repo()
    write(repo.path, files)
    plain = tmp_path / "plain"
    write(plain, files)
    expected = [".gitignore", "docs/.gitignore", "docs/a.md", "docs/sub/local.md", "keep.log"]
    for root, method in ((repo.path, "git ls-files"), (plain, "walk")):
        used, entries = list_tree(root)
        assert used == method
        kept = [e.rel_path for e in entries if hasattr(e, "rel_path")]
        assert kept == expected, method


def test_root_that_its_repository_ignores_is_walked(make_repo):
    repo = make_repo()
    repo.commit({".gitignore": "site/\n", "README.md": "# R\n"})
    write(repo.path, {"site/index.md": "# Built\n"})
    assert [r.source for r in flatten_root(repo.path / "site")] == ["index.md"]


def provenance_of(root: Path) -> dict[str, tuple]:
    """Each document's (commit, ref, repoPath, dirty), by source."""
    return {r.source: (r.provenance.commit, r.provenance.ref, r.repo_path, r.dirty)
            for r in flatten_root(root)}  # fmt: skip


def test_files_of_an_ignored_folder_are_not_attributed_to_the_commit(make_repo):
    # Neither a folder git ignores (a built site/) nor one inside an ignored folder is in the
    # commit: a permalink to their files would be a 404.
    repo = make_repo()
    head = repo.commit({".gitignore": "site/\nbuild/\n", "README.md": "# R\n"})
    write(repo.path, {"site/index.md": "# Built\n", "site/sub/deep.md": "# Deep\n",
                      "build/docs/a.md": "# A\n"})  # fmt: skip
    assert provenance_of(repo.path / "site") == {
        "index.md": (head, "trunk", "site/index.md", True),
        "sub/deep.md": (head, "trunk", "site/sub/deep.md", True),
    }
    assert provenance_of(repo.path / "build" / "docs") == {
        "a.md": (head, "trunk", "build/docs/a.md", True)}  # fmt: skip
    # A tracked file that an ignore pattern matches (added with -f) is in the commit; the
    # ignored files beside it are not listed.
    git(repo.path, "add", "-f", "site/index.md")
    head = repo.commit({}, "force-add")
    assert provenance_of(repo.path / "site") == {
        "index.md": (head, "trunk", "site/index.md", False)}  # fmt: skip


def test_provenance_per_file_and_branch_states(make_repo, tmp_path):
    repo = make_repo()
    first = repo.commit({"docs/a.md": "# A\n", "docs/b.md": "# B\n"})
    write(repo.path, {"docs/b.md": "# B\nedited\n", "docs/c.md": "# C\n"})
    assert provenance_of(repo.path / "docs") == {
        "a.md": (first, "trunk", "docs/a.md", False),
        "b.md": (first, "trunk", "docs/b.md", True),
        "c.md": (first, "trunk", "docs/c.md", True),
    }
    second = repo.commit({}, "all")
    git(repo.path, "tag", "trunk")  # a tag named as the branch: the ref is still `trunk`
    assert provenance_of(repo.path / "docs")["a.md"] == (second, "trunk", "docs/a.md", False)
    git(repo.path, "checkout", "-q", "--detach", first)  # detached: no branch to name
    assert provenance_of(repo.path / "docs")["a.md"] == (first, None, "docs/a.md", False)
    git(repo.path, "checkout", "-q", "trunk")
    # A linked work tree (its .git is a file) on its own branch.
    git(repo.path, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    assert provenance_of(tmp_path / "side" / "docs")["c.md"] == (second, "side", "docs/c.md",
                                                                 False)  # fmt: skip
    # No commit yet: nothing to cite.
    unborn = make_repo("unborn")
    write(unborn.path, {"a.md": "# A\n"})
    assert provenance_of(unborn.path) == {"a.md": (None, None, None, False)}


def test_a_branch_name_that_is_not_utf8_is_left_out_not_a_crash(make_repo):
    repo = make_repo()
    head = repo.commit({"a.md": "# A\n"})
    subprocess.run(["git", "-C", str(repo.path), "checkout", "-q", "-b", b"br\xff"], check=True)
    assert provenance_of(repo.path) == {"a.md": (head, None, "a.md", False)}
    result = run_cli("flatten", "--root", repo.path, "-q")
    assert result.code == 0 and result.records()[0]["commit"] == head


def test_folders_git_has_no_work_tree_for_carry_no_commit(make_repo, tmp_path):
    repo = make_repo()
    repo.commit({"a.md": "# A\n"})
    # Inside .git, and a bare repository: files, but none of them the commit's.
    write(repo.path / ".git", {"notes/n.md": "# N\n"})
    assert provenance_of(repo.path / ".git" / "notes") == {"n.md": (None, None, None, False)}
    git(tmp_path, "clone", "-q", "--bare", repo.url, "bare.git")
    write(tmp_path / "bare.git", {"info/readme.md": "# Bare\n"})
    assert provenance_of(tmp_path / "bare.git" / "info") == {
        "readme.md": (None, None, None, False)}  # fmt: skip


def test_git_processes_a_root_run_starts(make_repo, tmp_path, git_spy):
    """Four git processes in a work tree (listing, prefix, status, origin), all started at once;
    none in a folder outside any repository, where each used to fail."""
    env = git_spy.env
    repo = make_repo()
    repo.commit({"docs/a.md": "# A\n"})
    write(tmp_path / "plain", {"a.md": "# A\n"})

    def asked(root: Path) -> list[str]:
        git_spy.clear()
        result = run_cli("flatten", "--root", root, "-q", env=env)
        assert result.code == 0, result.stderr
        return sorted(line.split()[2] for line in git_spy.calls())

    assert asked(repo.path / "docs") == ["ls-files", "remote", "rev-parse", "status"]
    assert asked(tmp_path / "plain") == []
    # GIT_DIR points git at a repository that no `.git` above the folder names: git is asked.
    git_spy.clear()
    result = run_cli("flatten", "--root", tmp_path / "plain", "-q",
                     env={**env, "GIT_DIR": str(repo.path / ".git")})  # fmt: skip
    assert result.code == 0 and git_spy.calls()


def test_a_repository_git_will_not_trust_is_walked_without_provenance(make_repo):
    repo = make_repo()
    repo.commit({".gitignore": "gen/\n", "a.md": "# A\n"})
    write(repo.path, {"gen/g.md": "# G\n"})
    result = run_cli("flatten", "--root", repo.path, "-q",
                     env={"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"})  # git's own switch  # fmt: skip
    assert result.code == 0, result.stderr
    records = result.records()
    assert [r["source"] for r in records] == ["a.md"]  # the walk applies .gitignore too
    assert all(r["commit"] is None and "dirty" not in r for r in records)


def test_gitignored_and_noise_directories_are_reported_in_walk_mode(tmp_path):
    write(
        tmp_path,
        {".gitignore": "gen/\n", "gen/a.md": "a", "node_modules/x.md": "x", "a.md": "# A\n"},
    )
    report = RunReport()
    list(flatten_root(tmp_path, report=report))
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["gen/"] == "gitignored" and reasons["node_modules/"] == "vendored"


def test_root_inside_a_work_tree_records_commit_and_origin(make_repo):
    repo = make_repo()
    repo.commit({"a.md": "# A\n"})
    git(repo.path, "remote", "add", "origin", "https://user:hunter2@example.invalid/o/r.git")
    record = next(flatten_root(repo.path)).to_dict()
    assert record["repoUrl"] == "https://example.invalid/o/r.git"
    assert record["commit"] == git(repo.path, "rev-parse", "HEAD") and record["ref"] == "trunk"


def test_credentials_are_stripped_from_urls():
    assert strip_credentials("https://me:tok@host/r.git") == "https://host/r.git"
    assert strip_credentials("git@github.com:o/r.git") == "git@github.com:o/r.git"


def test_clone_that_needs_auth_fails_clearly_then_works_with_a_token(origin, tmp_path):
    bare = tmp_path / "srv"
    bare.mkdir()
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(origin.path), str(bare / "r.git")], check=True
    )
    token = "tok-" + "s3cr3t" * 4
    with serve_git(bare, token=token) as (base, seen):
        url = f"{base}/r.git"
        with pytest.raises(SourceError) as err:
            list(flatten_repo(url))
        assert err.value.reason == "auth-required"
        assert "--token-env" in (err.value.hint or "")
        os.environ["DF_TEST_TOKEN"] = token
        try:
            report = RunReport()
            records = list(flatten_repo(url, token_env="DF_TEST_TOKEN", report=report))
        finally:
            del os.environ["DF_TEST_TOKEN"]
        assert records and all(token not in str(r.to_dict()) for r in records)
        assert token not in str(report.to_dict())
        assert any(h.startswith("Basic ") for h in seen)


def test_options_reject_a_bad_kind():
    with pytest.raises(UsageError):
        FlattenOptions(kind="everything")


def _skips_as_user(tree: Path, uid: int | None, gid: int | None) -> dict[str, str]:
    """Flatten `tree` in a forked child (as `uid` if given); return its skip reasons."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: everything it needs is imported already
        code = 0
        try:
            os.close(read_end)
            if uid is not None:
                os.setgid(gid)
                os.setuid(uid)
            report = RunReport()
            list(flatten_root(tree, report=report))
            payload = json.dumps({s.path: s.reason for s in report.skipped}).encode()
            os.write(write_end, payload)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return json.loads(data)


def test_unreadable_file_is_skipped_with_a_reason():
    tree = Path(tempfile.mkdtemp(prefix="df-perm-"))
    try:
        tree.chmod(0o755)
        write(tree, {"a.md": "# A\n", "b.md": "# B\n"})
        (tree / "a.md").chmod(0o644)
        (tree / "b.md").chmod(0)
        # Root reads every file, so as root the child drops to an unprivileged user.
        nobody = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
        uid, gid = (nobody.pw_uid, nobody.pw_gid) if nobody else (None, None)
        assert _skips_as_user(tree, uid, gid) == {"b.md": "unreadable"}
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def test_fifo_in_the_tree_is_skipped_not_waited_on(tmp_path):
    write(tmp_path, {"a.md": "# A\n"})
    os.mkfifo(tmp_path / "pipe.md")
    report = RunReport()
    assert [r.source for r in flatten_root(tmp_path, report=report)] == ["a.md"]
    assert {s.path: s.reason for s in report.skipped}["pipe.md"] == "not-a-file"


def test_file_growing_while_read_never_crashes_the_run(tmp_path):
    import threading

    write(tmp_path, {"a.md": "# A\n"})
    stop = threading.Event()

    def grow() -> None:
        with open(tmp_path / "a.md", "a") as f:
            while not stop.is_set():
                f.write("more text\n")
                f.flush()

    thread = threading.Thread(target=grow)
    thread.start()
    try:
        report = RunReport()
        try:
            records = list(
                flatten_root(tmp_path, FlattenOptions(max_file_size=50_000_000), report=report)
            )
        except Exception as exc:  # only "nothing kept" is acceptable, with the reason
            records = []
            assert getattr(exc, "reason", None) == "nothing-kept"
    finally:
        stop.set()
        thread.join()
    reasons = {s.path: s.reason for s in report.skipped}
    assert records or reasons.get("a.md") in {"changed-while-reading", "too-large"}
    if records:  # a consistent snapshot: whole lines only
        assert all(line in ("# A", "more text") for line in records[0].content.split("\n"))


def test_reading_a_checkout_leaves_its_index_alone(make_repo):
    # `git status` refreshes stale stat data in .git/index (taking index.lock to write it) unless
    # optional locks are off: a `git commit` landing meanwhile in a CI step would fail.
    repo = make_repo()
    repo.commit({"docs/a.md": "# A\n"})
    index = repo.path / ".git" / "index"
    os.utime(repo.path / "docs" / "a.md", ns=(1, 1))  # same content, stale stat data
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    assert provenance_of(repo.path / "docs")["a.md"][3] is False  # clean: content unchanged
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
