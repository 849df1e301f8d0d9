"""`eval` on small real stores: judged ids naming documents, slices or pages (question files'
`expect` lists), unmatched ids warned about and counted, per-query JSON, --group doc|slice, and
the CI gates."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from index.evaluate import Query, evaluate
from index.judgments import page_matches, page_path, ranked_units
from tests.conftest import assert_clean_failure, jsonl, record, run_cli

DOCS = [
    record("guide/deploy.md", 1, "Deploy with the rollout command.", title="Deploy"),
    record("guide/deploy.md", 2, "Rollbacks undo a rollout.", title="Rollbacks"),
    record("guide/deploy.md", 3, "Canary rollout steps.", title="Canary"),
    record("faq.md", 1, "Reset a forgotten password from the login page.", title="FAQ"),
    record("infra/eks.tf", 1, 'resource "aws_eks_cluster" "main" {}', title="eks"),
]


def store_of(tmp_path, records=DOCS):
    store = tmp_path / "store"
    loaded = run_cli("index", jsonl(tmp_path / "a.jsonl", records), "--corpus", "d",
                     "--store", store)  # fmt: skip
    assert loaded.code == 0, loaded.stderr
    return store


def run_eval(store, queries, *args):
    return run_cli("eval", "--queries", queries, "--store", store, *args)


def test_qrels_may_name_documents_or_slices_and_the_output_says_which(tmp_path):
    store = store_of(tmp_path)
    queries = jsonl(tmp_path / "q.jsonl", [{"id": "1", "query": "rollbacks undo"},
                                           {"id": "2", "query": "password"}])  # fmt: skip
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("1\tguide/deploy.md#2\t1\n2\tfaq.md\t1\n")
    result = run_eval(store, queries, "--qrels", qrels, "--json")
    assert result.code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["judged"] == {"documents": 1, "slices": 1} and summary["unmatched"] == 0
    assert summary["ndcg@10"] == 1.0 and summary["hit@1"] == 1.0
    human = run_eval(store, queries, "--qrels", qrels)
    assert "judged ids name: 1 documents, 1 slices" in human.stdout


def test_ids_that_match_nothing_are_listed_as_a_warning_and_counted(tmp_path):
    store = store_of(tmp_path)
    queries = jsonl(tmp_path / "q.jsonl", [{"id": "1", "query": "password"}])
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("1\tfaq.md\t1\n1\tgone.md\t1\n1\tfaq.md#9\t1\n")
    result = run_eval(store, queries, "--qrels", qrels, "--json")
    assert result.code == 0, result.stderr
    assert "warning: 2 judged id(s) match nothing in the index (1: gone.md, 1: faq.md#9)" in (
        result.stderr
    )
    summary = json.loads(result.stdout)
    assert summary["unmatched"] == 2
    assert summary["unmatchedIds"] == [{"query": "1", "id": "gone.md"},
                                       {"query": "1", "id": "faq.md#9"}]  # fmt: skip
    # Still relevant, never found: the index lacks them, and recall says so.
    assert summary["recall@10"] == round(1 / 3, 4)


def test_json_gives_per_query_metrics_and_the_rank_of_the_first_relevant_hit(tmp_path):
    store = store_of(tmp_path)
    queries = jsonl(tmp_path / "q.jsonl", [{"id": "a", "query": "rollout"},
                                           {"id": "b", "query": "aws_eks_cluster"}])  # fmt: skip
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("a\tfaq.md\t1\nb\tinfra/eks.tf\t1\n")
    per_query = json.loads(run_eval(store, queries, "--qrels", qrels, "--json").stdout)["perQuery"]
    assert [(q["id"], q["firstRelevantRank"], q["firstRelevant"]) for q in per_query] == [
        ("a", None, None), ("b", 1, "infra/eks.tf")
    ]  # fmt: skip
    assert per_query[1]["ndcg@10"] == 1.0 and per_query[0]["rr"] == 0.0


def test_group_doc_ranks_a_document_at_its_first_slice_and_group_slice_ranks_slices(tmp_path):
    store = store_of(tmp_path)
    queries = jsonl(tmp_path / "q.jsonl", [{"id": "1", "query": "canary rollout"}])
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("1\tguide/deploy.md#3\t1\n")  # the canary slice; the others also match
    docs = json.loads(run_eval(store, queries, "--qrels", qrels, "--json").stdout)
    slices = json.loads(
        run_eval(store, queries, "--qrels", qrels, "--json", "--group", "slice").stdout
    )
    assert docs["group"] == "doc" and docs["perQuery"][0]["firstRelevant"] == "guide/deploy.md"
    assert slices["group"] == "slice"
    assert slices["perQuery"][0]["firstRelevant"] == "guide/deploy.md#3"
    # A judged document stands for each of its slices when slices are ranked.
    qrels.write_text("1\tguide/deploy.md\t1\n")
    jsonl(queries, [{"id": "1", "query": "rollout"}])  # in all three slices
    whole = json.loads(
        run_eval(store, queries, "--qrels", qrels, "--json", "--group", "slice").stdout
    )
    assert whole["recall@10"] == 1.0 and whole["hit@1"] == 1.0


def test_ranked_slices_become_documents_at_their_first_occurrence():
    hits = [("c", "a.md", 2), ("c", "b.md", 1), ("c", "a.md", 1), ("d", "a.md", 1)]
    assert ranked_units(hits, "doc") == [("c", "a.md"), ("c", "b.md"), ("d", "a.md")]
    assert ranked_units(hits, "slice")[2] == ("c", "a.md", "1")


PAGES = [
    record("docs/advanced/timeouts.md", 1, "Timeouts: give up when the server is slow."),
    record("docs/quickstart.md", 1, "Quickstart: make a first request."),
    record("docs/ja/quickstart.md", 1, "Quickstart in Japanese: first request."),
    record("docs/index.md", 1, "Welcome to the client."),
    record("CHANGELOG.md", 1, "Timeouts changed in 2.0; first request faster."),
]
CRAWLED = [
    record(
        "http://127.0.0.1:8000/advanced/timeouts/", 1, "Timeouts: give up when the server is slow."
    ),
    record("http://127.0.0.1:8000/quickstart/", 1, "Quickstart: make a first request."),
    record("http://127.0.0.1:8000/", 1, "Welcome to the client."),
]
QUESTIONS = [
    {"id": "slow", "query": "give up when the server is slow", "expect": ["advanced/timeouts"]},
    {"id": "first", "query": "make a first request", "expect": ["quickstart"]},
    {"id": "home", "query": "welcome", "expect": ["index"]},
]


def test_expect_lists_match_markdown_files_and_crawled_pages_alike(tmp_path):
    questions = jsonl(tmp_path / "q.jsonl", QUESTIONS)
    for name, records in (("files", PAGES), ("site", CRAWLED)):
        (tmp_path / name).mkdir()
        store = store_of(tmp_path / name, records)
        result = run_eval(store, questions, "-k", "1", "--json")
        assert result.code == 0, result.stderr
        summary = json.loads(result.stdout)
        assert summary["judged"] == {"pages": 3} and summary["hit@1"] == 1.0, (name, summary)
        firsts = [q["firstRelevant"] for q in summary["perQuery"]]
        assert firsts[1] in ("docs/quickstart.md", "http://127.0.0.1:8000/quickstart/")


def test_expect_gates_ci_on_a_hit_rate_and_names_the_reason(tmp_path):
    store = store_of(tmp_path, PAGES)
    questions = jsonl(tmp_path / "q.jsonl", [*QUESTIONS, {"id": "typo", "query": "first",
                                                          "expect": ["quikstart"]}])  # fmt: skip
    gated = run_eval(store, questions, "-k", "3", "--min-hit-rate", "0.9")
    assert_clean_failure(gated, 1, "hit@3 0.7500 is below --min-hit-rate 0.9")
    assert "warning: 1 judged id(s) match nothing in the index (typo: quikstart)" in gated.stderr
    assert run_eval(store, questions, "-k", "3", "--min-hit-rate", "0.75").code == 0


def test_eval_needs_judgments_and_checks_its_options(tmp_path):
    store = store_of(tmp_path)
    plain = jsonl(tmp_path / "q.jsonl", [{"id": "1", "query": "x"}])
    assert_clean_failure(run_eval(store, plain), 2, "no judgments")
    bad = jsonl(tmp_path / "bad.jsonl", [{"id": "1", "query": "x", "expect": "faq"}])
    assert_clean_failure(run_eval(store, bad), 2, "expect must be a list")
    questions = jsonl(tmp_path / "e.jsonl", QUESTIONS)
    assert_clean_failure(run_eval(store, questions, "--group", "page"), 2, "--group")


def test_page_paths_of_files_and_urls():
    assert page_path("docs/advanced/timeouts.md") == "docs/advanced/timeouts"
    assert page_path("https://h/advanced/timeouts/") == "advanced/timeouts"
    assert page_path("https://h/x/index.html") == "x" and page_path("https://h/y.html") == "y"
    assert page_path("https://h/") == "" and page_path("v1.2/notes") == "v1.2/notes"
    assert page_matches("index", "docs/index.md") == 1 and page_matches("index", "https://h/") == 0
    assert page_matches("timeouts", "docs/advanced/timeouts.md") == 2
    assert page_matches("outs", "docs/advanced/timeouts.md") is None  # whole segments only


SEGMENT = st.text("abcdefghijklmnopqrstuvwxyz-_0123456789", min_size=1, max_size=8)


@given(st.lists(SEGMENT, min_size=1, max_size=4), st.sampled_from([".md", ".rst", ".mdx"]))
def test_an_expected_path_matches_its_markdown_file_and_its_crawled_url(segments, extension):
    path = "/".join(segments)
    assert page_matches(path, f"docs/{path}{extension}") == 1
    assert page_matches(path, f"https://docs.example/{path}/") == 0
    assert page_matches(path, f"https://docs.example/{path}.html") == 0
    assert page_matches(path + "x", f"docs/{path}{extension}") is None


def test_metrics_over_any_units_with_first_relevant_rank():
    report = evaluate([Query("q", "x")], {"q": {"b": 1.0}}, lambda text, depth: ["a", "b"], k=1)
    assert report.per_query[0].first_relevant == 2 and report.hit_k == 0.0 and report.mrr == 0.5


# --- the queries file: each line one query, by an id of its own ------------------------------


def _refused_both_ways(store, queries, *words):
    """`eval` and `search --queries` refuse the file before any output (a JSON error object on
    stdout under --json), naming `words`."""
    for args in (["eval"], ["eval", "--json"], ["search"], ["search", "--json"]):
        result = run_cli(*args, "--queries", queries, "--store", store, real=True)
        assert_clean_failure(result, 2, *words)
        if "--json" in args:
            error = json.loads(result.stdout)["error"]
            assert error["reason"] == "bad-queries" and all(w in error["message"] for w in words)
        else:
            assert result.stdout == ""


def test_a_query_id_used_twice_is_refused_naming_both_lines(tmp_path):
    """The first line's judgments applied to both (the second query scored against answers to
    another question); `1` and `"1"` are one id, as the output writes it."""
    store = store_of(tmp_path)
    queries = jsonl(tmp_path / "q.jsonl", [
        {"id": "q1", "query": "rollout", "expect": ["faq"]},
        {"id": 1, "query": "password", "expect": ["faq"]},
        {"id": "q1", "query": "canary", "expect": ["faq"]},
        {"id": "1", "query": "eks", "expect": ["faq"]},
    ])  # fmt: skip
    _refused_both_ways(store, queries, "q.jsonl:3", "'q1'", "line 1")
    queries.write_text("\n".join(queries.read_text().splitlines()[1:]) + "\n")
    _refused_both_ways(store, queries, "q.jsonl:3", "'1'", "line 1")


def test_a_lone_surrogate_escape_in_a_queries_file_is_refused_naming_its_line(tmp_path):
    """`"\\ud83d"` (what a JavaScript tool writes after cutting a string mid-emoji) is valid JSON
    but no text: the lines before it were printed, then a traceback; refused as `index` refuses
    such a line."""
    store = store_of(tmp_path)
    lines = ['{"id": "a", "query": "rollout", "expect": ["faq"]}',
             '{"id": "b", "query": "pool \\ud83d", "expect": ["faq"]}']  # fmt: skip
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join(lines) + "\n")
    _refused_both_ways(store, queries, "q.jsonl:2", "lone surrogate", "'\\ud83d'")
    queries.write_text('{"id": "\\udc00x", "query": "rollout", "expect": ["faq"]}\n')
    _refused_both_ways(store, queries, "q.jsonl:1", "lone surrogate")
