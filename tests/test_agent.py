"""The agent answers' size cap: a property over arbitrary hits (no I/O)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from index.agent import MIN_TEXT, OUTPUT_CAP, Knowledge
from index.text import clean_json

hits = st.lists(
    st.fixed_dictionaries(
        {"citation": st.text(max_size=80), "path": st.text(max_size=80),
         "text": st.text(max_size=12_000)}
    ),
    max_size=20,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(hits)
def test_answers_fit_the_cap_keep_order_and_say_when_they_were_cut(items):
    answer = Knowledge()._capped({"status": "ok", "notice": "n"}, "results", list(items), "text")
    items = clean_json(items)  # what leaves is cleaned: that is what is capped
    size = len(json.dumps(answer, ensure_ascii=False).encode())
    assert size <= OUTPUT_CAP
    kept = answer["results"]
    assert len(kept) <= len(items)
    for shown, original in zip(kept, items, strict=False):
        if shown["text"].endswith(" …[cut]") and shown is kept[-1] and shown != original:
            assert original["text"].startswith(shown["text"][: -len(" …[cut]")])
            assert len(shown["text"]) >= MIN_TEXT // 6  # JSON escapes can take 6 bytes a char
        else:
            assert shown == original
    whole = kept == items
    assert answer["truncated"] is (not whole)
    assert ("message" in answer) is (not whole)


def test_get_of_a_missing_source_names_the_one_meant(store_url):
    from tests.conftest import FIXTURES, run_cli

    store = store_url  # on SQLite and on PostgreSQL
    assert run_cli("index", FIXTURES / "docs-tree", "--store", store, "-q").code == 0
    knowledge = Knowledge(store)
    try:
        near = knowledge.get("docs/guide/install.md/")
        folder = knowledge.get("docs/reference/")
        far = knowledge.get("kubernetes/operators.txt")
    finally:
        knowledge.close()
    assert near["status"] == "not_found"
    assert near["didYouMean"] == ["docs/guide/install.md"]
    assert "did you mean 'docs/guide/install.md'?" in near["hint"]
    assert folder["didYouMean"] == ["docs/reference/api.adoc", "docs/reference/cli.rst"]
    assert "is a folder" in folder["hint"]
    assert "didYouMean" not in far and far["status"] == "not_found"


segments = st.text(alphabet="abcdeXY-_.0", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)
paths = st.lists(segments, min_size=1, max_size=4).map("/".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(paths, min_size=1, max_size=30, unique=True), st.data())
def test_a_source_copied_with_a_slash_a_token_or_a_citation_is_found_again(known, data):
    from index.suggest import SUGGESTED, meant

    source = data.draw(st.sampled_from(known))
    mangled = data.draw(st.sampled_from([source + "/", "./" + source, source + "#3",
                                         source + ":16-35", f" {source} "]))  # fmt: skip
    found = meant(mangled, known)
    assert found.sources[0] == source and found.folder is None
    anything = meant(data.draw(st.text(max_size=30)), known)
    assert set(anything.sources) <= set(known) and len(anything.sources) <= SUGGESTED
