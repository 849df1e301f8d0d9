"""What the query commands and the MCP answers give out: one JSON form, the tier as data, every
field cleaned at the output, answers within the cap for any input, literal toc prefixes, unknown
corpora named, and file names that cannot break a line of output."""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flatten.jsonform import camel, json_field, to_json
from index.agent import MAX_WORDS, OUTPUT_CAP, Knowledge
from index.errors import QueryError
from index.results import Hit, read_slice
from index.search import search_mode
from index.store import Store
from tests.conftest import FIXTURES, assert_clean_failure, jsonl, record, run_cli

GITHUB_TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
AWS_KEY = "AKIA" + "Z7Q3M4N5P6R7S8T9"
CLIPBOARD = "\x1b]52;c;ZWNobyBvd25lZA==\x07"  # OSC 52: write to the terminal's clipboard
HOSTILE = ("\x1b", "\x07", "\x9b", GITHUB_TOKEN, AWS_KEY)
NEWLINE_SOURCE = "notes/two\nlines.md"


def no_hostile(text: str) -> bool:
    return not any(bad in text for bad in HOSTILE)


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    """The docs-tree fixture, plus a corpus of hostile, huge and oddly named documents."""
    root = tmp_path_factory.mktemp("results")
    store = root / "store"
    assert run_cli("index", FIXTURES / "docs-tree", "--store", store, "-q").code == 0
    notes = [
        record(f"notes/{AWS_KEY}.md", 1, f"Deploy with {GITHUB_TOKEN} and zebra stripes.",
               title=f"Keys {CLIPBOARD}{GITHUB_TOKEN}", section=[f"Ops \x1b[2J{AWS_KEY}", "x"]),
        record(NEWLINE_SOURCE, 1, "zebra crossing notes", title="Two\nlines"),
        record("notes/big.md", 1, "bigword " + "lorem ipsum dolor " * 3000, title="Big one"),
        record("notes/big.md", 2, "bigword " + "sit amet consectetur " * 3000, title="Big two"),
        record("notes/wide.md", 1, "漢字かな交じり文 " * 4000, title="Wide characters"),
        record("notes/long-title.md", 1, "longtitle body", title="T" * 40_000),
        record("docs/many1_a.md", 1, "prefix one", title="A"),
        record("docs/many1xb.md", 1, "prefix two", title="B"),
        record("Docs/many1_c.md", 1, "prefix three", title="C"),
        record("docs/MANY1_d.md", 1, "prefix four", title="D"),
        record("docs/100%.md", 1, "prefix five", title="E"),
    ]  # fmt: skip
    loaded = run_cli("index", jsonl(root / "notes.jsonl", notes), "--store", store,
                     "--corpus", "notes", "-q")  # fmt: skip
    assert loaded.code == 0, loaded.stderr
    return store


@pytest.fixture(scope="module")
def knowledge(store_dir):
    answering = Knowledge(store_dir)
    yield answering
    answering.close()


# -- the one serializer ---------------------------------------------------------------------


class Colour(enum.StrEnum):
    RED = "red"


@dataclasses.dataclass
class Inner:
    start_line: int
    colour: Colour = Colour.RED


@dataclasses.dataclass
class Outer:
    inner_list: list[Inner]
    score: float = dataclasses.field(default=0.0, metadata=json_field(digits=2))
    maybe: str | None = dataclasses.field(default=None, metadata=json_field(omit_none=True))
    kept_none: str | None = None
    row_id: int = dataclasses.field(default=0, metadata=json_field(skip=True))
    extra: dict[str, str] = dataclasses.field(default_factory=dict,
                                              metadata=json_field(inline=True))  # fmt: skip


def test_to_json_writes_camel_case_and_honours_each_field_option():
    data = to_json(Outer([Inner(3)], score=1.23456, row_id=7, extra={"lineUnit": "cell"}))
    assert data == {"innerList": [{"startLine": 3, "colour": "red"}], "score": 1.23,
                    "keptNone": None, "lineUnit": "cell"}  # fmt: skip
    assert list(data) == ["innerList", "score", "keptNone", "lineUnit"]
    assert camel("keyword_match") == "keywordMatch" and camel("source") == "source"


