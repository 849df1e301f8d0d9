"""Crawls of real generator output (fixtures/sites/, built by fixtures/sites/build.sh) on 127.0.0.1.

Sphinx with autodoc and Sphinx-Gallery in three themes, MkDocs Material, Docusaurus with versioned
docs, and the httpx site in ../shared/sites/httpx. The expectations are read from the served HTML
by tests/site_checks.py, not from our extractor.
"""

from __future__ import annotations

import json
from functools import partial
from http.server import SimpleHTTPRequestHandler
from typing import Any

import pytest

from crawl.crawler import CrawlOptions
from flatten.pipeline import FlattenOptions, flatten_url
from flatten.report import RunReport
from tests.conftest import run_cli
from tests.site_checks import SITES, SITES_DIR, Site, check, served
from tests.sites import Responder, page, serve

SITE = {site.name: site for site in SITES}


def crawled(site: Site, **options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Records and crawl report of one crawl of `site`, served on 127.0.0.1."""
    if not site.root.is_dir():
        pytest.skip(f"{site.root} is absent (the shared sites are not checked out beside the repo)")
    with served(site) as base:
        report = RunReport()
        crawl_options = CrawlOptions(**{"scope": site.scope, "max_depth": 20, **options})
        records = [
            r.to_dict()
            for r in flatten_url(
                base + site.seed, FlattenOptions(), report, crawl_options=crawl_options
            )
        ]
    strip = {"url", "source", "id"}
    for record in records:  # compare paths, not the random port
        for key in strip & record.keys():
            record[key] = record[key].replace(base, "")
    crawl = report.crawl or {}
    for skipped in crawl.get("skipped", []):
        skipped["url"] = skipped["url"].replace(base, "")
        skipped["detail"] = skipped["detail"].replace(base, "")
    return records, crawl


@pytest.mark.parametrize("name", [site.name for site in SITES])
def test_every_page_is_titled_by_its_h1_and_reads_without_ids_or_chrome(name):
    site = SITE[name]
    records, report = crawled(site)
    figures = check(site, records, report)
    assert figures.pages > 3
    assert figures.problems == []


def content_of(records: list[dict[str, Any]], url: str) -> str:
    return "\n".join(r["content"] for r in records if r["url"] == url)


@pytest.mark.parametrize("theme", ["sphinx-furo", "sphinx-pydata", "sphinx-rtd"])
def test_sphinx_autodoc_reads_as_clean_markdown(theme):
    records, _ = crawled(SITE[theme])
    api = [r for r in records if r["url"] == "/api.html"]
    text = "\n".join(r["content"] for r in api)
    assert "fit_kws (dict, optional) – Extra options for the solver" in text
    assert "xs (list of float) – The x values." in text
    assert "**" not in text.split("Parameters")[1].split("\n")[2]  # no emphasis soup in items
    # A signature opens its own slice, anchored at the id Sphinx gave it.
    fit = next(r for r in api if r.get("anchor") == "tinyfit.fit_line")
    assert fit["title"].startswith("tinyfit.fit_line(xs: list[float], ys: list[float]")
    # A field list's label stays with its items.
    for record in api:
        if "Parameters:" in record["content"]:
            after = record["content"].split("Parameters:", 1)[1]
            assert after.strip(), f"{record['id']} ends with its field list's label"


@pytest.mark.parametrize("theme", ["sphinx-furo", "sphinx-pydata", "sphinx-rtd"])
def test_sphinx_index_and_search_pages_are_skipped_with_a_reason(theme):
    records, report = crawled(SITE[theme])
    urls = {r["url"] for r in records}
    assert not urls & {"/genindex.html", "/search.html", "/py-modindex.html"}
    skipped = {s["url"]: s["reason"] for s in report["skipped"]}
    assert skipped["/genindex.html"] == skipped["/py-modindex.html"] == "generated-index"
    assert skipped["/search.html"] == "generated-index"


@pytest.mark.parametrize("theme", ["sphinx-furo", "sphinx-pydata", "sphinx-rtd"])
def test_sphinx_gallery_example_keeps_its_code_and_drops_its_furniture(theme):
    records, _ = crawled(SITE[theme])
    example = [r for r in records if r["url"] == "/auto_examples/plot_fit.html"]
    assert example[0]["title"] == "Fitting a line"
    text = "\n".join(r["content"] for r in example)
    assert "```python\nxs = [0.0, 1.0, 2.0, 3.0, 4.0]\nys = [1.0, 3.1, 4.9, 7.0, 9.2]\n" in text
    assert "slope=2.03 intercept=0.98" in text  # the example's printed output stays


def test_code_blocks_keep_their_language_and_line_breaks():
    sphinx, _ = crawled(SITE["sphinx-furo"])
    usage = content_of(sphinx, "/usage.html")
    assert '```json\n{\n  "robust": true,\n  "fit_kws": {"tol": 1e-9}\n}\n```' in usage
    assert "```yaml\nrobust: true\nfit_kws:\n  tol: 1.0e-9\n```" in usage
    mkdocs, _ = crawled(SITE["mkdocs-material"])
    start = content_of(mkdocs, "/guide/getting-started/")
    assert '```python\nimport pebble\n\nstore = pebble.open("data.pebble")\n' in start
    assert "```bash\npip install pebble-kv\npebble --version\n```" in start
    docusaurus, _ = crawled(SITE["docusaurus"])
    debugging = content_of(docusaurus, "/docs/guides/debugging/")
    assert "```bash\nnpx pebble config show\nnpx pebble config show --json\n```" in debugging
    assert "```js\nconst pebble = require('pebble-kv');\n" in debugging


def test_docusaurus_current_version_wins_its_duplicates():
    records, report = crawled(SITE["docusaurus"])
    urls = {r["url"] for r in records}
    duplicates = {s["url"]: s["detail"] for s in report["skipped"] if s["reason"] == "duplicate"}
    # The unversioned (current) page wins over every old version...
    assert "/docs/guides/configuration/" in urls
    for old in ("/docs/1.0/guides/configuration/", "/docs/1.1/guides/configuration/"):
        assert duplicates[old] == "same text as /docs/guides/configuration/"
    # ...and among old versions only, the highest does (the current intro has tabs since 2.0).
    assert {"/docs/intro/", "/docs/1.1/intro/"} <= urls
    assert duplicates["/docs/1.0/intro/"] == "same text as /docs/1.1/intro/"
    # Pages that differ between versions are all kept.
    assert {"/docs/guides/debugging/", "/docs/1.1/guides/debugging/"} <= urls


def test_headings_anchor_at_the_page_ids_and_never_show_them():
    records, _ = crawled(SITE["docusaurus"])
    printing = next(r for r in records if r["title"] == "Printing the configuration"
                    and r["url"] == "/docs/guides/debugging/")  # fmt: skip
    assert printing["anchor"] == "printing-the-configuration"
    assert printing["content"].startswith("### Printing the configuration\n")
    first = next(r for r in records if r["url"] == "/docs/intro/")
    assert (first["title"], first["content"].split("\n")[0]) == ("Introduction", "# Introduction")


class _Recording(SimpleHTTPRequestHandler, Responder):
    asked: list[str] = []  # noqa: RUF012 - one list per test, reset by the test

    def do_GET(self) -> None:
        type(self).asked.append(self.path)
        super().do_GET()


def test_include_and_exclude_filter_url_paths_before_fetching(tmp_path):
    _Recording.asked = []
    out, report_path = tmp_path / "out.jsonl", tmp_path / "report.json"
    with serve(partial(_Recording, directory=str(SITES_DIR / "docusaurus"))) as base:
        result = run_cli(
            "flatten", "--url", f"{base}/docs/intro/", "--scope", "/docs/",
            "--exclude", "/docs/1.*", "-o", str(out), "--report", str(report_path),
        )  # fmt: skip
    assert result.code == 0, result.stderr
    assert not [p for p in _Recording.asked if p.startswith("/docs/1.")]
    urls = {json.loads(line)["url"].replace(base, "") for line in out.read_text().splitlines()}
    assert urls == {"/docs/intro/", "/docs/guides/configuration/", "/docs/guides/debugging/"}
    report = json.loads(report_path.read_text())
    excluded = [s for s in report["skipped"] if s["reason"] == "excluded"]
    assert excluded and all(s["path"].startswith(f"{base}/docs/1.") for s in excluded)

    _Recording.asked = []
    with serve(partial(_Recording, directory=str(SITES_DIR / "docusaurus"))) as base:
        result = run_cli(
            "flatten", "--url", f"{base}/docs/intro/", "--scope", "/docs/",
            "--include", "/docs/1.1/*", "--include", "/docs/intro/", "-o", str(out),
        )  # fmt: skip
    assert result.code == 0, result.stderr
    assert not [p for p in _Recording.asked if p.startswith(("/docs/1.0/", "/docs/guides/"))]


def test_a_leaf_seed_says_which_scope_would_admit_what_it_skipped():
    _, report = crawled(Site("docusaurus", SITES_DIR / "docusaurus", "/docs/intro/"))
    assert report["pagesFetched"] == 1
    admits = report["scopeHintAdmits"]
    assert report["scopeHint"] == "/docs/" and admits * 2 > report["skippedByReason"]["scope"]
    with served(SITE["docusaurus"]) as base:
        result = run_cli("flatten", "--url", f"{base}/docs/intro/", "-o", "/dev/null")
    assert result.code == 0, result.stderr
    assert f"the scope {base}/docs/intro/ refused" in result.stderr
    assert f"--scope /docs/ would admit {admits} of them" in result.stderr


def test_a_seed_page_at_the_root_scopes_the_whole_site():
    records, report = crawled(Site("sphinx", SITES_DIR / "sphinx-furo", "/index.html"))
    assert report["scope"].endswith("/") and not report["scope"].endswith("//")
    assert {"/install.html", "/auto_examples/plot_fit.html"} <= {r["url"] for r in records}


def test_a_sitemap_naming_the_production_host_is_one_report_line():
    _, report = crawled(SITE["docusaurus"])
    other = [s for s in report["skipped"] if s["reason"] == "other-host"]
    assert len(other) == 1
    assert other[0]["url"].endswith("/sitemap.xml")
    assert "10 URLs on pebble-docs.example.org" in other[0]["detail"]
    assert not [s for s in report["skipped"] if "pebble-docs.example.org" in s["url"]]


class _CanonicalSite(Responder):
    """Two copies of one page; the old one's rel=canonical names the new one."""

    def do_GET(self) -> None:
        body = "<p>Same words on both pages.</p><a href='/docs/a/'>a</a> <a href='/docs/b/'>b</a>"
        canonical = "<link rel='canonical' href='/docs/b/'>"
        if self.path in ("/docs/a/", "/docs/b/"):
            html = page("Same", body).replace(b"<head>", b"<head>" + canonical.encode())
            self.respond(200, html)
        else:
            self.respond(404, b"no", "text/plain")


def test_the_in_scope_canonical_page_wins_its_duplicates():
    with serve(_CanonicalSite) as base:
        report = RunReport()
        options = CrawlOptions(scope="/docs/")
        records = list(
            flatten_url(f"{base}/docs/a/", FlattenOptions(), report, crawl_options=options)
        )
    assert {r.url for r in records} == {f"{base}/docs/b/"}
    duplicate = next(s for s in report.crawl["skipped"] if s["reason"] == "duplicate")
    assert duplicate["url"] == f"{base}/docs/a/"
