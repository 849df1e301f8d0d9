"""Crawl each real generated site (fixtures/sites/, and ../shared/sites/httpx when present) on
127.0.0.1 and print what the issue asks to measure: pages, first slices titled with the page
H1, records with `{#id}` or generator chrome in their content, duplicates and which URL won.

    .venv/bin/python tests/bench/sites_quality.py [-v]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT))

from crawl.crawler import CrawlOptions  # noqa: E402
from flatten.pipeline import FlattenOptions, flatten_url  # noqa: E402
from flatten.report import RunReport  # noqa: E402
from tests.site_checks import SITES, Figures, check, served  # noqa: E402


def measure(verbose: bool) -> list[Figures]:
    results = []
    for site in SITES:
        if not site.root.is_dir():
            print(f"{site.name}: skipped ({site.root} is absent)")
            continue
        with served(site) as base:
            report = RunReport()
            options = CrawlOptions(scope=site.scope, max_pages=2000, max_depth=20)
            records = [
                r.to_dict()
                for r in flatten_url(
                    base + site.seed, FlattenOptions(), report, crawl_options=options
                )
            ]
            figures = check(site, records, report.crawl or {})
        results.append(figures)
        if verbose:
            for problem in figures.problems:
                print(f"  {site.name}: {problem.replace(base, '')}")
            for dropped, kept in figures.duplicates:
                dropped, kept = dropped.replace(base, ""), kept.replace(base, "")
                print(f"  {site.name}: duplicate {dropped}: {kept}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list every problem")
    args = parser.parse_args()
    results = measure(args.verbose)
    header = ("site", "pages", "H1 titled", "records", "{#id}", "chrome", "duplicates")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for figures in results:
        print("| " + " | ".join(str(v) for v in figures.row()) + " |")


if __name__ == "__main__":
    main()