# -- a slice named in text ---------------------------------------------------------------------


def test_a_label_keeps_the_slice_number_out_of_a_urls_fragment():
    page = "https://docs.example.com/guide/install.html"
    hit = Hit(source=page, corpus="site", ordinal=3, title="Install", section=[],
              anchor="install", start_line=None, end_line=None, line_unit=None,
              citation=f"{page}#install")  # fmt: skip
    label = hit.label()
    assert label == f"{page} (slice 3)"
    # The URL a terminal or a reader takes from the label (up to the space) is the page's own.
    assert urlsplit(label.split(" ")[0]).fragment == ""
    assert urlsplit(hit.token).fragment == "3"  # what the token did: an anchor named 3
    assert read_slice(label) == read_slice(hit.token) == (hit.source, 3)


@given(source=st.text(min_size=1, max_size=40), ordinal=st.integers(1, 2**63 - 1))
def test_a_slice_is_read_back_from_its_label_and_from_its_token(source, ordinal):
    # Even a source that itself ends like a label or a token (`a (slice 2)`, `a#5`).
    # And a source holding line breaks, as `search --json` gives its token.
    assert read_slice(f"{source} (slice {ordinal})") == (source, ordinal)
    assert read_slice(f"{source}#{ordinal}") == (source, ordinal)


def test_what_is_neither_a_label_nor_a_token_is_not_a_slice():
    for text in ("guide.md", "guide.md (slice)", "guide.md (slice x)", "guide.md#",
                 f"guide.md (slice {2**63})", f"guide.md#{2**63}"):  # fmt: skip
        assert read_slice(text) is None, text


# -- one JSON form and the tier as data --------------------------------------------------------


def test_cli_json_queries_lines_and_mcp_hits_share_one_form(store_dir, knowledge, tmp_path):
    cli = json.loads(run_cli("search", "install docker", "--store", store_dir, "--json").stdout)
    queries = jsonl(tmp_path / "q.jsonl", [{"id": "q1", "query": "install docker"}])
    line = json.loads(run_cli("search", "--queries", queries, "--store", store_dir).stdout)
    mcp = knowledge.search("install docker", 10)
    assert line["results"] == cli and line["id"] == "q1" and line["query"] == "install docker"
    assert [{k: v for k, v in hit.items() if k != "text"} for hit in mcp["results"]] == [
        {k: v for k, v in hit.items() if k != "snippet"} for hit in cli
    ]
    assert "docker" in mcp["results"][0]["text"]
    assert {"token", "source", "startLine", "citation"} <= set(cli[0])


def test_the_tier_is_structured_in_json_and_worded_only_on_stderr(store_dir, knowledge, tmp_path):
    queries = jsonl(tmp_path / "q.jsonl", [{"id": "q1", "query": "install docker"}])
    batch = run_cli("search", "--queries", queries, "--store", store_dir)
    lexical = {"name": "lexical", "degraded": False, "reason": "no embeddings configured"}
    assert json.loads(batch.stdout)["tier"] == lexical
    assert batch.stderr == "tier: lexical (FTS5) - no embeddings configured\n"
    assert knowledge.search("install docker")["tier"] == lexical


def test_query_errors_name_the_value_and_no_flag_the_cli_adds_the_flag(store_dir):
    for call, value in ((lambda: search_mode("fast", None, False), "fast"),
                        (lambda: search_mode(None, "mmr", False), "mmr"),
                        (lambda: search_mode("hybrid", None, False), "hybrid")):  # fmt: skip
        with pytest.raises(QueryError) as raised:
            call()
        assert raised.value.value == value and "--" not in raised.value.message
    result = run_cli("search", "x", "--store", store_dir, "--tier", "fast")
    assert_clean_failure(result, 2, "--tier: unknown tier 'fast'")
    result = run_cli("get", "docs/guide/install.md", "--offset", "-1", "--store", store_dir)
    assert_clean_failure(result, 2, "--offset: the offset must be 0 or more, not -1")


