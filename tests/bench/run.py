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

# The project this file sits in comes first: the index and hybrid parts import its code in
# process, so a base checkout measured with another checkout's venv measures itself.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus
import crawl_bench
import devset
import index_bench
import mcp_bench
import real_repo
import shards_bench
import store_bench
import vector_bench

PROJECT = Path(__file__).resolve().parents[2]


def generate_tree(root: Path, files: int, megabytes: float, mix: str = "docs+python") -> Path:
    """A deterministic tree of `files` files and about `megabytes` MB.

    `docs+python`: half markdown, half Python. `mixed`: markdown, Python, Go, TypeScript, Rust,
    Java, Terraform, YAML manifests and shell in realistic shares.
    """
    marker = root.with_name(root.name + ".complete")
    if marker.exists():
        return root
    rng = random.Random(files)
    per_file = int(megabytes * 1e6 / files)
    if mix == "mixed":
        suffixes = list(corpus.MIXED)
        weights = [share for _, share in corpus.MIXED.values()]
    else:
        suffixes, weights = [".md", ".py"], [0.5, 0.5]
    for i in range(files):
        folder = root / f"pkg{i % 40:02}" / f"sub{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        suffix = rng.choices(suffixes, weights)[0]
        generator = corpus.MIXED[suffix][0]
        (folder / f"f{i:05}{suffix}").write_text(generator(rng, per_file))
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
    "used = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(time.perf_counter() - t, used.ru_maxrss, code, used.ru_utime + used.ru_stime)\n"
)


def timed(cmd: list[str], name: str) -> tuple[float, int, float]:
    """Run a command in a fresh process: wall seconds, the peak RSS (KiB) of its largest
    process (the command or one of its workers), and the CPU seconds (user + system) of the
    command and its workers, the figure that holds on a machine other work shares."""
    line = subprocess.run(
        [sys.executable, "-c", _RUNNER, *cmd], capture_output=True, text=True, check=True,
        cwd=PROJECT,
    ).stdout.split()  # fmt: skip
    seconds, rss_kb, code, cpu = float(line[0]), int(line[1]), int(line[2]), float(line[3])
    if code != 0:
        raise SystemExit(f"{name}: exited {code}")
    return seconds, rss_kb, cpu


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
    seconds, rss_kb, _cpu = timed(cmd, name)
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


@dataclass
class SliceRate:
    format: str
    files: int
    megabytes: float
    seconds: float
    mb_per_s_per_core: float
    slices: int


_FORMATS = {  # benchmark name -> (slicer format, language, generator)
    "markdown": ("markdown", None, corpus.markdown),
    "python": ("code", "python", corpus.python),
    "go": ("code", "go", corpus.go),
    "typescript": ("code", "typescript", corpus.typescript),
    "rust": ("code", "rust", corpus.rust),
    "java": ("code", "java", corpus.java),
    "terraform": ("terraform", "hcl", corpus.terraform),
    "yaml": ("yaml", None, corpus.yaml),
    "shell": ("shell", "bash", corpus.shell),
    "text windows": ("text", None, corpus.markdown),
}


def slicing_rates(files: int = 150, size: int = 13_000) -> list[SliceRate]:
    """Single-threaded slicing throughput per format, in this process (MB/s per core)."""
    from slicers import SliceOptions, slice_text

    rates = []
    for name, (fmt, lang, generator) in _FORMATS.items():
        rng = random.Random(name)
        texts = [generator(rng, size) for _ in range(files)]
        slice_text(fmt, texts[0], "warm-up", SliceOptions(), lang=lang)  # load the grammar
        started = time.perf_counter()
        count = sum(
            len(slice_text(fmt, t, f"f{i}", SliceOptions(), lang=lang).slices)
            for i, t in enumerate(texts)
        )
        seconds = time.perf_counter() - started
        megabytes = sum(len(t.encode()) for t in texts) / 1e6
        rates.append(
            SliceRate(
                name,
                files,
                round(megabytes, 1),
                round(seconds, 2),
                round(megabytes / seconds, 1),
                count,
            )
        )
    return rates


def print_table(columns: list[tuple[str, int]], rows: list[tuple[object, ...]]) -> None:
    """A header, a rule, and the rows: the first column left-aligned, the rest right-aligned."""

    def line(cells: tuple[object, ...]) -> str:
        (first, width), *rest = zip(cells, [w for _, w in columns], strict=True)
        return " ".join([f"{first!s:<{width}}", *(f"{c!s:>{w}}" for c, w in rest)])

    header = line(tuple(title for title, _ in columns))
    print(header)
    print("-" * len(header))
    for row in rows:
        print(line(row))


