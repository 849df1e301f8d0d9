"""Redaction finds the lines a pattern's trigger points at with RE2 on ASCII text: the same
lines, and so the same findings, as Python's re (the matcher it replaced) on any such text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flatten.secrets as secrets
from flatten.secrets import RE2_TRIGGERS, find_secrets

_FRAGMENTS = st.sampled_from([
    "password", "PASSWORD", "passwd", "passphrase", "secret", "Token", "credentials", "key",
    "api-key", "apikey", "client-secret", "--", "-", "--db-", "-p", "-u", "mysql ", "curl ",
    "login", "sshpass ", "authorization", "Authorization: Bearer ", "=", ":", ":=", " ", "\t",
    "\n", "\r\n", "\v", "\x1c", "\f", '"', "'", "`", "#", "x", "_", "9", "hunter2",
    "s3cr3t-Value", "export DB_PASSWORD=", "token: ", '{"password": "', "://u:p@h", "é",
])  # fmt: skip
_ASCII_TEXT = st.lists(_FRAGMENTS, max_size=40).map("".join).filter(str.isascii)


def test_the_assignment_and_option_triggers_are_searched_with_re2():
    patterns = {trigger.pattern for trigger in RE2_TRIGGERS}
    assert any("passphrase" in p for p in patterns)
    assert any(p.startswith("--") for p in patterns)
    assert not any("\\s" in p for p in patterns)  # Python's \s and RE2's differ on ASCII


@settings(max_examples=400, deadline=None)
@given(_ASCII_TEXT)
def test_each_trigger_hits_where_pythons_re_does(text):
    folded = text.lower()
    for trigger, fast in RE2_TRIGGERS.items():
        assert [m.span() for m in fast.finditer(folded.encode("ascii"))] == [
            m.span() for m in trigger.finditer(folded)
        ]


@settings(max_examples=300, deadline=None)
@given(st.lists(_FRAGMENTS, max_size=40).map("".join))
def test_findings_are_those_of_pythons_re_alone(text):
    with_re2 = find_secrets(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(secrets, "RE2_TRIGGERS", {})
        assert find_secrets(text) == with_re2
