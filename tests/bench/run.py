"""`make bench`: flatten throughput on generated trees; prints a table and writes JSON.

Each measurement runs the real CLI in a fresh process. Peak RSS is the largest resident set of
any process in the run (the CLI or one of its workers), read from the kernel's rusage.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
WORDS = (
    "parcel",
    "carrier",
    "tracking",
    "event",
    "webhook",
    "timeline",
    "deploy",
    "cluster",
    "config",
    "token",
    "retry",
    "database",
    "schema",
    "index",
    "query",
    "cache",
    "latency",
    "request",
    "response",
    "handler",
    "service",
    "client",
    "install",
    "upgrade",
    "migrate",
    "rollback",
    "release",
    "version",
    "branch",
    "commit",
    "review",
    "build",
    "test",
)


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18))).capitalize() + "."


def _markdown(rng: random.Random, target: int) -> str:
    parts = [f"# {_sentence(rng)[:40]}\n"]
    size = 0
    while size < target:
        kind = rng.random()
        if kind < 0.15:
            block = f"{'#' * rng.randint(2, 4)} {_sentence(rng)[:50]}\n"
        elif kind < 0.30:
            body = "\n".join(f"    {rng.choice(WORDS)}({rng.randint(0, 99)})" for _ in range(6))
            block = f"```python\n# {rng.choice(WORDS)}\n{body}\n```\n"
        elif kind < 0.40:
            block = "\n".join(f"- {_sentence(rng)}" for _ in range(4)) + "\n"
        else:
            block = " ".join(_sentence(rng) for _ in range(4)) + "\n"
        parts.append(block)
        size += len(block)
    return "\n".join(parts)


def _code(rng: random.Random, target: int) -> str:
    parts = ['"""Generated module."""\n\nimport os\n']
    size = 0
    while size < target:
        name = f"{rng.choice(WORDS)}_{rng.randint(0, 9999)}"
        body = "\n".join(f"    x = {rng.choice(WORDS)!r} * {i}" for i in range(rng.randint(3, 12)))
        block = f"\ndef {name}(value):\n    '''{_sentence(rng)}'''\n{body}\n    return x\n"
        parts.append(block)
        size += len(block)
    return "".join(parts)


def generate_tree(root: Path, files: int, megabytes: float, docs_share: float = 0.5) -> Path:
    """A deterministic tree: `files` files, about `megabytes` MB, half markdown, half Python."""
    marker = root.with_name(root.name + ".complete")
    if marker.exists():
        return root
    rng = random.Random(files)
    per_file = int(megabytes * 1e6 / files)
    for i in range(files):
        folder = root / f"pkg{i % 40:02}" / f"sub{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        if rng.random() < docs_share:
            (folder / f"doc_{i:05}.md").write_text(_markdown(rng, per_file))
        else:
            (folder / f"mod_{i:05}.py").write_text(_code(rng, per_file))
    marker.write_text("")
    return root


@dataclass
class Measurement:
    name: str
    files: int
    megabytes: float
    kind: str
    seconds: float
    files_per_s: float
    mb_per_s: float
    peak_rss_mb: float
    slices: int


_RUNNER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)\n"
)


def measure(name: str, tree: Path, kind: str, out: Path) -> Measurement:
    report = out.with_suffix(".report.json")
    cmd = [
        sys.executable,
        "-m",
        "flatten",
        "flatten",
        "--root",
        str(tree),
        "--kind",
        kind,
        "-q",
        "-o",
        str(out),
        "--report",
        str(report),
    ]
    line = subprocess.run(
        [sys.executable, "-c", _RUNNER, *cmd],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT,
    ).stdout.split()
    seconds, rss_kb, code = float(line[0]), int(line[1]), int(line[2])
    if code != 0:
        raise SystemExit(f"{name}: flatten exited {code}")
    data = json.loads(report.read_text())
    files = data["filesSeen"]
    megabytes = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file()) / 1e6
    return Measurement(
        name,
        files,
        round(megabytes, 1),
        kind,
        round(seconds, 2),
        round(files / seconds),
        round(megabytes / seconds, 1),
        round(rss_kb / 1024, 1),
        data["slices"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", default=str(PROJECT / ".bench"))
    parser.add_argument("--json", default=None, help="where to write the results")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    trees = {
        "3k-40MB": generate_tree(work / "tree-3k", 3000, 40),
        "5k-66MB": generate_tree(work / "tree-5k", 5000, 66),
        "6k-80MB": generate_tree(work / "tree-6k", 6000, 80),
    }
    results = [
        measure(f"flatten {name} --kind {kind}", tree, kind, work / f"{name}-{kind}.jsonl")
        for name, tree in trees.items()
        for kind in ("docs", "auto")
    ]
    header = f"{'benchmark':<32} {'files':>6} {'MB':>6} {'s':>6} {'files/s':>8} {'MB/s':>6} {'RSS MB':>7} {'slices':>7}"  # noqa: E501
    print(header)
    print("-" * len(header))
    for m in results:
        print(
            f"{m.name:<32} {m.files:>6} {m.megabytes:>6} {m.seconds:>6} {m.files_per_s:>8} "
            f"{m.mb_per_s:>6} {m.peak_rss_mb:>7} {m.slices:>7}"
        )
    machine = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    out = Path(args.json) if args.json else work / "results.json"
    out.write_text(
        json.dumps({"machine": machine, "flatten": [asdict(m) for m in results]}, indent=2) + "\n"
    )
    print(f"\nJSON: {out}")


if __name__ == "__main__":
    main()
