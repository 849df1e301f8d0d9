"""The path rules split paths themselves (pathlib was most of their cost, run per listed file):
the names and suffix they see are the ones `PurePosixPath` gives, on any relative path."""

from __future__ import annotations

from pathlib import PurePosixPath

from hypothesis import given
from hypothesis import strategies as st

from flatten.classify import path_parts, suffix_of

_NAMES = st.one_of(
    st.sampled_from(["", ".", "..", ".env", "a.", ".a.", "x.tar.gz", "README", "node_modules",
                     ".kube", "config", "LICENSE-MIT", "a..b", "...", "é.MD"]),
    st.text(st.sampled_from("aB.-_é/"), max_size=8),
)  # fmt: skip


@given(st.lists(_NAMES, max_size=6))
def test_path_parts_are_pathlibs_parts_of_a_relative_path(names):
    rel_path = "/".join(names).lstrip("/")
    assert path_parts(rel_path) == list(PurePosixPath(rel_path).parts)


@given(_NAMES)
def test_suffix_of_a_name_is_pathlibs_suffix(name):
    name = name.replace("/", "")
    if name in ("", ".", ".."):
        return  # not a file name
    assert suffix_of(name) == PurePosixPath(name).suffix
