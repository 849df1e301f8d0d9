"""Count slices that read as nothing on their own, on real documents and code.

Docs: label-only slices (a reST `.. _label:` or an empty `<a id>` alone), slices ending in the
label of the next section, heading-only slices with content below them, and preambles titled
by nothing better than their path (tests/slice_shapes.py says how each is recognised). Code
(Python): slices opening at a `def`/`class` line whose symbol names something else.

Sources: every real generated site of tests/site_checks.py, crawled on 127.0.0.1, and folders
flattened as `--root` does (the shared httpx docs repository by default; add any with
`NAME=DIR` or `NAME=DIR@code`).

    .venv/bin/python tests/bench/slice_quality.py [-v] [--max-chars N] [NAME=DIR[@kind] ...]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT))

from flatten.pipeline import FlattenOptions, flatten_root, flatten_url  # noqa: E402
from flatten.record import Record  # noqa: E402
from flatten.report import RunReport  # noqa: E402
from slicers.base import DEFAULT_MAX_CHARS, Slice  # noqa: E402
from tests.conftest import SHARED  # noqa: E402
from tests.site_checks import SITES, served  # noqa: E402
from tests.slice_shapes import Shapes  # noqa: E402

FORMATS = {".rst": "rst", ".adoc": "asciidoc", ".asciidoc": "asciidoc", ".md": "markdown",
           ".markdown": "markdown", ".mdx": "markdown"}  # fmt: skip
_DECLARATION = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)")
_LEAD = re.compile(r"^\s*(?:#|@)")


@dataclass
class Corpus:
    name: str
    shapes: Shapes = field(default_factory=Shapes)
    code_slices: int = 0
    misnamed_declarations: int = 0
    problems: list[str] = field(default_factory=list)


def as_slice(record: Record) -> Slice:
    return Slice(record.content, record.start_line or 1, record.end_line or 1, record.title,
                 record.section, record.anchor, record.symbol)  # fmt: skip


def misnamed(piece: Slice) -> bool:
    """A slice opening at `def name`/`class name` (after comments and decorators) whose symbol
    is not that name: the declaration's own header is cited under another name."""
    for line in piece.content.split("\n"):
        if not line.strip() or _LEAD.match(line):
            continue
        match = _DECLARATION.match(line)
        return bool(match) and (piece.symbol or "").split(".")[-1] != match.group(1)
    return False


def count(corpus: Corpus, records: Iterable[Record]) -> None:
    by_doc: dict[str, list[Record]] = {}
    for record in records:
        by_doc.setdefault(record.source, []).append(record)
    for source, doc in by_doc.items():
        pieces = [as_slice(r) for r in doc]
        if doc[0].kind == "code":
            if doc[0].lang == "python":
                corpus.code_slices += len(pieces)
                bad = [p for p in pieces if misnamed(p)]
                corpus.misnamed_declarations += len(bad)
                corpus.problems += [f"misnamed {source}:{p.start_line} {p.symbol}" for p in bad]
            continue
        fmt = "markdown" if doc[0].url else FORMATS.get(Path(source).suffix.lower(), "")
        if fmt:
            corpus.problems += corpus.shapes.add(pieces, fmt, source)


def measure(roots: list[tuple[str, Path, str]], max_chars: int) -> list[Corpus]:
    results = []
    for site in SITES:
        if not site.root.is_dir():
            continue
        from crawl.crawler import CrawlOptions

        corpus = Corpus(f"site {site.name}")
        with served(site) as base:
            crawling = CrawlOptions(scope=site.scope, max_pages=2000, max_depth=20)
            options = FlattenOptions(max_chars=max_chars)
            count(
                corpus, flatten_url(base + site.seed, options, RunReport(), crawl_options=crawling)
            )
        corpus.problems = [p.replace(base, "") for p in corpus.problems]
        results.append(corpus)
    for name, root, kind in roots:
        if not root.is_dir():
            print(f"{name}: skipped ({root} is absent)", file=sys.stderr)
            continue
        corpus = Corpus(name)
        count(
            corpus,
            flatten_root(
                root, FlattenOptions(kind=kind, workers=1, max_chars=max_chars), RunReport()
            ),
        )
        results.append(corpus)
    return results


def _root(spec: str) -> tuple[str, Path, str]:
    name, _, rest = spec.partition("=")
    folder, _, kind = rest.rpartition("@") if "@" in rest else (rest, "", "docs")
    return name, Path(folder), kind or "docs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list every bad slice")
    parser.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS, help="slice budget")
    parser.add_argument("roots", nargs="*", type=_root, help="NAME=DIR[@docs|code|auto]")
    args = parser.parse_args()
    roots = args.roots or [("httpx repo", SHARED / "eval" / "httpx-docs" / "repo", "docs")]
    results = measure(roots, args.max_chars)
    header = ("corpus", "docs", "slices", "label-only", "trailing label", "heading-only",
              "preambles", "path-titled preambles", "py slices", "misnamed def/class")  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for c in results:
        s = c.shapes
        row: tuple[Any, ...] = (c.name, s.documents, s.slices, s.label_only, s.trailing_label,
                                s.heading_only, s.preambles, s.path_titled_preambles, c.code_slices,
                                c.misnamed_declarations)  # fmt: skip
        print("| " + " | ".join(str(v) for v in row) + " |")
    if args.verbose:
        for c in results:
            for problem in c.problems:
                print(f"  {c.name}: {problem}")


if __name__ == "__main__":
    main()
