"""Crawl benchmark: a generated MkDocs-Material-like site of 450 pages served on 127.0.0.1."""

from __future__ import annotations

import json
import random
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import corpus

PAGES = 450


def _page(rng: random.Random, index: int, total: int) -> str:
    links = sorted({(index * 7 + k * 13) % total for k in range(1, 11)})
    nav = "".join(f'<li><a href="/docs/p{n:04}/">Page {n}</a></li>' for n in range(0, total, 9))
    sections = []
    for s in range(rng.randint(4, 9)):
        paragraphs = "".join(
            f"<p>{corpus.sentence(rng)} {corpus.sentence(rng)}</p>"
            for _ in range(rng.randint(2, 5))
        )
        code = "\n".join(f"{corpus.ident(rng)}({i})" for i in range(rng.randint(3, 9)))
        sections.append(
            f'<h2 id="s{s}">{corpus.sentence(rng)[:40]}<a class="headerlink" href="#s{s}">¶</a>'
            f'</h2>{paragraphs}<div class="language-python highlight"><pre><code>{code}'
            "</code></pre></div>"
        )
    related = "".join(f'<a href="/docs/p{n:04}/">related {n}</a> ' for n in links)
    return (
        f"<html><head><title>Page {index} - Bench Docs</title></head><body>"
        f'<header class="md-header">Bench Docs</header><div class="md-sidebar"><ul>{nav}</ul>'
        f'</div><main><article class="md-content__inner"><h1 id="top">Page {index}</h1>'
        f"{''.join(sections)}<p>{related}</p></article></main>"
        '<footer class="md-footer">Made with a generator</footer></body></html>'
    )


def build_site(root: Path, total: int = PAGES) -> Path:
    marker = root / ".complete"
    if marker.exists():
        return root
    rng = random.Random(total)
    for i in range(total):
        folder = root / "docs" / f"p{i:04}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "index.html").write_text(_page(rng, i, total))
    marker.write_text("")
    return root


@dataclass
class CrawlMeasurement:
    pages: int
    seconds: float
    pages_per_s: float
    extract_mb_per_s: float
    peak_rss_mb: float


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def measure_crawl(
    work: Path, timed: Callable[[list[str], str], tuple[float, int, float]]
) -> CrawlMeasurement:
    from crawl.extract import extract

    site = build_site(work / "site")
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "http.server",
            str(port),
            "--bind",
            "127.0.0.1",
            "--directory",
            str(site),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        out = work / "site.jsonl"
        report = work / "site.report.json"
        cmd = [
            sys.executable,
            "-m",
            "flatten",
            "flatten",
            "--url",
            f"http://127.0.0.1:{port}/docs/p0000/",
            "--scope",
            "/docs/",
            "--max-pages",
            "1000",
            "--max-depth",
            "20",
            "--concurrency",
            "4",
            "-q",
            "-o",
            str(out),
            "--report",
            str(report),
        ]
        seconds, rss_kb, _cpu = timed(cmd, "crawl")
        pages = json.loads(report.read_text())["crawl"]["pagesFetched"]
    finally:
        server.terminate()
        server.wait()
    htmls = [p.read_text() for p in sorted(site.rglob("index.html"))]
    started = time.perf_counter()
    for html in htmls:
        extract(html, "http://127.0.0.1/docs/")
    extract_seconds = time.perf_counter() - started
    megabytes = sum(len(h.encode()) for h in htmls) / 1e6
    return CrawlMeasurement(
        pages,
        round(seconds, 2),
        round(pages / seconds, 1),
        round(megabytes / extract_seconds, 1),
        round(rss_kb / 1024, 1),
    )
