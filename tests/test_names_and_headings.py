"""What a page's title and path, and a declaration's name, are worth to the document stage
(index.ranking): each test builds a small real corpus in which the principle decides the order,
so it fails when the principle is taken out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from index.ranking import file_words
from index.search import SearchOptions, search
from index.store import Store
from tests.conftest import indexed_tree

# Pages that mention the query's word alike; some have it in a folder's name, some in the file's.
FILLER = {
    f"docs/misc/page{n}.md": f"# Page {n}\n\nUnrelated notes number {n}.\n" for n in range(12)
}


def ranked(store_dir, query: str, **options) -> list:
    with Store.open(store_dir, readonly=True) as opened:
        return search(opened, query, SearchOptions(explain=True, **options)).results


def test_a_word_in_the_file_name_counts_more_than_the_same_word_in_a_folder_name(tmp_path):
    # Every page of `pool/` has "pool" in its path; only one page is named for it.
    files = {
        **FILLER,
        "docs/pool/setup.md": "# Setup\n\nThe pool is created once; the pool is shared.\n",
        "docs/pool/sizes.md": "# Sizes\n\nHow large to make it.\n",
        "docs/limits/pool.md": "# Limits\n\nThe pool is bounded by the limits below.\n",
    }
    hits = ranked(indexed_tree(tmp_path, files, "docs"), "pool")
    assert [h.source for h in hits[:2]] == ["docs/limits/pool.md", "docs/pool/setup.md"]
    named, foldered = (h.ranking.field_score for h in hits[:2])
    assert foldered == pytest.approx(named / 2)


def test_file_words_are_the_words_of_the_last_segment_without_its_extension():
    assert file_words("docs/advanced/text-encodings.md") == {"text", "encodings"}
    assert file_words("https://host/advanced/timeouts/") == {"timeouts"}
    assert file_words("flatten/secrets/__init__.py") == {"init"}
    assert file_words("") == frozenset()


def function(name: str, doc: str) -> str:
    """A Python function too large to share a slice with its neighbours."""
    steps = "".join(f"    total = total + {n} * weight_{n}\n" for n in range(60))
    return f'def {name}(request):\n    """{doc}"""\n    total = 0\n{steps}    return total\n\n\n'


def method(cls: str, *named: str) -> str:
    """A class of large methods (name, docstring pairs), each a slice of its own."""
    pairs = zip(named[::2], named[1::2], strict=True)
    body = "".join(function(name, doc) for name, doc in pairs).replace("\n", "\n    ")
    return f"class {cls}:\n    {body}"


def test_a_source_files_recorded_title_does_not_count_for_its_other_slices(tmp_path):
    # The store titles a code file by its first declaration (`retry_policy`): that says nothing
    # of what `send`, further down, is about, so `send` earns no title score from it.
    files = {
        **FILLER,
        "src/app/transport.py": function("retry_policy", "How many times.")
        + function("send", "Send once; retry on a failure."),
        "src/app/client.py": function("post", "Post once; retry on a failure, then retry again."),
    }
    hits = ranked(indexed_tree(tmp_path, files, "code"), "retry failure", per_doc=None)
    by_symbol = {h.symbol: h for h in hits}
    assert by_symbol["send"].ranking.field_score == 0.0
    order = [h.symbol for h in hits]
    assert order.index("post") < order.index("send")


def test_a_resource_type_named_by_the_query_finds_its_block_over_prose_that_mentions_it(tmp_path):
    # `aws_eks_cluster.main` sits inside the type the query names: half a name's credit, enough
    # to put the block above a page that only writes the type in its prose.
    files = {
        **FILLER,
        "infra/eks/main.tf": (
            'resource "aws_iam_role" "cluster" {\n  name = "eks-cluster"\n}\n\n'
            'resource "aws_eks_cluster" "main" {\n  name     = "main"\n'
            "  role_arn = aws_iam_role.cluster.arn\n}\n"
        ),
        "docs/notes.md": (
            "# Notes\n\nThe aws_eks_cluster resource; every aws_eks_cluster is tagged.\n"
        ),
    }
    hits = ranked(indexed_tree(tmp_path, files, "infra"), "aws_eks_cluster")
    assert hits[0].symbol == "aws_eks_cluster.main"
    outer = hits[0].ranking.name_score
    assert outer is not None and outer > 0


def test_a_method_of_the_class_asked_for_gets_half_the_credit_of_its_own_name():
    from index.lexical import QueryPlan, Term
    from index.ranking import declared_score, named_by
    from index.textindex import TextQuery

    planned = QueryPlan(TextQuery(("client",)), None, (Term("client", ("client",), 3.0),))
    named = named_by(planned)
    assert declared_score(planned, named, "Client") == 3.0
    assert declared_score(planned, named, "Client.get") == 1.5
    assert declared_score(planned, named, "Server.get") == 0.0


def test_a_dotted_name_is_asked_whole_besides_its_words(tmp_path):
    # The page that writes `Client.stream` out ranks above one that says client and stream more
    # often, apart.
    files = {
        **FILLER,
        "docs/streaming.md": "# Streaming\n\nCall Client.stream to read the body lazily.\n",
        "docs/clients.md": (
            "# Clients\n\nA client keeps a pool. The client may stream; a stream of the client's "
            "responses, client by client.\n"
        ),
    }
    store_dir = indexed_tree(tmp_path, files, "docs")
    assert [h.source for h in ranked(store_dir, "Client.stream")][:1] == ["docs/streaming.md"]
    from index.lexical import dotted_names

    assert dotted_names("use httpx.Client.stream, not v0.28.1 or os.path") == [
        "httpx.client.stream",
        "os.path",
    ]


def test_a_dotted_name_that_names_a_declaration_exactly_puts_it_first(tmp_path):
    # `stream_client` has both words as its own name; only `Client.stream` is the one named.
    files = {
        **FILLER,
        "src/lib/helpers.py": function("stream_client", "Stream a client; a client stream."),
        "src/lib/client.py": method("Client", "stream", "Read lazily.", "close", "Close."),
    }
    hits = ranked(indexed_tree(tmp_path, files, "code"), "httpx.Client.stream", per_doc=None)
    # The slice opening with `class Client:` carries the class's symbol, titled by its member.
    assert (hits[0].symbol, hits[0].title) == ("Client", "Client.stream")
    exact = hits[0].ranking.name_score
    other = next(h for h in hits if h.symbol == "stream_client").ranking.name_score
    assert exact is not None and other is not None and exact > other


def test_a_slice_of_merged_declarations_declares_each_name_its_title_lists():
    from index.ranking import declared

    # The slice holding a class's header declares the class and the members it opens with.
    assert declared("Client", "Client.stream") == ("Client", "Client.stream")
    assert declared("Client", "Client: stream, close (+2 more)") == (
        "Client",
        "Client.stream",
        "Client.close",
    )
    assert declared("Client", "Client (part 1/2)") == ("Client",)

    assert declared("Context.forward", "Context: forward, invoke") == (
        "Context.forward",
        "Context.invoke",
    )
    assert declared("gen_salt", "gen_salt, _hash (+2 more)") == ("gen_salt", "_hash")
    assert declared("Flask", "Flask (part 2/3)") == ("Flask",)
    assert declared("a.b", "something else, entirely") == ("a.b",)


def test_a_method_merged_into_a_neighbours_slice_is_found_by_its_name(tmp_path):
    # `forward` and `invoke` are small: the slicer merges them into their neighbour's slice,
    # `Context: stop, forward, invoke`, whose symbol is `Context.stop`.
    small = "".join(f"def {name}(self):\n    return {n}\n\n" for n, name in enumerate(
        ["forward", "invoke"]))  # fmt: skip
    files = {
        **FILLER,
        "src/cli/core.py": method("Context", "run", "Run.", "stop", "Stop.")
        + small.replace("\n", "\n    "),
        "src/cli/group.py": method("Group", "invoke", "Invoke; invoke each.", "close", "Close."),
    }
    hits = ranked(indexed_tree(tmp_path, files, "code"), "Context.invoke", per_doc=None)
    assert (hits[0].title, hits[0].symbol) == ("Context: stop, forward, invoke", "Context.stop")
    assert hits[0].ranking.name_score > 2 * hits[1].ranking.name_score  # named exactly


GUIDE = (
    "# Guide\n\nHow the client is set up.\n\n## Retries\n\nWhen a request fails it is sent again"
    " at most three times, waiting longer each time; a request that is not idempotent is sent"
    " once. Failures of the connection itself count, failures of the server do not, and the"
    " wait between attempts doubles, starting from a tenth of a second, up to the limit set"
    " on the client; the retries are logged. Each attempt keeps the headers of the first.\n"
)


def test_a_section_headed_with_the_querys_word_outranks_one_that_only_mentions_it(tmp_path):
    files = {
        **FILLER,
        "docs/guide.md": GUIDE,
        "docs/notes.md": "# Notes\n\nSome notes.\n\n## Misc\n\nRetries: see retries.\n",
    }
    hits = ranked(indexed_tree(tmp_path, files, "docs"), "retries")
    assert (hits[0].source, hits[0].title) == ("docs/guide.md", "Retries")


def test_a_heading_counts_by_the_share_of_the_querys_information_it_names(tmp_path):
    files = {**FILLER, "docs/guide.md": GUIDE, "docs/other.md": "# Other\n\nAttempts again.\n"}
    store_dir = indexed_tree(tmp_path, files, "docs")
    alone = next(h for h in ranked(store_dir, "retries") if h.title == "Retries")
    both = next(h for h in ranked(store_dir, "retries attempts") if h.title == "Retries")
    with Store.open(store_dir, readonly=True) as opened:
        from index.lexical import plan

        terms = {t.word: t.idf for t in plan(opened.db, "retries attempts").terms}
    retries, attempts = terms["retries"], terms["attempts"]
    assert alone.ranking.field_score == pytest.approx(retries)  # the whole query: in full
    share = retries / (retries + attempts)
    assert both.ranking.field_score == pytest.approx(retries * share)


@given(st.text(max_size=60))
def test_any_query_gives_dotted_names_it_writes_whose_parts_are_not_numbers(query):
    from index.lexical import dotted_names

    for name in dotted_names(query):
        assert name in query.lower()
        parts = name.split(".")
        assert len(parts) >= 2 and all(p and not p[0].isdigit() for p in parts)


NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)


@given(st.lists(NAME, min_size=1, max_size=3).map(".".join), st.text(max_size=40))
def test_a_slice_always_declares_its_own_symbol_first(symbol, title):
    from index.ranking import declared

    assert declared(symbol, title)[0] == symbol


def test_a_compound_name_written_verbatim_outranks_one_of_the_same_stems(tmp_path):
    # `model_validate` and `model_validator` stem alike; the query writes the first one out.
    files = {
        **FILLER,
        "src/lib/functional.py": function(
            "model_validator", "Decorate a model validate step: model validate, validate model."
        ),
        "src/lib/main.py": function("model_validate", "Check the data."),
    }
    hits = ranked(indexed_tree(tmp_path, files, "code"), "model_validate", per_doc=None)
    scores = {h.symbol: h.ranking.name_score for h in hits}
    assert scores["model_validate"] > scores["model_validator"], scores
