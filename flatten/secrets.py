"""Find credentials inside kept files and redact them, keeping line numbers true.

Each pattern is guarded by a cheap substring test, so a corpus without secrets pays almost
nothing. A match (or its `secret` group, where the pattern needs context such as a key name) is
replaced by `[REDACTED:<kind>]`, and the newlines it spanned are kept.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

# (kind, substrings one of which must be present, pattern)
_PATTERNS: list[tuple[str, tuple[str, ...], re.Pattern[str]]] = [
    ("private-key", ("PRIVATE KEY",), re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S)),
    ("aws-access-key", ("AKIA", "ASIA"), re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("aws-secret-key", ("aws_secret", "AWS_SECRET", "SecretAccessKey"), re.compile(
        r"(?i)(?:aws_secret_access_key|secretaccesskey)[\"']?\s{0,4}[:=]\s{0,4}[\"']?"
        r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])")),
    ("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), re.compile(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b")),
    ("gitlab-token", ("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("slack-token", ("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("google-api-key", ("AIza",), re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("stripe-key", ("_live_",), re.compile(r"\b(?:sk|rk)_live_[0-9A-Za-z]{16,}\b")),
    ("openai-key", ("sk-",), re.compile(r"\bsk-(?:proj-|ant-[a-z0-9]+-)?[A-Za-z0-9_\-]{32,}")),
    ("npm-token", ("npm_",), re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
]  # fmt: skip


@dataclass(frozen=True)
class Redacted:
    text: str
    counts: Counter[str]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def redact(text: str) -> Redacted:
    counts: Counter[str] = Counter()
    for kind, needles, pattern in _PATTERNS:
        if not any(needle in text for needle in needles):
            continue
        marker = f"[REDACTED:{kind}]"

        def replace(match: re.Match[str], marker: str = marker, kind: str = kind) -> str:
            counts[kind] += 1
            whole = match.group(0)
            if "secret" in match.re.groupindex:
                start, end = match.span("secret")
                head, tail = whole[: start - match.start()], whole[end - match.start() :]
                return head + marker + tail
            return marker + "\n" * whole.count("\n")

        text = pattern.sub(replace, text)
    return Redacted(text, counts)
