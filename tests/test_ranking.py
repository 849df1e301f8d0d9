"""Search finds the page a person means: results grouped by document, the page's title and path
counted, priors for changelogs and the like, compounds, filters, and the schema migration."""

from __future__ import annotations

import json
import sqlite3

import pytest

from flatten.pipeline import FlattenOptions, flatten_root
from index.agent import Knowledge
from index.documents import match
from index.errors import QueryError
from index.loader import load_records
from index.priors import PRIORS, asked_for, prior_of
from index.schema import MIGRATIONS
from index.scope import Scope
from index.search import SearchOptions, search
from index.store import Store
from tests.conftest import indexed_tree, run_cli, write

CANARY = "\n\n".join(
    f"## Canary step {n}\n\nThe canary rollout shifts weight to the canary in step {n}, "
    "pausing between steps." + " More canary detail." * n
    for n in range(1, 8)
)

ROLLOUTS_DOCS = {
    "docs/features/traffic-management/istio.md": (
        "# Istio\n\nTraffic routing with Istio: the rollout updates the VirtualService weights "
        "so the canary receives a share of the traffic.\n\n## Subset-level routing\n\nIstio "
        "subsets route traffic by destination rule.\n"
    ),
    "CHANGELOG.md": (
        "# Changelog\n\n## v1.2.0\n\n- Istio traffic routing: fix weights of the istio "
        "VirtualService routing when traffic routing with istio uses subsets (istio istio).\n\n"
        "## v1.1.0\n\n- Traffic routing with Istio supports multiple routes (istio).\n"
    ),
    "docs/features/canary.md": "# Canary\n\n" + CANARY,
    "docs/features/bluegreen.md": (
        "# BlueGreen Deployment Strategy\n\nA preview service receives the new version before "
        "the active service is switched.\n"
    ),
    "docs/features/analysis.md": (
        "# Analysis\n\nA blue-green promotion can wait for an analysis run to succeed.\n"
    ),
    "docs/generated/kubectl-argo-rollouts/kubectl-argo-rollouts_abort.md": (
        "# Rollouts Abort\n\nStop the update and return to the stable version.\n\n"
        "```\nkubectl argo rollouts abort ROLLOUT_NAME\n```\n"
    ),
    "docs/features/pause.md": (
        "# Pause\n\nA paused rollout can be resumed or aborted; an abort returns the canary "
        "weight to zero.\n"
    ),
    "docs/advanced/event-hooks.md": (
        "Register callables that run every time a request is sent or a response arrives.\n"
    ),
    "docs/features/undo.md": "# Undo\n\nTo roll back a release, point the service back.\n",
    "docs/logging.md": "# Logging\n\nLog messages are written through the standard module.\n",
    "docs/guide.md": "# Guide\n\nHooks and callbacks are covered in other pages.\n",
    "deploy/rollout.yaml": (
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata:\n  name: canary-demo\n"
        "spec:\n  strategy:\n    canary:\n      steps:\n      - setWeight: 20\n"
    ),
}


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    return indexed_tree(tmp_path_factory.mktemp("ranking"), ROLLOUTS_DOCS, "docs")


def ranked(store_dir, query: str, **options) -> list:
    with Store.open(store_dir, readonly=True) as opened:
        return search(opened, query, SearchOptions(**options)).results


def sources(store_dir, query: str, **options) -> list[str]:
    return [hit.source for hit in ranked(store_dir, query, **options)]


def test_a_feature_page_outranks_the_changelog_that_mentions_it_more(store_dir):
    found = sources(store_dir, "traffic routing with istio")
    assert found[0] == "docs/features/traffic-management/istio.md"
    assert found.index("CHANGELOG.md") > 0


def test_the_changelog_comes_first_when_the_query_asks_for_it(store_dir):
    assert sources(store_dir, "istio routing changelog")[0] == "CHANGELOG.md"
    assert sources(store_dir, "istio routing in 1.2.0")[0] == "CHANGELOG.md"


def test_a_page_with_many_matching_slices_appears_once_and_counts_the_rest(store_dir):
    hits = ranked(store_dir, "canary rollout steps", top_k=5)
    assert len({h.source for h in hits}) == len(hits)  # one hit per document
    canary = next(h for h in hits if h.source == "docs/features/canary.md")
    assert canary.other_matches >= 5
    assert "canary-step-1" in canary.other_anchors or canary.anchor == "canary-step-1"
    raw = sources(store_dir, "canary rollout steps", top_k=5, per_doc=None)
    assert raw.count("docs/features/canary.md") >= 3  # --slices: the raw list
    two = sources(store_dir, "canary rollout steps", top_k=5, per_doc=2)
    assert two.count("docs/features/canary.md") == 2


def test_compounds_match_written_together_or_apart(store_dir):
    # `rollback` is in no page: its halves, as a phrase, find `roll back`.
    assert sources(store_dir, "rollback")[0] == "docs/features/undo.md"
    # `blue green` finds the page titled `BlueGreen`.
    assert sources(store_dir, "blue green preview")[0] == "docs/features/bluegreen.md"