# -- every field cleaned at the output (issue 11 #6) -------------------------------------------


def test_every_field_of_every_mcp_answer_is_cleaned(knowledge):
    answers = [
        knowledge.search("deploy zebra keys", 20),
        knowledge.enumerate("zebra"),
        knowledge.toc("notes/"),
        knowledge.get(f"notes/{AWS_KEY}.md"),
        knowledge.search("deploy zebra keys", corpus=f"nope {CLIPBOARD}{GITHUB_TOKEN}"),
    ]
    assert [a["status"] for a in answers] == ["ok", "ok", "ok", "ok", "unknown_corpus"]
    for answer in answers:
        text = json.dumps(answer, ensure_ascii=False)
        assert no_hostile(text), text
    assert "[REDACTED:aws-access-key]" in json.dumps(answers[1])  # the path itself


@pytest.mark.parametrize("args", [("toc",), ("toc", "--json"), ("search", "deploy zebra keys"),
                                  ("search", "deploy zebra keys", "--json"), ("sources",),
                                  ("sources", "--json"), ("match", "zebra"), ("card",),
                                  ("show", f"notes/{AWS_KEY}.md#1"), ("get", f"notes/{AWS_KEY}.md"),
                                  ("words", "zebra")])  # fmt: skip
def test_every_line_a_command_prints_is_cleaned(store_dir, args):
    result = run_cli(*args, "--store", store_dir)
    assert result.code == 0, result.stderr
    assert no_hostile(result.stdout + result.stderr), result.stdout


def test_a_newline_in_a_file_name_cannot_break_the_line_layout(store_dir):
    listed = run_cli("sources", "--corpus", "notes", "--store", store_dir).stdout.splitlines()
    found = run_cli("search", "crossing", "--store", store_dir).stdout.splitlines()
    assert any(line.startswith("notes/two\\nlines.md  [notes]") for line in listed)
    assert not any(line.startswith("lines.md") for line in listed)
    assert found[0].startswith("1. notes/two\\nlines.md (slice 1)") and found[1] == "   Two\\nlines"
    assert len(found) == 3  # the hit's line, its title, its snippet


# -- literal toc prefixes and unknown corpora (issue 11 #12) -----------------------------------


def test_toc_prefixes_match_literally_and_case_sensitively(store_dir, knowledge):
    listed = run_cli("toc", "docs/many1_", "--store", store_dir, "--json")
    assert [e["source"] for e in json.loads(listed.stdout)] == ["docs/many1_a.md"]
    percent = knowledge.toc("docs/100%")
    assert [d["source"] for d in percent["documents"]] == ["docs/100%.md"]
    assert knowledge.toc("docs/many1")["count"] == 2  # many1_a and many1xb, not Docs/ nor MANY1


@pytest.mark.parametrize(
    "args",
    [
        ("search", "zebra"),
        ("match", "zebra"),
        ("sources",),
        ("toc",),
        ("get", "notes/big.md"),
        ("show", "notes/big.md#1"),
    ],
)
def test_an_unknown_corpus_is_an_error_naming_the_corpora_there_are(store_dir, args):
    result = run_cli(*args, "--corpus", "note", "--store", store_dir)
    assert_clean_failure(result, 2, "--corpus: no corpus 'note'", "'docs-tree', 'notes'")


def test_an_unknown_corpus_is_a_status_naming_the_corpora_for_every_tool(knowledge):
    for answer in (
        knowledge.search("zebra", corpus="note"),
        knowledge.enumerate("zebra", corpus="note"),
        knowledge.toc("", corpus="note"),
        knowledge.get("notes/big.md", corpus="note"),
    ):
        assert answer["status"] == "unknown_corpus" and "'notes'" in answer["message"]


# -- the cap holds for any input (issue 11 #11) ------------------------------------------------


def test_a_huge_query_still_gets_its_results(knowledge):
    found = knowledge.search("install docker " + "x" * 24_000)
    assert found["status"] == "ok" and found["results"]
    assert len(found["query"]) < 300 and found["queryChars"] == 24_015
    assert len(json.dumps(found, ensure_ascii=False).encode()) <= OUTPUT_CAP


