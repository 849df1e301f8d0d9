"""The index: incremental loads, bad input, guarantees of the store, and every query command."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flatten.errors import UsageError
from flatten.record import end_mark
from index.citations import cite, parse_rules
from index.documents import card, get, match, show, sources, toc, words
from index.errors import ConfigError, StoreError
from index.loader import load_files
from index.search import SearchOptions, search
from index.store import Store
from tests.conftest import (
    FIXTURES,
    assert_clean_failure,
    jsonl,
    lexical_engine,
    record,
    run_cli,
    write,
)

DOCS = [
    record("guide/deploy.md", 1, "Deployments roll out with kubectl apply.", title="Deploying"),
    record("guide/deploy.md", 2, "Rollbacks restore the previous ReplicaSet.", title="Rollback"),
    record("infra/eks.tf", 1, 'resource "aws_eks_cluster" "main" {}', title="aws_eks_cluster.main",
           symbol="aws_eks_cluster.main"),
    record("src/user.ts", 1, "export function getUserName(id) { return db.name(id); }",
           title="getUserName", symbol="getUserName"),
    record("faq.md", 1, "How do I reset my password? Open settings and choose reset.",
           title="Password reset"),
]  # fmt: skip


def test_incremental_loads_add_skip_update_and_remove(store, tmp_path):
    first = load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
    assert (first.added, first.unchanged, first.chunks) == (4, 0, 5)
    again = load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
    assert (again.added, again.updated, again.unchanged, again.chunks) == (0, 0, 4, 0)
    changed = [*DOCS[:1], record("guide/deploy.md", 2, "Rollbacks are instant."), *DOCS[2:4]]
    third = load_files(store, [jsonl(tmp_path / "b.jsonl", changed)], "docs")
    assert (third.updated, third.unchanged, third.removed) == (1, 2, 1)  # faq.md went away
    assert [d.source for d in match(store, ["password"])] == []
    assert show(store, "guide/deploy.md#2").content == "Rollbacks are instant."


def test_partial_load_keeps_what_it_does_not_mention(store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
    report = load_files(store, [jsonl(tmp_path / "b.jsonl", DOCS[:1])], "docs", partial=True)
    assert report.removed == 0
    assert len(sources(store)[0]) == 4


def test_reindex_rebuilds_the_corpus(store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
    report = load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs", reindex=True)
    assert report.updated == 4 and report.unchanged == 0  # every document written anew


def test_corpora_are_separate_and_search_fans_out_or_filters(store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS[:2])], "ops")
    load_files(store, [jsonl(tmp_path / "b.jsonl", DOCS[2:])], "code")
    assert {r.corpus for r in search(store, "deployments cluster").results} == {"ops", "code"}
    only_code = search(store, "deployments cluster", SearchOptions(corpus="code")).results
    assert {r.corpus for r in only_code} == {"code"}


def test_malformed_lines_are_counted_by_line_number_and_never_stop_the_load(store, tmp_path):
    lines: list[dict | str | bytes] = [
        DOCS[0],
        "{not json",
        json.dumps({"source": "x.md", "content": ["a", "list"]}),
        json.dumps({"source": "y.md", "content": "   "}),
        b'{"source": "z.md", "content": "caf\xe9"}',
        json.dumps({"source": "w.md", "content": "ok", "startLine": "ten"}),
        "[1, 2]",
        json.dumps({"source": "big.md", "content": "x" * (20 << 20)}),
        DOCS[1],
    ]
    report = load_files(store, [jsonl(tmp_path / "bad.jsonl", lines)], "docs")
    reasons = {line: reason for _, line, reason in report.malformed}
    assert sorted(reasons) == [2, 3, 4, 5, 6, 7, 8]
    assert reasons[2].startswith("bad JSON") and reasons[5].startswith("invalid UTF-8")
    assert reasons[4] == "empty content" and "16 MiB" in reasons[8]
    assert report.added == 1 and report.chunks == 2


def test_foreign_jsonl_layouts_load(store, tmp_path):
    lines = [
        {"text": "plain text line about kafka"},
        {"page_content": "langchain doc on kafka", "metadata": {"source": "lc.md"}},
        {"content": "haystack doc on kafka", "meta": {"source": "hs.md", "title": "HS"}},
        {"id_": "li#1", "text": "llamaindex node on kafka", "metadata": {"title": "LI"}},
        {"_id": "beir-7", "title": "BEIR", "text": "a BEIR corpus line on kafka"},
    ]
    report = load_files(store, [jsonl(tmp_path / "foreign.jsonl", lines)], "foreign")
    assert report.malformed == [] and report.added == 5
    assert {d.source for d in match(store, ["kafka"])} == {
        "foreign.jsonl#L1", "lc.md", "hs.md", "li", "beir-7"
    }  # fmt: skip


def test_store_is_private(tmp_path):
    path = tmp_path / "store"
    with Store.open(path) as opened:
        load_files(opened, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
        for name in os.listdir(path):
            assert stat.S_IMODE(os.stat(path / name).st_mode) == 0o600, name
        assert opened.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_missing_index_says_how_to_build_it(tmp_path):
    with pytest.raises(StoreError) as err:
        Store.open(tmp_path / "nowhere", readonly=True)
    assert err.value.reason == "index-not-built" and "ingest" in (err.value.hint or "")
    result = run_cli("search", "x", "--store", tmp_path / "nowhere")
    assert_clean_failure(result, 1, "no index", "docs-flatten index")


def test_a_second_writer_waits_then_fails_clearly_and_readers_are_not_blocked(tmp_path):
    path = tmp_path / "store"
    with Store.open(path) as opened:
        load_files(opened, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
    holder = sqlite3.connect(path / "index.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer, mid-transaction
    try:
        started = time.monotonic()
        result = run_cli("index", tmp_path / "a.jsonl", "--corpus", "docs", "--store", path,
                         "--wait", "0.3")  # fmt: skip
        assert_clean_failure(result, 1, "another docs-flatten run is writing")
        assert time.monotonic() - started >= 0.3
        reader = run_cli("search", "deployments", "--store", path, "--json")
        assert reader.code == 0 and json.loads(reader.stdout)[0]["source"] == "guide/deploy.md"
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_loader_killed_mid_load_leaves_the_previous_index_intact(tmp_path):
    path = tmp_path / "store"
    with Store.open(path) as opened:
        load_files(opened, [jsonl(tmp_path / "small.jsonl", DOCS)], "docs")
    big = [record(f"gen/{i:06}.md", 1, f"generated document {i} " + "word " * 60)
           for i in range(60_000)]  # fmt: skip
    jsonl(tmp_path / "big.jsonl", big)
    proc = subprocess.Popen(
        [sys.executable, "-m", "flatten", "index", str(tmp_path / "big.jsonl"), "--corpus",
         "docs", "--store", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    # Kill it while it holds the write transaction: a probe writer finds the store locked then.
    probe = sqlite3.connect(path / "index.sqlite", timeout=0, isolation_level=None)
    deadline = time.monotonic() + 60
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
            except sqlite3.OperationalError:  # locked: the load is in its transaction
                time.sleep(0.3)  # well inside it: pass 2 and the inserts take seconds
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.01)
    finally:
        probe.close()
    proc.wait()
    if proc.returncode != -signal.SIGKILL:
        pytest.skip("the load finished before it could be killed mid-transaction")
    with Store.open(path, readonly=True) as after:
        assert after.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert len(sources(after)[0]) == 4  # the previous snapshot, whole
        assert search(after, "rollbacks").results[0].token == "guide/deploy.md#2"


def test_natural_language_questions_and_identifiers_find_their_slices(store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
    assert search(store, "how do I reset my password?").results[0].source == "faq.md"
    assert search(store, "eks").results[0].source == "infra/eks.tf"
    assert search(store, "aws_eks_cluster").results[0].source == "infra/eks.tf"
    assert search(store, "user").results[0].source == "src/user.ts"
    assert search(store, "getUserName").results[0].source == "src/user.ts"


def test_deploy_finds_deployments_although_porter_splits_the_family(store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
    assert search(store, "deploy").results[0].token == "guide/deploy.md#1"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """One store with documents in it, shared: queries against it exercise the planner."""
    path = tmp_path_factory.mktemp("q")
    with Store.open(path) as opened:
        load_files(opened, [jsonl(path / "docs.jsonl", DOCS)], "docs")
        yield opened


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_no_query_string_raises(loaded, text):
    search(loaded, text)
    try:
        match(loaded, text.split() or ["x"])
    except UsageError:  # only "-word" exclusions and nothing to find: said plainly
        assert all(w.startswith("-") or not w.strip() for w in text.split())


def test_terminal_control_sequences_are_stripped_where_text_leaves_the_tool(store, tmp_path):
    evil = record("evil.md", 1, "clean \x1b[2J\x1b]0;owned\x07text \x07bell", title="t\x1b[31mred")
    load_files(store, [jsonl(tmp_path / "a.jsonl", [evil])], "docs")
    assert search(store, "clean text").results[0].title == "t\x1b[31mred"  # the library keeps it
    for args in (("search", "clean text"), ("search", "clean text", "--json"),
                 ("show", "evil.md#1"), ("toc",), ("get", "evil.md")):  # fmt: skip
        shown = run_cli(*args, "--store", store.location)
        assert shown.code == 0 and shown.stdout, args
        assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout, args


def test_bidi_overrides_are_written_as_escapes_where_text_leaves_the_tool(store, tmp_path):
    """A name or text holding U+202E shows in another order than it reads (Trojan Source): it
    is written `\\u202e`, and the name as shown works when given back; right-to-left prose and
    its plain marks (U+200F) are shown as they are."""
    evil = record("invoice\u202etxt.exe.md", 1, "access \u2067granted\u2069 level \u200fשלום",
                  title="admin\u202aonly\u202c")  # fmt: skip
    load_files(store, [jsonl(tmp_path / "a.jsonl", [evil])], "docs")
    for args in (("search", "access granted"), ("search", "access granted", "--json"),
                 ("toc",), ("get", "invoice\u202etxt.exe.md")):  # fmt: skip
        shown = run_cli(*args, "--store", store.location)
        assert shown.code == 0 and shown.stdout, args
        text = json.dumps(json.loads(shown.stdout), ensure_ascii=False) if "--json" in args \
            else shown.stdout  # fmt: skip
        assert not any(c in text for c in "\u202a\u202c\u202e\u2067\u2069"), args
    shown_name = "invoice\\u202etxt.exe.md"
    assert shown_name in run_cli("toc", "--store", store.location).stdout
    for name in (shown_name, "invoice\u202etxt.exe.md"):
        shown = run_cli("get", name, "--store", store.location).stdout
        assert "access \\u2067granted\\u2069 level \u200fשלום" in shown


def test_citation_rules_map_sources_with_groups_builtins_and_encoding():
    rules = parse_rules([
        {"pattern": r"^docs/(?P<page>.+)\.md$", "replace": "https://x.dev/${page}/#$anchor"},
        {"pattern": r"^(src)/(.+)$", "replace": "https://git/$1/blob/$2#L$ordinal $$"},
    ])  # fmt: skip
    assert cite(rules, "docs/a b/c.md", anchor="set-up") == "https://x.dev/a%20b/c/#set-up"
    assert cite(rules, "src/x.py", ordinal=3) == "https://git/src/blob/x.py#L3 $"
    assert cite(rules, "other.txt") is None


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"pattern": "", "replace": "x"}, "citations[0].pattern: empty"),
        ({"pattern": "a", "replace": ""}, "citations[0].replace: empty"),
        ({"pattern": "(", "replace": "x"}, "citations[0].pattern: does not compile"),
        ({"pattern": "(a)", "replace": "$nope"}, "citations[0].replace: $nope is neither"),
        ({"pattern": "(a)", "replace": "$2"}, "citations[0].replace: $2 but the pattern has 1"),
    ],
)
def test_bad_citation_rules_are_refused_with_their_position(rule, message):
    with pytest.raises(ConfigError) as err:
        parse_rules([rule])
    assert message in str(err.value)


def test_bad_citation_rule_in_config_is_a_usage_error(tmp_path):
    (tmp_path / "docs-flatten.yaml").write_text("citations:\n  - pattern: '('\n    replace: x\n")
    with Store.open(tmp_path / "store") as opened:
        load_files(opened, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
    result = run_cli("search", "x", "--store", tmp_path / "store", cwd=tmp_path)
    assert_clean_failure(result, 2, "citations[0].pattern")


def test_get_pages_a_document_with_a_continuation_offset(store, tmp_path):
    long = [record("long.md", i, f"Paragraph {i}. " + "text " * 400) for i in range(1, 11)]
    load_files(store, [jsonl(tmp_path / "a.jsonl", long)], "docs")
    pages, offset = [], 0
    while offset is not None:
        page = get(store, "long.md", offset=offset)
        pages.append(page.text)
        offset = page.next_offset
    assert len(pages) >= 2 and all(len(p) <= 12_000 for p in pages)
    assert "".join(pages) == "\n\n".join(r["content"] for r in long)


def test_match_words_sources_toc_and_card(store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
    # Words in different chunks of one document still match it.
    assert [d.source for d in match(store, ["rollbacks", "kubectl"])] == ["guide/deploy.md"]
    assert [d.source for d in match(store, ["reset", "-password"])] == []
    assert [d.source for d in match(store, ["deployments"], exact=True)] == ["guide/deploy.md"]
    assert match(store, ["deploy"], exact=True) == []  # only "Deployments" is there
    found = {w.word: w for w in words(store, "^deploy")}
    assert found["deployments"].exact_documents == 1
    listed, unmapped = sources(store, rules=parse_rules([{"pattern": "^guide/", "replace": "x"}]))
    assert len(listed) == 4 and unmapped == 3
    assert [e.source for e in toc(store, "guide/")] == ["guide/deploy.md"]
    text = card(store, budget=60)
    assert text == card(store, budget=60) and len(text) <= 60 * 4 + 200
    assert "corpus `docs`: 4 documents" in text


def test_cli_index_search_json_queries_file_and_tier_line(tmp_path, store_url):
    store_path = store_url
    data = jsonl(tmp_path / "a.jsonl", DOCS)
    loaded = run_cli("index", data, "--corpus", "docs", "--store", store_path)
    assert loaded.code == 0 and "4 added" in loaded.stderr and loaded.stdout == ""
    human = run_cli("search", "rollbacks", "--store", store_path)
    engine = lexical_engine(store_url)
    assert human.stderr.startswith(f"tier: lexical ({engine}) - no embeddings configured")
    assert human.stdout.startswith("1. ")
    as_json = run_cli("search", "rollbacks", "--store", store_path, "--json")
    results = json.loads(as_json.stdout)
    assert "tier: lexical" in as_json.stderr
    for key in ("token", "source", "ordinal", "title", "section", "anchor", "startLine",
                "endLine", "score", "corpus", "citation", "snippet"):  # fmt: skip
        assert key in results[0]
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "query": "rollbacks"}\n{"id": "b", "query": "eks"}\n')
    batch = run_cli("search", "--queries", queries, "--store", store_path, "--json")
    lines = [json.loads(line) for line in batch.stdout.splitlines()]
    assert [(x["id"], x["results"][0]["source"]) for x in lines] == [
        ("a", "guide/deploy.md"), ("b", "infra/eks.tf")
    ]  # fmt: skip


def test_cli_eval_reports_metrics_and_fails_under_a_floor(tmp_path, store_url):
    store_path = store_url
    run_cli("index", jsonl(tmp_path / "a.jsonl", DOCS), "--corpus", "d", "--store", store_path)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "1", "query": "password reset"}\n{"id": "2", "query": "eks"}\n')
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n1\tfaq.md\t1\n2\tinfra/eks.tf\t1\n")
    result = run_cli("eval", "--queries", queries, "--qrels", qrels, "--store", store_path,
                     "--json")  # fmt: skip
    metrics = json.loads(result.stdout)
    assert metrics["ndcg@10"] == 1.0 and metrics["mrr"] == 1.0 and metrics["queries"] == 2
    qrels.write_text("1\tnot-there\t1\n")
    floor = run_cli("eval", "--queries", queries, "--qrels", qrels, "--store", store_path,
                    "--min-ndcg", "0.5")  # fmt: skip
    assert_clean_failure(floor, 1, "below --min-ndcg")


def test_cli_ingest_a_folder_and_reingest_is_a_no_op(tmp_path, store_url):
    store_path = store_url
    tree = FIXTURES / "docs-tree"
    first = run_cli("ingest", "--root", tree, "--corpus", "docs", "--store", store_path, "--json")
    assert (
        first.code == 0 and json.loads(first.stdout)["load"]["added"] == 8
    )  # LICENSE: boilerplate
    second = run_cli("ingest", "--root", tree, "--corpus", "docs", "--store", store_path, "--json")
    report = json.loads(second.stdout)
    assert (report["load"]["added"], report["load"]["updated"], report["load"]["unchanged"]) == (
        0,
        0,
        8,
    )
    assert report["chunks"]["written"] == 0 < report["chunks"]["total"]  # a no-op keeps its size
    shown = run_cli("show", "docs/guide/install.md#2", "--store", store_path)
    assert shown.code == 0 and "With pip" in shown.stdout


def test_cli_index_reads_stdin_and_directories(tmp_path, store_url):
    store_path = store_url
    write(tmp_path / "notes", {"a.md": "# Alpha\nbody about zebras\n"})
    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "index", "-", str(tmp_path / "notes"), "--corpus", "mix",
         "--store", str(store_path)],
        input=json.dumps(DOCS[0]) + "\n" + json.dumps(end_mark(1)) + "\n", capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = run_cli("match", "zebras", "--store", store_path, "--paths-only")
    assert found.stdout.splitlines()[-1] == "a.md"


def test_our_lines_and_foreign_lines_load_to_the_same_index(store, tmp_path):
    native = jsonl(tmp_path / "native.jsonl", DOCS)
    # The same records with the keys in another order: parsed as foreign lines.
    foreign = jsonl(tmp_path / "foreign.jsonl", [dict(reversed(list(r.items()))) for r in DOCS])
    load_files(store, [native], "a")
    load_files(store, [foreign], "b")
    for corpus in ("a", "b"):
        found = search(store, "rollbacks", SearchOptions(corpus=corpus)).results
        assert [(r.token, r.title) for r in found] == [("guide/deploy.md#2", "Rollback")]


def test_a_bad_line_that_looks_like_ours_is_caught_when_parsed(store, tmp_path):
    bad = '{"id":"a.md#1","source":"a.md","content": 42}'
    report = load_files(store, [jsonl(tmp_path / "a.jsonl", [DOCS[0], bad])], "docs")
    assert [(line, reason.split(":")[0]) for _, line, reason in report.malformed] == [
        (2, "no text")
    ]
    assert report.added == 1  # guide/deploy.md; a.md had no good line


def test_documents_split_across_the_file_and_over_the_memory_budget(store, tmp_path):
    interleaved = [DOCS[0], DOCS[2], DOCS[1], DOCS[3]]  # guide/deploy.md comes back later
    path = jsonl(tmp_path / "a.jsonl", interleaved)
    report = load_files(store, [path], "docs", hold_chars=10)  # far too small to keep anything
    assert (report.added, report.chunks) == (3, 4)
    assert show(store, "guide/deploy.md#2").content.startswith("Rollbacks")
    again = load_files(store, [path], "docs", hold_chars=10)
    assert again.unchanged == 3 and again.chunks == 0


def test_content_commands_print_exactly_their_content_and_no_tier_line(tmp_path, store_url):
    store_path = store_url
    write(tmp_path / "notes", {"a.md": "# Alpha\nbody about zebras\n"})
    assert run_cli("index", tmp_path / "notes", "--corpus", "n", "--store", store_path).code == 0
    page = run_cli("get", "a.md", "--store", store_path)
    assert page.code == 0 and page.stdout == "# Alpha\nbody about zebras\n" and page.stderr == ""
    for args in (("show", "a.md#1"), ("card",), ("toc",), ("stats",), ("words",),
                 ("match", "zebras"), ("sources",)):  # fmt: skip
        result = run_cli(*args, "--store", store_path)
        assert result.code == 0 and "tier:" not in result.stdout + result.stderr, args


def test_ingest_is_one_library_call_from_records_to_a_loaded_store(tmp_path):
    from flatten import FlattenOptions, flatten_root
    from index.ingest import ingest_records

    write(tmp_path / "notes", {"a.md": "# Alpha\nbody about zebras\n", "b.md": "# Beta\nyaks\n"})
    first = ingest_records(tmp_path / "store", flatten_root(tmp_path / "notes", FlattenOptions()),
                           "notes")  # fmt: skip
    again = ingest_records(tmp_path / "store", flatten_root(tmp_path / "notes", FlattenOptions()),
                           "notes")  # fmt: skip
    assert (first.load.added, again.load.unchanged, first.vectors) == (2, 2, None)
    assert first.load.corpus == "notes" and first.chunks_total == again.chunks_total > 0
    with Store.open(tmp_path / "store", readonly=True) as opened:
        assert [d.source for d in match(opened, ["zebras"])] == ["a.md"]


def test_a_bad_show_reference_is_echoed_as_typed_not_taken_for_a_secret(tmp_path):
    store = tmp_path / "store"
    corpus = jsonl(tmp_path / "x.jsonl", [record("a.md", 1, "hello world")])
    assert run_cli("index", corpus, "--corpus", "x", "--store", store, "-q").code == 0
    result = run_cli("show", "nosuch#zz", "--store", store)
    assert result.code == 2 and "REDACTED" not in result.stderr
    assert "'nosuch#zz' is not a slice reference" in result.stderr


def test_a_huge_word_of_multibyte_characters_is_searched_and_later_stems_stay_right(tmp_path):
    # The tokenizer cut the stemmed token inside a character: sqlite3 refused to decode it, and
    # the stemmer kept that word, so every later word of the process got its stem.
    from index.lexical import stem

    store = tmp_path / "store"
    corpus = jsonl(tmp_path / "x.jsonl", [record("a.md", 1, "deployments of hello 0\U00010000")])
    assert run_cli("index", corpus, "--corpus", "x", "--store", store, "-q").code == 0
    with Store.open(store, readonly=True) as opened:
        assert search(opened, "0\U00010000" * 6554, SearchOptions()).results == []
    assert stem("deployments") == "deploy"


def test_a_query_word_the_index_lacks_does_not_hide_the_words_it_has(tmp_path):
    # "configure" is in most chunks (common) and "site" in none: the absent word used to count
    # as the rarer one, the common word was dropped, and the question found nothing.
    rows = [record(f"d{i}.md", 1, f"configure option {i} here") for i in range(8)]
    store = tmp_path / "store"
    corpus = jsonl(tmp_path / "x.jsonl", rows)
    assert run_cli("index", corpus, "--corpus", "x", "--store", store, "-q").code == 0
    with Store.open(store, readonly=True) as opened:
        found = search(opened, "how do I configure the site", SearchOptions(top_k=3)).results
    assert found and all(hit.source.startswith("d") for hit in found)


@pytest.mark.parametrize("query", ["", "   ", "?!", "—"])
def test_a_search_of_no_words_is_a_usage_error_as_knowledge_search_says(tmp_path, query):
    result = run_cli("search", query, "--store", tmp_path / "nowhere")
    assert_clean_failure(result, 2, "at least one word")


def test_a_path_prefix_no_source_starts_with_names_how_sources_look(tmp_path, store_url):
    # A crawled site's sources are whole URLs: `--path advanced/` finds nothing, and says why.
    pages = [record(f"https://docs.example/{p}", 1, f"proxy settings on {p}")
             for p in ("advanced/proxies/", "advanced/ssl/", "quickstart/")]  # fmt: skip
    loaded = run_cli("index", jsonl(tmp_path / "site.jsonl", pages), "--corpus", "site",
                     "--store", store_url)  # fmt: skip
    assert loaded.code == 0, loaded.stderr
    for args in (("search", "proxy", "--path", "advanced/"), ("toc", "advanced/")):
        missed = run_cli(*args, "--store", store_url)
        assert_clean_failure(missed, 2, "no document's source starts with 'advanced/'",
                             "https://docs.example/advanced/proxies/")  # fmt: skip
    listed = run_cli("toc", "https://docs.example/advanced/", "--store", store_url, "--json")
    assert len(json.loads(listed.stdout)) == 2, listed.stderr
    found = run_cli("search", "proxy", "--path", "nowhere/", "--path",
                    "https://docs.example/advanced/", "--store", store_url, "--json")  # fmt: skip
    assert found.code == 0, found.stderr
    assert {h["source"] for h in json.loads(found.stdout)} == {
        "https://docs.example/advanced/proxies/",
        "https://docs.example/advanced/ssl/",
    }


def test_words_matches_in_linear_time_and_names_what_re2_cannot_do(tmp_path):
    # Python's re takes exponential time on (a+)+$ over "aaa...ab"; the pattern comes from whoever
    # asks (an agent too), so the vocabulary is matched by RE2.
    write(tmp_path / "notes", {"a.md": "# A\ntoken " + "a" * 40 + "b\n"})
    store = tmp_path / "store"
    assert run_cli("index", tmp_path / "notes", "--corpus", "n", "--store", store).code == 0
    found = run_cli("words", "(a+)+$", "--store", store, real=True, timeout=60)
    assert found.code == 0 and "ab " not in found.stdout, found.stderr
    assert "a" * 40 + "b" in run_cli("words", "^a+b$", "--store", store).stdout
    refused = run_cli("words", r"(a)\1", "--store", store)
    assert_clean_failure(refused, 2, "not a regular expression")
    assert "backreferences" in refused.stderr


def test_the_card_says_a_crawled_corpus_came_from_its_site(store, tmp_path):
    pages = [
        record(
            "https://docs.example:8443/guide/",
            1,
            "install it",
            url="https://docs.example:8443/guide/",
        )
    ]
    load_files(store, [jsonl(tmp_path / "site.jsonl", pages)], "site")
    load_files(store, [jsonl(tmp_path / "notes.jsonl", [record("a.md", 1, "notes")])], "notes")
    text = card(store)
    assert "corpus `site`: 1 documents, 1 chunks, from the site https://docs.example:8443/" in text
    assert "corpus `notes`: 1 documents, 1 chunks, from local files" in text


def test_a_folder_named_in_bytes_that_are_not_utf8_is_ingested_under_its_escaped_name(
    tmp_path, store_url
):
    # Its name became the default corpus name and the corpus's source with the raw bytes in
    # them: a traceback at the store (SQLite and PostgreSQL take UTF-8 only).
    folder = tmp_path / os.fsdecode(b"notes\xff")
    write(folder, {"a.md": "# A\n\nzebra crossing\n"})
    for command in (("ingest", "--root", folder), ("index", folder)):
        done = run_cli(*command, "--store", store_url, "--json")
        assert done.code == 0, done.stderr
        assert "Traceback" not in done.stderr
    stats = run_cli("stats", "--store", store_url)
    assert "corpus notes\\xff: 1 documents" in stats.stdout, stats.stdout
