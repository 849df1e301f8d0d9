"""Find credentials inside kept files and redact them, keeping every line where it was.

Detectors (vendor token formats and `key: value` assignments in `secret_patterns`, PEM blocks
and Kubernetes Secret data in `secret_blocks`, the config's own patterns) propose spans; where
two overlap, the earlier detector wins. A span holding a documented placeholder (`placeholders`
or the config's `allow:`) is kept and counted as such; any other is replaced by
`[REDACTED:<kind>]`. Only a real BEGIN..END key block spans lines, and its replacement keeps
the block's line breaks, so line numbers (and every slice's line range) stay true.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flatten.errors import UsageError
from flatten.secrets.patterns import LINE_BREAKS, PATTERNS, VALUE_GROUPS, TokenPattern

if TYPE_CHECKING:
    from flatten.secrets.scan import Scan

# The detectors' modules (the scan with re2, the key blocks, the placeholder rules) compile
# their tables at import, so they load at the first redaction, not with this module: every
# flatten and every command that prints imports it, and a run may redact nothing.

REDACTION_MARK = "[REDACTED:"
_CONTEXT_WINDOW = 300  # how far back a pattern's context word (`curl` for `-u`) may be
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_LINE_BREAK = re.compile(f"[{re.escape(LINE_BREAKS)}]")


@dataclass(frozen=True)
class CustomPattern:
    """A `redaction.patterns` entry: its `secret` group is redacted if it has one, else all."""

    name: str
    regex: re.Pattern[str]


@dataclass(frozen=True)
class RedactionRules:
    """What the `redaction:` section of docs-flatten.yaml adds. It can add; it cannot switch off."""

    patterns: tuple[CustomPattern, ...] = ()
    allow_values: frozenset[str] = frozenset()
    allow_regexes: tuple[re.Pattern[str], ...] = ()

    def allows(self, value: str) -> bool:
        return value in self.allow_values or any(r.search(value) for r in self.allow_regexes)

    @classmethod
    def from_config(cls, data: Any) -> RedactionRules:
        """The `redaction:` section, checked; errors name the entry (`redaction.patterns[1]`)."""
        if data is None:
            return DEFAULT_RULES
        if not isinstance(data, dict):
            raise _config_error("redaction: expected a mapping with patterns and/or allow")
        unknown = sorted(set(data) - {"patterns", "allow"})
        if unknown:
            raise _config_error(f"redaction.{unknown[0]}: not a setting (known: allow, patterns)")
        patterns = tuple(
            _custom_pattern(entry, f"redaction.patterns[{i}]")
            for i, entry in enumerate(_entries(data.get("patterns"), "redaction.patterns"))
        )
        values: set[str] = set()
        regexes: list[re.Pattern[str]] = []
        for i, entry in enumerate(_entries(data.get("allow"), "redaction.allow")):
            where = f"redaction.allow[{i}]"
            if isinstance(entry, str) and entry:
                values.add(entry)
            elif isinstance(entry, dict) and set(entry) == {"value"}:
                values.add(_text(entry["value"], f"{where}.value"))
            elif isinstance(entry, dict) and set(entry) == {"regex"}:
                regexes.append(_compile(entry["regex"], f"{where}.regex"))
            else:
                raise _config_error(f"{where}: a literal value, {{value: ...}} or {{regex: ...}}")
        return cls(patterns, frozenset(values), tuple(regexes))


DEFAULT_RULES = RedactionRules()


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int
    placeholder: bool  # kept as written: a documented stand-in, not a secret


@dataclass(frozen=True)
class Redacted:
    text: str
    counts: Counter[str]  # redactions by kind
    placeholders: Counter[str] = field(default_factory=Counter)  # kept stand-ins by kind

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def redact(text: str, rules: RedactionRules = DEFAULT_RULES) -> Redacted:
    counts: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    pieces: list[str] = []
    done = 0
    for finding in find_secrets(text, rules):
        if finding.placeholder:
            kept[finding.kind] += 1
            continue
        counts[finding.kind] += 1
        span = text[finding.start : finding.end]
        breaks = "".join(_LINE_BREAK.findall(span))  # only a key block has any
        pieces += [text[done : finding.start], f"{REDACTION_MARK}{finding.kind}]", breaks]
        done = finding.end
    if not pieces:
        return Redacted(text, counts, kept)
    pieces.append(text[done:])
    return Redacted("".join(pieces), counts, kept)


def find_secrets(text: str, rules: RedactionRules = DEFAULT_RULES) -> list[Finding]:
    """Every secret and kept placeholder in `text`, in order, none overlapping."""
    if not text:
        return []
    accepted: list[Finding] = []
    for group in _candidates(text, rules):
        accepted = _merge(accepted, group)
    return accepted


def _candidates(text: str, rules: RedactionRules) -> Iterator[list[Finding]]:
    """Groups of findings, highest priority first."""
    from flatten.secrets.scan import GATES, Scan

    scan = Scan(text)
    if scan.found:
        if scan.has("PRIVATE KEY"):
            from flatten.secrets.blocks import private_key_spans

            yield _findings("private-key", text, private_key_spans(text), rules)
        if scan.has("Secret") and scan.has("ata"):
            from flatten.secrets.blocks import k8s_secret_spans

            yield _findings("k8s-secret-data", text, k8s_secret_spans(text), rules)
        for pattern, gate in zip(PATTERNS, GATES, strict=True):
            if not gate.isdisjoint(scan.found):
                yield list(_pattern_findings(pattern, scan, rules))
    for custom in rules.patterns:
        yield list(_custom_findings(custom, text, rules))


def _findings(kind: str, text: str, spans: Iterable[Any], rules: RedactionRules) -> list[Finding]:
    return [
        Finding(kind, s.start, s.end, _kept(text[s.start : s.end], rules, s.placeholder))
        for s in spans
        if s.end > s.start
    ]


def _pattern_findings(
    pattern: TokenPattern, scan: Scan, rules: RedactionRules
) -> Iterator[Finding]:
    from flatten.secrets.placeholders import is_non_value, is_plain_words

    text = scan.text
    for match in scan.matches(pattern):
        group = next((g for g in VALUE_GROUPS if g in match.re.groupindex and match.group(g)), None)
        start, end = match.span(group) if group else match.span()
        if start == end:
            continue
        if pattern.context and not _in_context(text, match.start(), pattern.context):
            continue
        if pattern.assignment:
            code = False
            if group == "bare":
                value = text[start:end].rstrip(",;):")  # `f(token=x)`, `a: x,`
                code = end - start > len(value)  # it ended as code does: a field, an argument
                end = start + len(value)
            if end == start or is_non_value(text[start:end], quoted=group != "bare", code=code):
                continue
        value = text[start:end]
        kept = _kept(value, rules, None) or (pattern.typed and is_plain_words(value))
        yield Finding(pattern.kind, start, end, kept)


def _custom_findings(custom: CustomPattern, text: str, rules: RedactionRules) -> Iterator[Finding]:
    has_secret = "secret" in custom.regex.groupindex
    for match in custom.regex.finditer(text):
        start, end = match.span("secret") if has_secret else match.span()
        if start < 0:
            continue
        # A user's pattern may cross lines; its redaction never does.
        for part in _LINE_BREAK.split(text[start:end]):
            if part:
                yield Finding(custom.name, start, start + len(part), _kept(part, rules, None))
            start += len(part) + 1


def _kept(value: str, rules: RedactionRules, placeholder: bool | None) -> bool:
    from flatten.secrets.placeholders import is_placeholder

    if rules.allows(value):
        return True
    return is_placeholder(value) if placeholder is None else placeholder


def _in_context(text: str, at: int, words: tuple[str, ...]) -> bool:
    before = text[max(0, at - _CONTEXT_WINDOW) : at]
    return any(word in before for word in words)


def _merge(accepted: list[Finding], group: list[Finding]) -> list[Finding]:
    """`accepted` plus the findings of `group` that overlap nothing already taken."""
    group.sort(key=lambda f: (f.start, -f.end))
    new: list[Finding] = []
    i = 0
    for finding in group:
        while i < len(accepted) and accepted[i].end <= finding.start:
            i += 1
        if i < len(accepted) and accepted[i].start < finding.end:
            continue
        if new and new[-1].end > finding.start:
            continue
        new.append(finding)
    if not new:
        return accepted
    return list(heapq.merge(accepted, new, key=lambda f: f.start))


def _entries(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _config_error(f"{where}: expected a list")
    return value


def _custom_pattern(entry: Any, where: str) -> CustomPattern:
    if not isinstance(entry, dict):
        raise _config_error(f"{where}: expected a mapping with name and regex")
    unknown = sorted(set(entry) - {"name", "regex"})
    if unknown:
        raise _config_error(f"{where}.{unknown[0]}: not a setting (known: name, regex)")
    name = _text(entry.get("name"), f"{where}.name")
    if not _NAME.match(name):
        raise _config_error(
            f"{where}.name: {name!r} must be 1-40 lower-case letters, digits or dashes"
        )
    regex = _compile(entry.get("regex"), f"{where}.regex")
    if regex.fullmatch(""):
        raise _config_error(f"{where}.regex: matches the empty string")
    return CustomPattern(name, regex)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _config_error(f"{where}: empty or missing")
    return value


def _compile(value: Any, where: str) -> re.Pattern[str]:
    try:
        return re.compile(_text(value, where))
    except re.error as exc:
        raise _config_error(f"{where}: does not compile: {exc}") from exc


def __getattr__(name: str) -> Any:
    if name == "RE2_TRIGGERS":  # the triggers RE2 searches, each compiled on first use
        from flatten.secrets import scan

        return scan.RE2_TRIGGERS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _config_error(message: str) -> UsageError:
    return UsageError(message, reason="bad-config")
