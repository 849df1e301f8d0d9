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