def test_a_long_unknown_query_word_is_not_tried_as_every_compound(store_dir):
    """Each cut of an unknown word into two words is stemmed and looked up: a 24,000-letter
    word cost 48,000 stems of its own length (half a minute for one MCP search)."""
    from index.lexical import Vocabulary, compounds

    asked: list[str] = []

    class Counting(Vocabulary):
        def docs(self, terms: list[str]) -> dict[str, int]:
            asked.extend(terms)
            return super().docs(terms)

    word = "x" * 2_000
    with Store.open(store_dir, readonly=True) as opened:
        assert compounds(Counting(opened.db), [word, "docker"], {word}) == {}
    assert len(asked) <= 2  # the join of the two words, and nothing per cut


def test_enumerate_considers_a_bounded_number_of_words_and_says_so(knowledge):
    words = " ".join(["zebra"] + [f"word{n}" for n in range(100_000)])
    answer = knowledge.enumerate(words)
    assert answer["note"] == f"Only the first {MAX_WORDS} of the 100001 words were looked for."
    assert len(json.dumps(answer, ensure_ascii=False).encode()) <= OUTPUT_CAP


def test_a_page_of_wide_characters_is_shortened_to_fit_and_continues(knowledge):
    first = knowledge.get("notes/wide.md")
    assert first["status"] == "ok" and first["nextOffset"] == len(first["text"])
    assert len(json.dumps(first, ensure_ascii=False).encode()) <= OUTPUT_CAP
    second = knowledge.get("notes/wide.md", first["nextOffset"])
    assert second["offset"] == first["nextOffset"] and second["text"]


def huge(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Short text, or the same repeated up to 100,000 times (the hostile review's sizes)."""
    return st.one_of(strategy, st.builds(lambda s, n: s * n, strategy, st.integers(1, 100_000)))


pieces = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["zebra ", "bigword ", "notes/", "docs/", "T", "漢字 ", f"{CLIPBOARD} ", "-zebra "]
)
corpora = st.none() | st.sampled_from(["notes", "docs-tree", ""]) | huge(pieces)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(tool=st.sampled_from(["search", "enumerate", "get", "toc"]), text=huge(pieces),
       number=st.integers(-10, 10**7), flag=st.booleans(), corpus=corpora)  # fmt: skip
def test_every_answer_of_every_tool_fits_the_cap(knowledge, tool, text, number, flag, corpus):
    if tool == "search":
        answer = knowledge.search(text, number, corpus)
    elif tool == "enumerate":
        answer = knowledge.enumerate(text, flag, corpus)
    elif tool == "get":
        answer = knowledge.get(text if flag else "notes/wide.md", number, corpus)
    else:
        answer = knowledge.toc(text if flag else "", corpus)
    encoded = json.dumps(answer, ensure_ascii=False)
    assert len(encoded.encode()) <= OUTPUT_CAP, (tool, len(encoded))
    assert "\x1b" not in encoded and answer["status"]


def test_a_corpus_filter_does_not_run_the_match_once_per_chunk(store_dir):
    from index.scope import Scope, scope_filter
    from index.textindex.fts5 import rank_query

    with Store.open(store_dir, readonly=True) as opened:
        in_scope, params = scope_filter(opened.db, Scope("notes", paths=("notes/",)))
        sql = rank_query(in_scope)
        plan = opened.db.execute("EXPLAIN QUERY PLAN " + sql, ['"zebra"', *params, 10])
        fts = [row[3] for row in plan if "VIRTUAL TABLE" in row[3]]
    # `INDEX 0:=M...` would mean a rowid lookup per corpus chunk, each running the MATCH.
    assert fts and all("=" not in step.split("INDEX", 1)[1] for step in fts), fts


def test_a_slice_token_whose_source_holds_a_line_break_splits_whole():
    from flatten.record import split_id

    assert split_id("docs/new\nline.md#3") == ("docs/new\nline.md", 3)
    assert split_id("a.md#3\n") is None  # a line break after the ordinal is not an ordinal
