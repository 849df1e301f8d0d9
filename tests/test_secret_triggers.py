"""Redaction finds the lines a pattern's trigger points at with RE2 on ASCII text: the same
lines, and so the same findings, as Python's re (the matcher it replaced) on any such text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flatten.secrets.scan as scan
from flatten.secrets import find_secrets
from flatten.secrets.patterns import PATTERNS
from flatten.secrets.scan import RE2_TRIGGERS

_FRAGMENTS = st.sampled_from([
    "password", "PASSWORD", "passwd", "passphrase", "secret", "Token", "credentials", "key",
    "api-key", "apikey", "client-secret", "--", "-", "--db-", "-p", "-u", "mysql ", "curl ",
    "login", "sshpass ", "authorization", "Authorization: Bearer ", "=", ":", ":=", " ", "\t",
    "\n", "\r\n", "\v", "\x1c", "\f", '"', "'", "`", "#", "x", "_", "9", "hunter2",
    "s3cr3t-Value", "export DB_PASSWORD=", "token: ", '{"password": "', "://u:p@h", "é",
    # Where RE2 and Python's re differ (\\w, \\s and case folding beyond ASCII): Python's re
    # reads such a line, RE2 the text's other lines.
    "ï", "İ", "ſ", "\u212a", "Σ", "\u00a0", "\u2028", "\x85", "--naïve-", "://ü",
])  # fmt: skip
_ASCII_TEXT = st.lists(_FRAGMENTS, max_size=40).map("".join).filter(str.isascii)


def test_every_trigger_is_searched_with_re2():
    assert {p.trigger for p in PATTERNS if p.trigger is not None} == set(RE2_TRIGGERS)
    # Python's ASCII \s takes \v and \x1c-\x1f, RE2's does not: the URL trigger's is spelled out.
    assert not any(b"\\s" in fast.regex.pattern for fast in RE2_TRIGGERS.values())
    exact_anywhere = {t.pattern for t, fast in RE2_TRIGGERS.items() if fast.any_text}
    assert "authorization" in exact_anywhere
    assert not any(p.startswith(("--", "://")) for p in exact_anywhere)  # \w, [^...]


@settings(max_examples=400, deadline=None)
@given(_ASCII_TEXT)
def test_each_trigger_hits_where_pythons_re_does_in_the_lower_cased_text(text):
    folded = text.lower()
    for trigger, fast in RE2_TRIGGERS.items():
        assert [m.span() for m in fast.regex.finditer(text.encode("ascii"))] == [
            m.span() for m in trigger.finditer(folded)
        ]


@settings(max_examples=300, deadline=None)
@given(st.lists(_FRAGMENTS, max_size=40).map("".join))
def test_findings_are_those_of_pythons_re_alone(text):
    with_re2 = find_secrets(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "fast_trigger", lambda trigger: None)  # every trigger by re
        assert find_secrets(text) == with_re2


def test_a_trigger_on_a_non_ascii_line_is_read_by_pythons_re_and_the_ascii_lines_by_re2():
    text = (
        "Réglages\n"
        "--naïve-password hunter2\n"  # \\w takes ï in Python's re, not in RE2
        "mysql --db-password s3cr3t-Value\n"
        "see https://ü:p4ss@host and https://u:pw@host\n"
        "--tail-token abc123\n"
    )
    with_re2 = find_secrets(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "fast_trigger", lambda trigger: None)
        assert find_secrets(text) == with_re2
    found = [text[f.start : f.end] for f in with_re2 if not f.placeholder]
    assert found == ["hunter2", "s3cr3t-Value", "p4ss", "pw", "abc123"]
