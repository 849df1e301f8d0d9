"""Index benchmarks: load rate, no-op reload, search latency, and SciFact retrieval quality."""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

SYLLABLES = (
    "ka",
    "to",
    "ri",
    "men",
    "sol",
    "ver",
    "pa",
    "lin",
    "dro",
    "ex",
    "qui",
    "zor",
    "nal",
    "tek",
    "bu",
    "or",
    "si",
    "gam",
    "fel",
    "ux",
)


def vocabulary(rng: random.Random, size: int = 30_000) -> list[str]:
    words = {"".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(size)}
    return sorted(words)


def write_slices(path: Path, count: int, seed: int = 7) -> list[str]:
    """`count` JSONL slices (10 per document) of Zipf-distributed words; returns the vocabulary
    in frequency order, most common first."""
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    rng.shuffle(vocab)  # frequency order: the Zipf weights below follow this order
    weights = [1 / (rank + 1) ** 1.1 for rank in range(len(vocab))]
    cumulative = []
    total = 0.0
    for w in weights:
        total += w
        cumulative.append(total)
    # Written as `flatten` writes a repository's records (our compact layout, with provenance),
    # so the load reads what it reads in real use.
    from flatten.hashing import sha256_hex
    from flatten.record import Provenance, Record, encode_line

    origin = Provenance("https://example.com/org/bench", "0" * 40, "main")
    with open(path, "wb") as out:
        for i in range(count):
            words = rng.choices(vocab, cum_weights=cumulative, k=rng.randint(80, 220))
            title = " ".join(words[:4]).capitalize()
            content = " ".join(words)
            source = f"docs/{i // 10:06}.md"
            record = Record(source=source, ordinal=i % 10 + 1, title=title, content=content,
                            kind="markdown", hash=sha256_hex(content), doc_hash=None,
                            provenance=origin, section=(title,), repo_path=source)  # fmt: skip
            out.write(encode_line(record))
    return vocab


@dataclass
class IndexMeasurement:
    slices: int
    load_seconds: float
    slices_per_s: float
    reload_seconds: float
    reload_share: float  # no-op reload time as a share of the first load
    p50_ms: float
    p95_ms: float
    queries: int
    # CPU seconds (user + system, every thread) of the load and of the no-op reload: on a shared
    # machine these compare two versions where wall-clock time cannot.
    load_cpu_seconds: float = 0.0
    reload_cpu_seconds: float = 0.0


def queries_for(vocab: list[str], rng: random.Random, n: int = 300) -> list[str]:
    common, rare = vocab[:20], vocab[5000:25000]
    out = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            out.append(rng.choice(rare))
        elif kind == 1:
            out.append(f"{rng.choice(common)} {rng.choice(common)}")
        else:
            out.append(
                f"how do I configure {rng.choice(rare)} with {rng.choice(common)} "
                f"and {rng.choice(vocab[100:2000])}?"
            )
    return out


def bench_queries(count: int, seed: int = 7) -> list[str]:
    """The queries timed against the store of `count` slices (the same for both tiers)."""
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    rng.shuffle(vocab)
    return queries_for(vocab, random.Random(count))


def measure_index(work: Path, count: int) -> IndexMeasurement:
    from index.loader import load_files
    from index.search import SearchOptions, search
    from index.store import Store

    data = work / f"slices-{count}.jsonl"
    write_slices(data, count)
    store_dir = work / f"store-{count}"
    if store_dir.exists():
        for child in store_dir.iterdir():
            child.unlink()
    with Store.open(store_dir) as store:
        started, cpu = time.perf_counter(), time.process_time()
        load_files(store, [data], "bench")
        load_seconds = time.perf_counter() - started
        load_cpu = time.process_time() - cpu
        started, cpu = time.perf_counter(), time.process_time()
        report = load_files(store, [data], "bench")
        reload_seconds = time.perf_counter() - started
        reload_cpu = time.process_time() - cpu
        assert report.unchanged and not report.chunks
    latencies = []
    with Store.open(store_dir, readonly=True) as reader:
        for query in bench_queries(count):
            started = time.perf_counter()
            search(reader, query, SearchOptions(top_k=10))
            latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    return IndexMeasurement(
        count,
        round(load_seconds, 2),
        round(count / load_seconds),
        round(reload_seconds, 2),
        round(reload_seconds / load_seconds, 3),
        round(statistics.median(latencies), 2),
        round(latencies[int(len(latencies) * 0.95) - 1], 2),
        len(latencies),
        round(load_cpu, 2),
        round(reload_cpu, 2),
    )


def scifact(work: Path, shared: Path) -> dict[str, object] | None:
    """nDCG@10, Recall@100 and MRR on BEIR SciFact (train queries), if the data is there."""
    root = shared / "eval" / "scifact"
    if not (root / "corpus.jsonl").exists():
        return None
    from index.evaluate import evaluate, read_qrels, read_queries
    from index.loader import load_files
    from index.search import SearchOptions, search
    from index.store import Store

    store_dir = work / "store-scifact"
    with Store.open(store_dir) as store:
        load_files(store, [root / "corpus.jsonl"], "scifact")
        queries = read_queries(root / "queries-train.jsonl")
        judgments = read_qrels(root / "qrels" / "train.tsv")

        def rank(text: str, depth: int) -> list[str]:
            return [
                r.source
                for r in search(store, text, SearchOptions(top_k=depth, snippets=False)).results
            ]

        return evaluate(queries, judgments, rank, 10).to_dict()


@dataclass
class CompactionMeasurement:
    slices: int  # before the snapshot
    kept: int  # slices the snapshot keeps
    bytes_before: int
    bytes_after: int
    seconds: float  # FTS5 optimize + VACUUM + checkpoint, wall clock
    cpu_seconds: float  # the same, CPU (user + system): what compares on a shared machine
    load_seconds: float  # the whole snapshot load, compaction included


def measure_compaction(work: Path, count: int, keep: float = 0.05) -> CompactionMeasurement:
    """A store of `count` slices, then a snapshot that keeps `keep` of them (the first ones,
    whole documents): how much compaction wins back and what it costs."""
    from index.loader import load_files
    from index.snapshot import parse_limit
    from index.store import Store

    data, snapshot = work / f"slices-{count}.jsonl", work / f"slices-{count}-kept.jsonl"
    kept = int(count * keep) // 10 * 10  # whole documents (10 slices each)
    write_slices(data, count)
    write_slices(snapshot, kept)  # the same seed: the first `kept` slices of `data`
    store_dir = work / f"store-compact-{count}"
    if store_dir.exists():
        for child in store_dir.iterdir():
            child.unlink()
    timed: dict[str, float] = {}
    compact = Store.compact

    def timed_compact(store: Store):  # type: ignore[no-untyped-def]
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return compact(store)
        finally:
            timed["seconds"] = time.perf_counter() - started
            timed["cpu"] = time.process_time() - cpu

    with Store.open(store_dir) as store:
        load_files(store, [data], "bench")
        Store.compact = timed_compact  # type: ignore[method-assign]
        try:
            report = load_files(store, [snapshot], "bench", max_delete=parse_limit("100%"))
        finally:
            Store.compact = compact  # type: ignore[method-assign]
    assert report.compacted is not None, "the snapshot did not free a quarter of the store"
    return CompactionMeasurement(
        count,
        kept,
        report.compacted.bytes_before,
        report.compacted.bytes_after,
        round(timed["seconds"], 2),
        round(timed["cpu"], 2),
        round(report.seconds, 2),
    )