def test_path_words_find_a_page_named_by_its_file(store_dir):
    # The command page says "Stop the update"; its path says `abort`.
    found = sources(store_dir, "abort a rollout")
    assert "docs/generated/kubectl-argo-rollouts/kubectl-argo-rollouts_abort.md" in found[:2]
    # A page without a heading is found by its path's words.
    assert sources(store_dir, "event hooks")[0] == "docs/advanced/event-hooks.md"


def test_priors_are_named_and_shown_by_explain(store_dir):
    hit = next(
        h
        for h in ranked(store_dir, "traffic routing with istio", explain=True)
        if h.source == "CHANGELOG.md"
    )
    assert hit.ranking.prior == "changelog" and hit.ranking.prior_weight < 1
    assert not hit.ranking.asked
    asked = ranked(store_dir, "istio changelog", explain=True)[0]
    assert asked.ranking.prior == "changelog" and asked.ranking.asked
    assert asked.ranking.prior_weight == 1.0
    shown = run_cli("search", "traffic routing with istio", "--explain", "--store", store_dir)
    assert "prior changelog (x0.5)" in shown.stdout
    as_json = run_cli("search", "istio changelog", "--explain", "--json", "--store", store_dir)
    ranking = json.loads(as_json.stdout)[0]["ranking"]
    assert ranking["prior"] == "changelog" and ranking["asked"] is True
    assert {"stage", "sliceScore", "fieldScore", "fieldWeight", "priorWeight"} <= set(ranking)


def test_priors_recognise_paths_and_queries():
    assert prior_of("CHANGELOG.md").name == "changelog"
    assert prior_of("docs/en/docs/release-notes.md").name == "changelog"
    assert prior_of(".github/CONTRIBUTING.md").name == "contributing"
    assert prior_of("docs/code_of_conduct.md").name == "code-of-conduct"
    assert prior_of("LICENSE").name == "license"
    assert prior_of("docs/proposals/2021-rollback.md").name == "proposal"
    assert prior_of("pkg/rollout/controller_test.go").name == "test"
    assert prior_of("test/e2e/canary.yaml").name == "test"
    assert prior_of("docs/generated/cli/abort.md").name == "generated"
    for page in ("docs/features/canary.md", "docs/latest.md", "docs/tutorial/testing.md"):
        assert prior_of(page) is None, page
    assert asked_for("what changed in v0.28.1") == {"changelog"}
    assert asked_for("how do I write a test") == {"test"}
    assert asked_for("follow redirects and inspect the history") == set()
    assert all(0 < p.weight <= 1 for p in PRIORS)


def test_json_form_of_a_grouped_hit(store_dir):
    result = run_cli("search", "canary rollout steps", "--json", "--store", store_dir)
    hit = next(h for h in json.loads(result.stdout) if h["source"] == "docs/features/canary.md")
    assert hit["otherMatches"] >= 5 and isinstance(hit["otherAnchors"], list)
    raw = run_cli("search", "canary rollout steps", "--slices", "--json", "--store", store_dir)
    assert all("otherMatches" not in h for h in json.loads(raw.stdout))


def test_path_and_kind_filters_on_search_and_match(store_dir):
    features = sources(store_dir, "canary", paths=("docs/features/",), top_k=20)
    assert features and all(s.startswith("docs/features/") for s in features)
    several = sources(store_dir, "canary", paths=("deploy/", "CHANGELOG"), top_k=20)
    assert set(several) <= {"deploy/rollout.yaml", "CHANGELOG.md"} and several
    assert sources(store_dir, "canary", kinds=("yaml",)) == ["deploy/rollout.yaml"]
    with Store.open(store_dir, readonly=True) as opened:
        assert [d.source for d in match(opened, ["canary"], scope=Scope(kinds=("yaml",)))] == [
            "deploy/rollout.yaml"
        ]
        with pytest.raises(QueryError) as unknown:
            search(opened, "canary", SearchOptions(kinds=("fortran",)))
    assert unknown.value.reason == "unknown-kind" and "markdown" in unknown.value.message
    cli = run_cli("match", "canary", "--path", "deploy/", "--store", store_dir)
    assert cli.code == 0 and cli.stdout.split()[0] == "deploy/rollout.yaml"
    knowledge = Knowledge(store_dir)
    try:
        answer = knowledge.search("canary", 5, paths=["deploy/"])
        assert [h["source"] for h in answer["results"]] == ["deploy/rollout.yaml"]
        listed = knowledge.enumerate("canary", True, kinds=["yaml"])
        assert listed["documents"] == ["deploy/rollout.yaml"]
    finally:
        knowledge.close()


TRANSLATED = {
    "README.md": "# Project\n\nCookie parameters are documented in the tutorial.\n",
    "docs/en/docs/tutorial/cookie-params.md": "# Cookie Parameters\n\nRead a cookie parameter.\n",
    "docs/en/docs/tutorial/header-params.md": "# Header Parameters\n\nRead a header.\n",
    "docs/en/docs/tutorial/query-params.md": "# Query Parameters\n\nRead a query parameter.\n",
    "docs/ja/docs/tutorial/cookie-params.md": "# Cookie パラメータ\n\ncookie parameter を読む。\n",
    "docs/zh-hant/docs/tutorial/cookie-params.md": "# Cookie 參數\n\ncookie parameter 讀取。\n",
}


