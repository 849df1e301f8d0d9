"""Code search lands on the declaration a question is about: the slice that declares the name the
question gives (not a helper nested in it), and a declaration cut into several slices shown once,
at its signature when that matched, cited from its signature to its end.

The records are shaped as the code slicer cuts real files (black's `linegen.py`, scrapy's
`retry.py`, black's `trans.py`): statement runs titled `name (part k/n)` sharing the symbol, and
nested helpers as `outer.helper`, the outer function's signature in its first helper's slice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from index.declarations import Declaration, _Row, name_words, spelled, split_declarations
from index.loader import load_records
from index.search import SearchOptions, search
from index.store import Store
from tests.conftest import jsonl, record, run_cli
from tests.embedserver import EmbeddingServer
from tests.sites import serve

LINEGEN = "src/black/linegen.py"
SPLIT_FUNCTION = (
    "@dont_increase_indentation\n"
    "def delimiter_split(\n    line: Line, features: Collection[Feature], mode: Mode\n"
    ") -> Iterator[Line]:\n"
    '    """Split according to delimiters of the highest priority.\n\n'
    "    If the appropriate Features are given, the split will add trailing commas also in\n"
    '    function signatures and calls that contain `*` and `**`.\n    """\n'
    "    if len(line.leaves) == 0:\n        raise CannotSplit('Line empty') from None\n"
    "    last_leaf = line.leaves[-1]\n\n    bt = line.bracket_tracker\n"
    "    try:\n        delimiter = bt.max_delimiter_priority(exclude={id(last_leaf)})\n"
    "    except ValueError:\n        raise CannotSplit('No delimiters found') from None\n\n"
    "    if (\n        delimiter == DOT_PRIORITY\n"
    "        and bt.delimiter_count_with_priority(delimiter) == 1\n    ):\n"
    "        raise CannotSplit('Splitting a single attribute from its parent looks wrong')\n\n"
    "    depth = line.depth + 1\n    delimiters = bt.delimiters\n"
    "    current_line = Line(\n"
    "        mode=line.mode, depth=line.depth, inside_brackets=line.inside_brackets\n    )\n"
    "    lowest_depth = sys.maxsize\n    trailing_comma_safe = True\n"
)
NESTED_HELPERS = (
    "    def append_to_line(leaf: Leaf) -> Iterator[Line]:\n"
    '        """Append `leaf` to current line or to new line if appending impossible."""\n'
    "        nonlocal current_line\n        try:\n"
    "            current_line.append_safe(leaf, preformatted=True)\n"
    "        except ValueError:\n            yield current_line\n"
    "            current_line = Line(mode=line.mode, depth=line.depth)\n"
    "            current_line.append(leaf)\n"
)


def _linegen() -> list[dict]:
    return [
        record(LINEGEN, 1, "import re\nfrom black.lines import Line\n",
               title=f"{LINEGEN} (top level)", startLine=1, endLine=2),
        record(LINEGEN, 2, SPLIT_FUNCTION, title="delimiter_split", symbol="delimiter_split",
               startLine=1612, endLine=1626),
        record(LINEGEN, 3, NESTED_HELPERS, title="delimiter_split: append_to_line, append_comments",
               symbol="delimiter_split.append_to_line", startLine=1628, endLine=1650),
    ]  # fmt: skip


