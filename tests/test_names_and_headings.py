"""What a page's title and path, and a declaration's name, are worth to the document stage
(index.ranking): each test builds a small real corpus in which the principle decides the order,
so it fails when the principle is taken out."""

from __future__ import annotations

import pytest

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