@pytest.fixture(scope="module")
def translated(tmp_path_factory):
    return indexed_tree(tmp_path_factory.mktemp("translated"), TRANSLATED, "site")


def test_translations_stay_out_of_the_list_unless_asked(translated):
    default = sources(translated, "cookie parameter", top_k=10)
    assert default[0] == "docs/en/docs/tutorial/cookie-params.md"
    assert not any("/ja/" in s or "/zh-hant/" in s for s in default)
    assert "README.md" in default  # unmarked documents are always in scope
    japanese = sources(translated, "cookie parameter", top_k=10, lang="ja")
    assert "docs/ja/docs/tutorial/cookie-params.md" in japanese
    assert not any("/en/" in s for s in japanese)
    every = sources(translated, "cookie parameter", top_k=10, lang="all")
    assert {s.split("/")[1] for s in every if s.startswith("docs/")} == {"en", "ja", "zh-hant"}
    with Store.open(translated, readonly=True) as opened:
        assert len(match(opened, ["cookie"])) == 2  # README and the English page
        with pytest.raises(QueryError) as unknown:
            search(opened, "cookie", SearchOptions(lang="fr"))
    assert unknown.value.reason == "unknown-lang" and "ja" in unknown.value.message
    cli = run_cli("search", "cookie parameter", "--lang", "zh-hant", "--store", translated)
    assert "docs/zh-hant/docs/tutorial/cookie-params.md" in cli.stdout


def _as_before_m005(path) -> None:
    """Take a store back to the schema of the version before m005 (as that version wrote it)."""
    db = sqlite3.connect(path / "index.sqlite")
    db.executescript(
        "DROP TABLE documents_fts; DROP INDEX documents_locale; "
        "ALTER TABLE documents DROP COLUMN locale; "
        "DELETE FROM schema_migrations WHERE name = 'm005_document_fields';"
    )
    db.close()


def test_a_store_of_the_previous_version_upgrades_itself(tmp_path):
    write(tmp_path / "repo", TRANSLATED)
    with Store.open(tmp_path / "store") as opened:
        load_records(opened, flatten_root(tmp_path / "repo", FlattenOptions()), "site")
    _as_before_m005(tmp_path / "store")
    outdated = run_cli("search", "cookie", "--store", tmp_path / "store")
    assert outdated.code != 0 and "docs-flatten index" in outdated.stderr
    with Store.open(tmp_path / "store") as writer:  # a writer applies m005, filling it in
        locales = dict(writer.db.execute("SELECT source, locale FROM documents").fetchall())
        fields = writer.db.execute("SELECT count(*) FROM documents_fts").fetchone()[0]
    assert locales["docs/ja/docs/tutorial/cookie-params.md"] == "ja"
    assert locales["README.md"] is None and fields == len(TRANSLATED)
    assert sources(tmp_path / "store", "cookie parameter")[0].startswith("docs/en/")
    assert "m005_document_fields" in [name for name, _ in MIGRATIONS]


def test_reloading_a_changed_document_replaces_its_title_and_path_words(tmp_path):
    write(tmp_path / "repo", {"docs/a.md": "# Widgets\n\nSome text.\n"})
    with Store.open(tmp_path / "store") as opened:
        load_records(opened, flatten_root(tmp_path / "repo", FlattenOptions()), "c")
        write(tmp_path / "repo", {"docs/a.md": "# Gadgets\n\nSome text.\n"})
        load_records(opened, flatten_root(tmp_path / "repo", FlattenOptions()), "c")
        titles = [t for (t,) in opened.db.execute("SELECT title FROM documents_fts")]
    assert titles == ["Gadgets"]


QUOTED_DOCS = {
    "home.md": "# HTTPX\n\nHTTPX is a fully featured next-generation HTTP client for Python 3.\n",
    "clients.md": "# Clients\n\n" + "The next release of the client adds HTTP/2. Each generation "
    "of the HTTP client improves the client. A client for the next generation of servers.\n" * 3,
    "other.md": "# Other\n\nHTTP client next generation notes. client generation next http.\n",
}


def test_a_quoted_phrase_ranks_the_page_that_says_it_verbatim_first(tmp_path, store_url):
    write(tmp_path / "notes", QUOTED_DOCS)
    loaded = run_cli("ingest", "--root", tmp_path / "notes", "--store", store_url, "-q")
    assert loaded.code == 0, loaded.stderr

    def sources(query: str) -> list[str]:
        found = run_cli("search", query, "--store", store_url, "--json")
        assert found.code == 0, found.stderr
        return [hit["source"] for hit in json.loads(found.stdout)]

    assert sources("next generation http client")[0] != "home.md"  # the words, apart, elsewhere
    assert sources('"next-generation HTTP client"')[0] == "home.md"
    assert sources("\u201cnext-generation HTTP client\u201d")[0] == "home.md"
    # A phrase no page says verbatim still finds the pages with its words.
    assert len(sources('"client of the next http generation"')) == 3