RETRY = "scrapy/downloadermiddlewares/retry.py"
RETRY_HEAD = (
    "def get_retry_request(\n    request: Request,\n    *,\n    spider: Spider,\n"
    '    reason: str | Exception = "unspecified",\n    max_retry_times: int | None = None,\n'
    ") -> Request | None:\n"
    '    """Returns a new :class:`~scrapy.Request` object to retry the specified failed\n'
    "    request, or ``None`` if the retries of the specified request have been exhausted.\n\n"
    "    For example, in a spider callback you could use it as follows::\n\n"
    "        def parse(self, response):\n            if not response.text:\n"
    "                new_request = get_retry_request(response.request, spider=self)\n"
    "                return new_request\n\n"
    "    *spider* is the spider instance which is asking for the retry.\n"
    '    """\n'
)
RETRY_BODY = (
    "    settings = spider.crawler.settings\n    stats = spider.crawler.stats\n"
    '    retry_times = request.meta.get("retry_times", 0) + 1\n'
    "    if max_retry_times is None:\n"
    '        max_retry_times = request.meta.get("max_retry_times")\n'
    "        if max_retry_times is None:\n"
    '            max_retry_times = settings.getint("RETRY_TIMES")\n'
    "    if retry_times <= max_retry_times:\n"
    '        logger.debug("Retrying %(request)s (failed %(retry_times)d times)")\n'
    "        new_request: Request = request.copy()\n"
    '        new_request.meta["retry_times"] = retry_times\n'
    "        new_request.dont_filter = True\n"
    '        stats.inc_value(f"retry/reason_count/{reason}")\n'
    "        return new_request\n"
    '    stats.inc_value("retry/max_reached")\n'
    '    logger.error("Gave up retrying %(request)s (failed %(retry_times)d times)")\n'
    "    return None\n"
)


def _retry() -> list[dict]:
    return [
        record(RETRY, 1, '"""An extension to retry failed requests."""\nimport logging\n',
               title=f"{RETRY} (top level)", startLine=1, endLine=2),
        record(RETRY, 2, RETRY_HEAD, title="get_retry_request (part 1/2)",
               symbol="get_retry_request", startLine=35, endLine=56),
        record(RETRY, 3, RETRY_BODY, title="get_retry_request (part 2/2)",
               symbol="get_retry_request", startLine=57, endLine=74),
        record(RETRY, 4, "class BackOff:\n    def wait(self, request):\n        return 1.0\n",
               title="BackOff.wait", symbol="BackOff.wait", startLine=77, endLine=79),
    ]  # fmt: skip


def _store(tmp_path: Path, records: list[dict]) -> Path:
    with Store.open(tmp_path / "store") as store:
        load_records(store, records, "code")
    return tmp_path / "store"


def test_a_question_naming_a_function_lands_on_it_not_on_a_helper_nested_in_it(tmp_path):
    # Both slices carry `delimiter_split` in their title and symbol; only one declares it, the
    # other sits inside it (half the credit at most: index.ranking.OUTER_SHARE).
    with Store.open(_store(tmp_path, _linegen())) as store:
        for query in ("delimiter_split", "how does delimiter_split work"):
            hits = search(store, query, SearchOptions(per_doc=None, explain=True)).results
            assert hits[0].symbol == "delimiter_split", query
            assert hits[0].ranking is not None and hits[0].ranking.name_score
            nested = next(h for h in hits if h.symbol == "delimiter_split.append_to_line")
            assert nested.ranking is not None and nested.ranking.name_score is not None
            # At most half: the declaration also earns the name written out verbatim.
            assert 0 < nested.ranking.name_score <= hits[0].ranking.name_score / 2


def test_a_function_is_named_by_a_question_that_says_its_words():
    assert name_words("Factory.get_installation_error") == ("get", "installation", "error")
    assert name_words("StringSplitter") == ("string", "splitter")
    assert name_words("a.__init__") == ("init",)
    asked = {("split",): {0}, ("delimit",): {1}, ("iter", "found", "candid"): {2}}
    assert spelled(("delimit", "split"), asked) == {0, 1}  # plain words, any order
    assert spelled(("iter", "found", "candid"), asked) == {2}  # the identifier, whole
    # An identifier's pieces do not name something else: `_iter_found_candidates` is not a
    # question about `iterator` (stem iter).
    assert spelled(("iter",), asked) == set()
    assert spelled(("split", "line"), asked) == set()  # every word of the name, or none