def print_peer(peer: real_repo.PeerComparison) -> None:
    """One real repository: each command beside the floor (files-to-prompt) it is held to."""
    floor = peer.seconds("files-to-prompt")
    print(
        f"\nreal repository, {peer.repo} ({peer.sdists} pinned sdists, {peer.files:,} files, "
        f"{peer.megabytes} MB), median of {real_repo.ROUNDS} alternating runs"
    )
    cpu_floor = peer.cpu_seconds("files-to-prompt")
    print_table(
        [("command", 30), ("s", 6), ("spread s", 10), ("x peer", 7), ("CPU s", 6),
         ("x peer CPU", 10)],
        [(t.name, f"{t.median:.2f}", t.spread, f"{t.median / floor:.2f}", f"{t.cpu:.2f}",
          f"{t.cpu / cpu_floor:.2f}") for t in peer.timings],
    )  # fmt: skip
    scaling = peer.seconds("auto --workers 1") / peer.seconds("auto --workers 2")
    cost = peer.cpu_seconds("auto --workers 2") / peer.cpu_seconds("auto --workers 1")
    print(f"--kind auto, 2 workers vs 1: {scaling:.2f}x faster, for {cost:.2f}x the CPU")


def print_crawl(crawled: crawl_bench.CrawlMeasurement) -> None:
    print(
        f"\ncrawl: {crawled.pages} pages in {crawled.seconds} s = {crawled.pages_per_s} pages/s "
        f"(concurrency 4, loopback), extraction {crawled.extract_mb_per_s} MB/s, "
        f"peak RSS {crawled.peak_rss_mb} MB"
    )


def print_index(runs: list[index_bench.IndexMeasurement]) -> None:
    print()
    print_table(
        [("index", 12), ("slices", 8), ("load s", 7), ("slices/s", 9), ("reload s", 9),
         ("reload %", 9), ("p50 ms", 7), ("p95 ms", 7)],
        [("lexical", m.slices, m.load_seconds, m.slices_per_s, m.reload_seconds,
          f"{m.reload_share * 100:.1f}%", m.p50_ms, m.p95_ms) for m in runs],
    )  # fmt: skip


def devset_scores() -> dict[str, devset.Score]:
    """The httpx dev set flattened from the repository and crawled from the built site."""
    scores = {}
    if (devset.DEVSET / "questions.jsonl").exists():
        scores["httpx repo --kind docs"] = devset.score(from_site=False)
        if devset.SITE.is_dir():
            scores["httpx site --url"] = devset.score(from_site=True)
    return scores


def print_devset(scores: dict[str, devset.Score]) -> None:
    if not scores:
        print("\ndev set: skipped (../shared/eval/httpx-docs is absent)")
        return
    print()
    print_table(
        [("dev set (lexical)", 24), ("questions", 10), (f"top {devset.CUTOFF}", 6), ("at 1", 5)],
        [(name, s.questions, s.top, s.first) for name, s in scores.items()],
    )


def print_hybrid(runs: list[vector_bench.VectorMeasurement]) -> None:
    print()
    print_table(
        [("hybrid 384d", 12), ("slices", 8), ("embed s", 8), ("server s", 9),
         ("ours ms/1k", 11), ("matrix ms", 10), ("1st query", 10), ("1st cpu", 8),
         ("p50 ms", 7), ("p95 ms", 7), ("cpu p50", 8)],
        [("instant srv", v.slices, v.embed_seconds, v.server_seconds, v.overhead_ms_per_1000,
          v.matrix_load_ms, v.first_query_ms, v.first_query_cpu_ms, v.p50_ms, v.p95_ms,
          v.cpu_p50_ms) for v in runs],
    )  # fmt: skip


def print_shards(runs: list[shards_bench.ShardRun]) -> None:
    print(f"\n{shards_bench.REPOS} git repositories (file://), one corpus each")
    print_table([("run", 45), ("--jobs", 6), ("s", 7), ("exit", 4)],
                [(r.name, r.jobs, f"{r.seconds:.2f}", r.code) for r in runs])  # fmt: skip


