"""The httpx dev set of real questions (`../shared/eval/httpx-docs`): flatten, index, search with
the defaults, and count the questions with an accepted page in the top 5 and at rank 1.

    .venv/bin/python tests/bench/devset.py [--url] [-v]

`--url` crawls the built site (`../shared/sites/httpx`, served on 127.0.0.1) instead of
flattening the repository's docs. Questions name the pages a person would accept as paths
without extension under `docs/` (`advanced/timeouts`), which match `docs/advanced/timeouts.md`
and `/advanced/timeouts/`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

PROJECT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT))

SHARED = PROJECT.parent / "shared"
DEVSET = SHARED / "eval" / "httpx-docs"
SITE = SHARED / "sites" / "httpx"
CUTOFF = 5


@dataclass(frozen=True)
class Question:
    id: str
    query: str
    expect: tuple[str, ...]


@dataclass
class Score:
    questions: int = 0
    top: int = 0  # an accepted page in the top CUTOFF
    first: int = 0  # an accepted page at rank 1
    misses: list[str] = field(default_factory=list)  # "id: rank N" for the questions not at 1

    def row(self) -> str:
        return (
            f"{self.top}/{self.questions} in the top {CUTOFF}, {self.first}/{self.questions} at 1"
        )


def read_questions(path: Path) -> list[Question]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            out.append(Question(item["id"], item["query"], tuple(item["expect"])))
    return out


def page_of(source: str) -> str:
    """A hit's page as the questions name it: `docs/advanced/ssl.md` and
    `http://host/advanced/ssl/` are both `advanced/ssl`; the home page is `index`."""
    path = urlsplit(source).path if "://" in source else source
    path = path.strip("/")
    if path.startswith("docs/"):
        path = path[len("docs/") :]
    for suffix in (".md", "/index.html", ".html"):
        path = path.removesuffix(suffix)
    return path or "index"


def records(from_site: bool) -> list:
    from flatten.pipeline import FlattenOptions, flatten_root, flatten_url

    if not from_site:
        return list(flatten_root(DEVSET / "repo", FlattenOptions(kind="docs")))
    from crawl.crawler import CrawlOptions
    from tests.sites import serve_directory

    with serve_directory(SITE) as base:
        options = CrawlOptions(max_pages=2000, max_depth=20)
        return list(flatten_url(base + "/", FlattenOptions(), crawl_options=options))


def score(from_site: bool = False, verbose: bool = False) -> Score:
    from index.loader import load_records
    from index.search import SearchOptions, search
    from index.store import Store

    questions = read_questions(DEVSET / "questions.jsonl")
    result = Score(len(questions))
    with tempfile.TemporaryDirectory() as work:
        with Store.open(Path(work) / "store") as store:
            load_records(store, records(from_site), "httpx")
        with Store.open(Path(work) / "store", readonly=True) as store:
            for q in questions:
                hits = search(store, q.query, SearchOptions(top_k=CUTOFF)).results
                pages = [page_of(h.source) for h in hits]
                rank = next((n for n, p in enumerate(pages, 1) if p in q.expect), None)
                result.top += rank is not None
                result.first += rank == 1
                if rank != 1:
                    result.misses.append(f"{q.id}: rank {rank or '-'} ({', '.join(pages)})")
                if verbose:
                    print(f"{q.id:<12} rank {rank or '-'}  {' | '.join(pages)}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", action="store_true", help="crawl the built site instead")
    parser.add_argument("-v", "--verbose", action="store_true", help="every question's pages")
    args = parser.parse_args()
    if not (DEVSET / "questions.jsonl").exists() or (args.url and not SITE.is_dir()):
        print(f"skipped: {DEVSET if not args.url else SITE} is absent")
        return
    print(score(args.url, args.verbose).row())


if __name__ == "__main__":
    main()
