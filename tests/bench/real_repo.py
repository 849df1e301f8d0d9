"""Flatten against the read-and-write floor on real repositories, built offline from PyPI alone.

Each repository is pinned source distributions unpacked side by side and committed to a fresh
git repository with a fixed date, so every machine builds the same files and the same commit.
Two shapes, since the cost of `--kind auto` depends on how much code there is to parse:
- code-heavy: eight docs-carrying projects whole (markdown, reST and text docs beside 14.5 MB of
  Python): ~3,000 files;
- docs-heavy: the shape of a documentation site's repository (the issue's fastapi tree: docs in
  many languages beside small example programs): fastapi's sdist whole (its ~490 docs examples,
  tests and package: 1,200 small Python files) beside the documentation trees alone of django,
  sphinx and docutils (reST and text): ~2,200 files, two thirds of the bytes docs.
The peer is `files-to-prompt` (plain concatenation of every text file), installed pinned into
a virtual environment of the bench's own. Commands run alternately, each in a fresh process,
and the median of the rounds is reported with its spread, in wall seconds and in CPU seconds
(user + system of the command and its workers: what holds when other work shares the machine).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SDISTS = (  # the code-heavy repository, each project whole
    "pip==26.3",
    "black==26.10.1",
    "scrapy==2.19.0",
    "markdown==3.11.3",
    "pymdown-extensions==13.1.2",
    "mkdocs==1.6.1",
    "flask==3.1.2",
    "markdown-it-py==4.3.0",
)
# The docs-heavy repository: project -> the folders kept of it (None: the whole sdist).
DOCS_SDISTS = {
    "fastapi==0.163.2": None,
    "django==5.2.19": ("docs",),
    "sphinx==9.0.4": ("doc",),
    "docutils==0.23": ("docs",),
}
PEER = ("files-to-prompt==0.6", "click==8.5.1")  # the peer and its one dependency, pinned
ROUNDS = 3
_FIXED_DATE = "2025-01-01T00:00:00+00:00"

Timer = Callable[[list[str], str], tuple[float, int, float]]  # wall s, peak RSS KiB, CPU s


@dataclass(frozen=True)
class BenchRepo:
    name: str  # its folder under the bench's work folder
    title: str  # how the report names it
    sdists: dict[str, tuple[str, ...] | None]  # pinned requirement -> folders kept (None: all)


CODE_HEAVY = BenchRepo("real-repo", "code-heavy", dict.fromkeys(SDISTS))
DOCS_HEAVY = BenchRepo("docs-repo", "docs-heavy", DOCS_SDISTS)
REPOS = (CODE_HEAVY, DOCS_HEAVY)


def _kept(member: str, folders: tuple[str, ...] | None) -> bool:
    """Whether an archive member (`<project>-<version>/<path>`) is in the kept folders."""
    inner = member.partition("/")[2]
    return folders is None or inner.split("/", 1)[0] in folders


def build_repo(work: Path, bench: BenchRepo = CODE_HEAVY) -> Path:
    """The unpacked sdists as one git repository (built once; a marker says it is whole)."""
    repo = work / bench.name
    marker = work / f"{bench.name}.complete"
    if marker.exists():
        return repo
    downloads = work / "sdists" / bench.name
    downloads.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
         "--no-binary", ":all:", "--dest", str(downloads), *bench.sdists],
        check=True,
    )  # fmt: skip
    if repo.exists():
        subprocess.run(["rm", "-rf", str(repo)], check=True)
    repo.mkdir(parents=True)
    folders = {_project(req): kept for req, kept in bench.sdists.items()}
    for archive in sorted(downloads.glob("*.tar.gz")):
        kept = folders[_project(archive.name.removesuffix(".tar.gz"))]
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if _kept(m.name, kept)]
            tar.extractall(repo, members=members, filter="data")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
        "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
        "GIT_AUTHOR_DATE": _FIXED_DATE, "GIT_COMMITTER_DATE": _FIXED_DATE,
    }  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "sdists"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    marker.write_text("")
    return repo


def _project(spec: str) -> str:
    """`Django==5.2.19` or `django-5.2.19` (an archive's name) -> `django`."""
    name = spec.split("==")[0] if "==" in spec else spec.rsplit("-", 1)[0]
    return name.lower().replace("_", "-")


def peer_command(work: Path) -> list[str]:
    """`files-to-prompt`, installed pinned into .bench/peer-venv on first use."""
    venv = work / "peer-venv"
    exe = venv / "bin" / "files-to-prompt"
    stamp = venv / f".{'-'.join(PEER)}"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *PEER], check=True
        )
        stamp.write_text("")
    return [str(exe)]


def flatten_command(repo: Path, kind: str, out: Path, workers: int = 0) -> list[str]:
    cmd = [sys.executable, "-m", "flatten", "flatten", "--root", str(repo), "--kind", kind]
    if workers:
        cmd += ["--workers", str(workers)]
    return [*cmd, "-q", "-o", str(out)]


@dataclass
class Timing:
    name: str
    median: float  # wall seconds
    low: float
    high: float
    cpu: float  # CPU seconds (user + system, workers included), median

    @property
    def spread(self) -> str:
        return f"{self.low:.2f}-{self.high:.2f}"


@dataclass
class PeerComparison:
    repo: str  # BenchRepo.title
    sdists: int
    files: int
    megabytes: float
    timings: list[Timing]

    def seconds(self, name: str) -> float:
        return next(t.median for t in self.timings if t.name == name)

    def cpu_seconds(self, name: str) -> float:
        return next(t.cpu for t in self.timings if t.name == name)


def compare(
    work: Path, timed: Timer, rounds: int = ROUNDS, bench: BenchRepo = CODE_HEAVY
) -> PeerComparison:
    """files-to-prompt, flatten --kind docs/auto and auto with 1 and 2 workers, alternately."""
    work = work.resolve()
    repo = build_repo(work, bench)
    out = work / f"{bench.name}-out"
    out.mkdir(exist_ok=True)
    commands = {
        "files-to-prompt": [*peer_command(work), str(repo), "-o", str(out / "peer.txt")],
        "flatten --kind docs": flatten_command(repo, "docs", out / "docs.jsonl"),
        "flatten --kind auto": flatten_command(repo, "auto", out / "auto.jsonl"),
        "auto --workers 1": flatten_command(repo, "auto", out / "auto-1.jsonl", 1),
        "auto --workers 2": flatten_command(repo, "auto", out / "auto-2.jsonl", 2),
    }
    samples: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, cmd in commands.items():
            seconds, _rss, used = timed(cmd, name)
            samples[name].append(seconds)
            cpu[name].append(used)
    listed = (
        subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True)
        .stdout.decode()
        .split("\0")[:-1]
    )
    megabytes = sum((repo / name).stat().st_size for name in listed) / 1e6
    timings = [Timing(name, statistics.median(s), min(s), max(s), statistics.median(cpu[name]))
               for name, s in samples.items()]  # fmt: skip
    return PeerComparison(bench.title, len(bench.sdists), len(listed), round(megabytes, 1),
                          timings)  # fmt: skip