def print_stores(runs: list[store_bench.StoreMeasurement]) -> None:
    print()
    print_table(
        [("store", 9), ("slices", 8), ("load s", 7), ("slices/s", 9), ("no-op s", 8),
         ("writes", 7), ("1% s", 6), ("embed s", 8), ("lex p50/95", 12), ("vec p50/95", 12),
         ("hyb p50/95", 12), ("B/slice", 8), ("HNSW s", 7), ("loader MB", 10),
         ("server MB", 10), ("load avg", 11)],
        [(m.store, m.slices, m.load_seconds, m.slices_per_s, m.noop_reload_seconds,
          "-" if m.noop_row_writes is None else m.noop_row_writes, m.churn_reload_seconds,
          m.embed_seconds, f"{m.lexical_p50_ms}/{m.lexical_p95_ms}",
          f"{m.vector_p50_ms}/{m.vector_p95_ms}", f"{m.hybrid_p50_ms}/{m.hybrid_p95_ms}",
          m.bytes_per_slice, "-" if m.hnsw_build_seconds is None else m.hnsw_build_seconds,
          m.loader_peak_mb, "-" if m.server_peak_mb is None else m.server_peak_mb,
          m.load_average) for m in runs],
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", default=str(PROJECT / ".bench"))
    parser.add_argument("--json", default=None, help="where to write the results")
    parser.add_argument("--only", choices=["crawl", "index", "hybrid", "devset", "shards",
                                           "stores", "peer"],
                        help="run one part alone (and write no JSON); hybrid needs index's "
                        "stores in --workdir")  # fmt: skip
    parser.add_argument(
        "--sizes",
        default="10000,100000",
        help="slices in the index and hybrid parts (comma-separated)",
    )
    parser.add_argument(
        "--stores",
        default=",".join(store_bench.STORES),
        help="the stores part's stores (comma-separated: sqlite,postgres)",
    )
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    sizes = [int(n) for n in args.sizes.split(",")]
    if args.only == "crawl":
        print_crawl(crawl_bench.measure_crawl(work, timed))
        return
    if args.only == "index":
        print_index([index_bench.measure_index(work, n) for n in sizes])
        return
    if args.only == "hybrid":
        for n in sizes:  # the hybrid part embeds the index part's stores: build any missing one
            if not (work / f"store-{n}").exists():
                index_bench.measure_index(work, n)
        print_hybrid([vector_bench.measure_hybrid(work, n, index_bench.bench_queries(n))
                      for n in sizes])  # fmt: skip
        return
    if args.only == "devset":
        print_devset(devset_scores())
        return
    if args.only == "shards":
        print_shards(shards_bench.measure_shards(work))
        return
    if args.only == "peer":  # flatten beside files-to-prompt on both real repositories
        for bench in real_repo.REPOS:
            print_peer(real_repo.compare(work, timed, bench=bench))
        return
    if args.only == "stores":  # SQLite beside PostgreSQL, at the largest size
        stores = tuple(args.stores.split(","))
        print_stores(store_bench.measure_stores(work, max(sizes), stores=stores))
        return
    runs = [
        ("docs+py 3k/40MB", generate_tree(work / "docs-3k", 3000, 40), "docs"),
        ("docs+py 5k/66MB", generate_tree(work / "docs-5k", 5000, 66), "docs"),
        ("docs+py 6k/80MB", generate_tree(work / "docs-6k", 6000, 80), "docs"),
        ("mixed 3k/40MB", generate_tree(work / "mixed-3k", 3000, 40, "mixed"), "auto"),
        ("mixed 6k/80MB", generate_tree(work / "mixed-6k", 6000, 80, "mixed"), "auto"),
    ]
    results = [
        measure(f"{name} --kind {kind}", tree, kind, work / f"{tree.name}-{kind}.jsonl")
        for name, tree, kind in runs
    ]
    print_table(
        [("flatten", 30), ("files", 6), ("MB", 6), ("s", 6), ("files/s", 8), ("MB/s", 6),
         ("RSS MB", 7), ("slices", 7)],
        [(m.name, m.files, m.megabytes, m.seconds, m.files_per_s, m.mb_per_s, m.peak_rss_mb,
          m.slices) for m in results],
    )  # fmt: skip

    peers = [real_repo.compare(work, timed, bench=bench) for bench in real_repo.REPOS]
    for peer in peers:
        print_peer(peer)

    rates = slicing_rates()
    print()
    print_table(
        [("slicing (1 core)", 30), ("files", 6), ("MB", 6), ("s", 6), ("MB/s", 8), ("slices", 7)],
        [(r.format, r.files, r.megabytes, r.seconds, r.mb_per_s_per_core, r.slices)
         for r in rates],
    )  # fmt: skip

    index_runs = [index_bench.measure_index(work, n) for n in sizes]
    print_index(index_runs)
    hybrid_runs = [
        vector_bench.measure_hybrid(work, n, index_bench.bench_queries(n)) for n in sizes
    ]
    print_hybrid(hybrid_runs)
    stores = store_bench.measure_stores(work, max(sizes))
    print_stores(stores)
    served = mcp_bench.measure_mcp(work, 100_000, index_bench.bench_queries(100_000))
    print(
        f"\nMCP knowledge_search over stdio, {served.slices:,} slices (lexical): "
        f"p50 {served.p50_ms} ms, p95 {served.p95_ms} ms ({served.queries} calls)"
    )
    crawled = crawl_bench.measure_crawl(work, timed)
    print_crawl(crawled)
    quality = index_bench.scifact(work, PROJECT.parent / "shared")
    if quality:
        shown = {k: v for k, v in quality.items() if k.startswith(("ndcg", "recall", "mrr"))}
        print(
            f"\nSciFact (train, {quality['queries']} queries): "
            + ", ".join(f"{k}={v}" for k, v in shown.items())
        )
    else:
        print("\nSciFact: skipped (../shared/eval/scifact is absent)")
    devsets = devset_scores()
    print_devset(devsets)

    machine = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    out = Path(args.json) if args.json else work / "results.json"
    out.write_text(
        json.dumps(
            {
                "machine": machine,
                "flatten": [asdict(m) for m in results],
                "peer": [asdict(peer) for peer in peers],
                "slicing": [asdict(r) for r in rates],
                "index": [asdict(m) for m in index_runs],
                "hybrid": [asdict(v) for v in hybrid_runs],
                "stores": [asdict(m) for m in stores],
                "mcp": asdict(served),
                "crawl": asdict(crawled),
                "scifact": quality,
                "devset": {name: asdict(score) for name, score in devsets.items()},
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nJSON: {out}")


if __name__ == "__main__":
    main()
