"""Many sources in one run: 200 git repositories (docs from fixtures/, committed to local bare
repositories) ingested from one config: the first run, a run where nothing changed (every
repository skipped after one `git ls-remote`), a run after one repository changed; each with
--jobs 1 and --jobs 2, each in a fresh process of the real CLI. Then the same sources as
4 shards (`--shard i/4 --out`) loaded by `index --manifests`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
REPOS = 200
_GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}  # fmt: skip


@dataclass
class ShardRun:
    name: str
    jobs: int
    seconds: float
    code: int


def _git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True,
                   env={**os.environ, **_GIT_ENV}, capture_output=True)  # fmt: skip


def make_repositories(work: Path, count: int = REPOS) -> Path:
    """`count` bare repositories under work/shards/remotes, each with a few of the fixtures'
    markdown pages (a different mix each); a config listing them. Made once."""
    base = work / "shards"
    marker = base / f"{count}.complete"
    config = base / "docs-flatten.yaml"
    if marker.exists():
        return config
    shutil.rmtree(base, ignore_errors=True)
    pages = sorted(p for p in (PROJECT / "fixtures").rglob("*.md") if p.stat().st_size < 50_000)
    for i in range(count):
        tree = base / "work" / f"repo{i:03}"
        for k in range(4):
            page = pages[(i * 7 + k * 3) % len(pages)]
            target = tree / "docs" / f"{k}-{page.name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(page.read_text(encoding="utf-8") + f"\n\nRepository {i}.\n")
        _git("init", "-q", str(tree))
        _git("add", "-A", cwd=tree)
        _git("commit", "-q", "-m", "docs", cwd=tree)
        _git("clone", "-q", "--bare", str(tree), str(base / "remotes" / f"repo{i:03}.git"))
    entries = "".join(f"  - repo: {(base / 'remotes' / f'repo{i:03}.git').as_uri()}\n"
                      for i in range(count))  # fmt: skip
    config.write_text(f"sources:\n{entries}")
    marker.write_text("")
    return config


def change_one(work: Path, i: int, round_: int) -> None:
    tree = work / "shards" / "work" / f"repo{i:03}"
    (tree / "docs" / "0-changed.md").write_text(f"# Changed\n\nround {round_}\n")
    _git("add", "-A", cwd=tree)
    _git("commit", "-q", "-m", f"change {round_}", cwd=tree)
    _git("push", "-q", str(work / "shards" / "remotes" / f"repo{i:03}.git"), "HEAD", cwd=tree)


def _cli(*args: str | Path) -> tuple[float, int]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "flatten", *map(str, args)], cwd=PROJECT,
                          capture_output=True, text=True)  # fmt: skip
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
    return seconds, proc.returncode


def measure_shards(work: Path) -> list[ShardRun]:
    config = make_repositories(work)
    runs: list[ShardRun] = []
    for jobs in (1, 2):
        store = work / "shards" / f"store-j{jobs}"
        shutil.rmtree(store, ignore_errors=True)
        for name in ("first run", "nothing changed", "one repository changed"):
            if name == "one repository changed":
                change_one(work, 17, jobs)
            seconds, code = _cli("ingest", "--config", config, "--store", store, "--jobs",
                                 str(jobs), "-q")  # fmt: skip
            runs.append(ShardRun(f"ingest: {name}", jobs, seconds, code))
    out = work / "shards" / "artifacts"
    central = work / "shards" / "store-central"
    for path in (out, central):
        shutil.rmtree(path, ignore_errors=True)
    for name in ("first run", "nothing changed"):
        total = 0.0
        for i in range(1, 5):
            seconds, code = _cli("ingest", "--config", config, "--shard", f"{i}/4", "--out",
                                 out / f"shard-{i}", "--jobs", "2", "-q")  # fmt: skip
            total += seconds
        runs.append(ShardRun(f"4 shards one after another: {name}", 2, total, code))
        seconds, code = _cli("index", "--manifests", out, "--store", central, "-q")
        runs.append(ShardRun(f"index --manifests: {name}", 1, seconds, code))
    return runs
