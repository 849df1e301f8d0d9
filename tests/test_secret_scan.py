"""The scan's fast paths (one RE2 set for every needle, RE2 triggers over the text's bytes, line
checks before a pattern runs) give exactly what the plain computation gives: needles by
substring search, trigger lines by Python's re on the lower-cased text, every hit line scanned."""

from __future__ import annotations

import string

from hypothesis import example, given, settings
from hypothesis import strategies as st

from flatten.secrets import find_secrets
from flatten.secrets.patterns import PATTERNS, TokenPattern
from flatten.secrets.scan import Scan

_ODD_FOLDS = "\u0130\u0131\u017f\u212a"  # İ ı ſ K: what Python's (?i) matches to i, s or k

_FRAGMENTS = st.sampled_from([
    "password", "PassWord", "passwd", "passphrase", "Secret", "TOKEN", "credentials", "key",
    "api_key", "apiKey", "client-secret", "db.password", "aws_secret_access_key", "AccountKey",
    "_authToken", "_auth", "_password", "authorization", "Authorization: Bearer ", "curl ",
    "mysql ", "login ", "sshpass ", "-p", "-u ", "--user=", "--db-password ", "--token ",
    "export ", "ENV ", "- ", "# ", "//", "=", ":", ":=", "=>", "==", " ", "\t", "\n", "\r\n",
    "\v", "\x1c", "\x85", "\u2028", '"', "'", "`", "&", "?", ";", ",", "(", "@", "/", "://",
    "https://", "u:p@h", "x", "9", "hunter2", "s3cr3t-Value", "Zq8Xw2Lm5Np7Rt4Vy6Bk",
    "é", "--é-", "-", "--", "中文", "\u00a0", *_ODD_FOLDS, "\ud800",
    "AKIAZ7QWERTYUIOPASDF", "ghp_" + "a1B2" * 9, "sk-" + "Ab3" * 12, "xoxb-1234567890-abc",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "sig=abcDEF123", "PRIVATE KEY", "kind: Secret",
])  # fmt: skip
_TEXTS = st.lists(_FRAGMENTS | st.text(max_size=4), max_size=40).map("".join)


def _lower_cased(text: str) -> str:
    folded = text.lower()
    if len(folded) == len(text):
        return folded
    return text.translate(str.maketrans(string.ascii_uppercase, string.ascii_lowercase))


def _trigger_lines(pattern: TokenPattern, text: str) -> list[tuple[int, int]]:
    """The lines (`\n` to `\n`) where the trigger matches the lower-cased text, in order."""
    assert pattern.trigger is not None
    starts = {
        text.rfind("\n", 0, hit.start()) + 1 for hit in pattern.trigger.finditer(_lower_cased(text))
    }
    return [
        (s, len(text) if text.find("\n", s) < 0 else text.find("\n", s)) for s in sorted(starts)
    ]


def _plain_matches(pattern: TokenPattern, text: str) -> list[tuple[int, int]]:
    """What the pattern matches where it may: the whole text, or each of its trigger's lines."""
    if pattern.trigger is None:
        return [m.span() for m in pattern.regex.finditer(text)]
    return [
        m.span()
        for start, end in _trigger_lines(pattern, text)
        for m in pattern.regex.finditer(text, start, end)
    ]


def _plain_gate(pattern: TokenPattern, text: str) -> bool:
    haystack = _lower_cased(text) if pattern.fold else text
    return any(needle in haystack for needle in pattern.needles)


@settings(max_examples=600, deadline=None)
@given(_TEXTS)
@example("--é-password Zq8Xw2Lm5Np7\n")  # Python's \w takes `é`, RE2's does not
@example("x://us\u00e9r:p\u00e4ss/w@host\n")
def test_each_pattern_runs_and_matches_where_the_plain_scan_says(text: str) -> None:
    scan = Scan(text)
    for pattern in PATTERNS:
        assert any((n, pattern.fold) in scan.found for n in pattern.needles) == _plain_gate(
            pattern, text
        )
        assert [m.span() for m in scan.matches(pattern)] == _plain_matches(pattern, text)


@settings(max_examples=400, deadline=None)
@given(_TEXTS.map(lambda t: t.translate({ord(c): None for c in _ODD_FOLDS})))
def test_a_trigger_and_a_line_check_never_hide_a_match(text: str) -> None:
    """Without the four letters Python folds into ASCII, a pattern matches on its trigger's
    lines all that it matches in the whole text: triggers only spare it work."""
    scan = Scan(text)
    for pattern in PATTERNS:
        assert [m.span() for m in scan.matches(pattern)] == [
            m.span() for m in pattern.regex.finditer(text)
        ]


def test_a_line_is_checked_only_when_ascii_letters_are_all_that_fold_to_ascii():
    # `ſ` matches `s` in the pattern (Python's (?i)), so a line holding it is scanned whole:
    # the quoted value after `paſsword` is found on the line that `key=1` puts under the trigger.
    text = 'paſsword: "Zq8Xw2Lm5Np7" key=1\n'
    assert [f.kind for f in find_secrets(text)] == ["password-assignment"]