def test_a_split_function_is_shown_once_at_its_signature_and_cited_whole(tmp_path):
    # The body says retry and request more often; the signature and docstring answer the
    # question, and the reader should land on the `def` line.
    with Store.open(_store(tmp_path, _retry())) as store:
        query = "how do I retry a failed request"
        raw = search(store, query, SearchOptions(per_doc=None)).results
        assert [h.title for h in raw[:2]] == [
            "get_retry_request (part 2/2)", "get_retry_request (part 1/2)"
        ]  # the premise: by BM25 alone the body wins  # fmt: skip
        hit = search(store, query).results[0]
        assert hit.title == "get_retry_request (part 1/2)"
        assert hit.citation == f"{RETRY}:35-74"
        assert hit.declaration == "get_retry_request"
        assert hit.other_matches >= 1
        # Several hits per document: the function's parts do not take two places.
        titles = [h.title for h in search(store, query, SearchOptions(per_doc=3)).results]
        assert sum(t.startswith("get_retry_request") for t in titles) == 1


def test_a_part_cites_the_whole_declaration_from_its_signature_in_the_raw_list_too(tmp_path):
    with Store.open(_store(tmp_path, _retry())) as store:
        raw = search(store, "retry_times max_retry_times", SearchOptions(per_doc=None)).results
        body = next(h for h in raw if h.title == "get_retry_request (part 2/2)")
        assert (body.start_line, body.end_line) == (57, 74)  # the slice shown is the part
        assert body.citation == f"{RETRY}:35-74"  # the reader is sent to the whole function


@pytest.fixture
def embeddings():
    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base:
        yield ["--base-url", base + "/v1", "--model", "hash-64"]


def test_a_hybrid_search_shows_a_split_function_once_at_its_signature(embeddings, tmp_path):
    store = tmp_path / "store"
    loaded = run_cli("index", jsonl(tmp_path / "r.jsonl", _retry()), "--store", store,
                     "--corpus", "code", *embeddings)  # fmt: skip
    assert loaded.code == 0, loaded.stderr
    query = ["search", "how do I retry a failed request", "--store", store, *embeddings]
    result = run_cli(*query, "--per-doc", "3", "--json")
    assert result.code == 0 and result.stderr.startswith("tier: hybrid"), result.stderr
    hits = json.loads(result.stdout)
    parts = [h for h in hits if h["title"].startswith("get_retry_request")]
    assert [h["title"] for h in parts] == ["get_retry_request (part 1/2)"]
    assert parts[0]["citation"] == f"{RETRY}:35-74"


def _rows(*symbols: str | None) -> list[_Row]:
    """One document's slices that declare something (None: a slice that does not, left out)."""
    numbered = enumerate(symbols, start=1)
    return [_Row(n, n, s, 10 * n, 10 * n + 9) for n, s in numbered if s is not None]


def test_a_declaration_is_its_runs_of_statements_with_the_helpers_that_hold_its_signature():
    # trans.py: `do_transform`'s signature is in its first helper's slice, then two runs.
    rows = _rows("S.do_match", "S.do_transform.grow", "S.do_transform.more", "S.do_transform",
                 "S.do_transform", "S.other")  # fmt: skip
    assert split_declarations(rows) == [Declaration("S.do_transform", (2, 3, 4, 5), 20, 59)]
    # hug_power_op: one run after its helpers is still the function cut in two.
    assert split_declarations(_rows("f.helper", "f", "g")) == [Declaration("f", (1, 2), 10, 29)]


def test_a_class_and_its_methods_are_not_one_declaration():
    # The class's own slice (its line and docstring) comes first; its methods stay results.
    assert split_declarations(_rows("StringSplitter", "StringSplitter.do_match",
                                    "StringSplitter.do_transform", None, "top")) == []  # fmt: skip
    # A function whose helpers come after its first statements is not told from a class either:
    # its slice and the helpers' stay apart (the name tells which one a question means).
    assert split_declarations(_rows("delimiter_split", "delimiter_split.append_to_line")) == []
    # Runs are neighbours: a slice between them (a comment block, top-level code) parts them.
    assert split_declarations(_rows("f.helper", None, "f")) == []
    assert split_declarations(_rows("f", None, "f")) == []
