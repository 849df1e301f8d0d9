"""Citation rules: map an indexed source to what a reader should see (a URL, say).

    citations:
      - pattern: '^docs/(?P<page>.+)\\.md$'
        replace: 'https://docs.example.com/${page}/#${anchor}'

`replace` may use `$1`, `$name`, `${name}` for the pattern's groups, the built-ins `ordinal`,
`heading` and `anchor` of the slice, and `$$` for a dollar sign. Values are percent-encoded for
a URL path. The first rule whose pattern matches (and whose optional `corpus` fits) wins. Rules
are checked when the config loads, and an error names the rule: `citations[0].replace`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from index.errors import ConfigError

BUILTINS = ("ordinal", "heading", "anchor")
_REFERENCE = re.compile(r"\$(?:\$|\{(\w+)\}|(\w+))")


@dataclass(frozen=True)
class CitationRule:
    pattern: re.Pattern[str]
    replace: str
    corpus: str | None = None


def parse_rules(entries: Any) -> list[CitationRule]:
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise ConfigError(
            "citations must be a list of {pattern, replace} rules", reason="bad-config"
        )
    return [_parse_rule(entry, f"citations[{i}]") for i, entry in enumerate(entries)]


def _parse_rule(entry: Any, where: str) -> CitationRule:
    if not isinstance(entry, dict):
        raise ConfigError(
            f"{where}: expected a mapping with pattern and replace", reason="bad-config"
        )
    pattern, replace = entry.get("pattern"), entry.get("replace")
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"{where}.pattern: empty or missing", reason="bad-config")
    if not isinstance(replace, str) or not replace:
        raise ConfigError(f"{where}.replace: empty or missing", reason="bad-config")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where}.pattern: does not compile: {exc}", reason="bad-config") from exc
    for match in _REFERENCE.finditer(replace):
        name = match.group(1) or match.group(2)
        if name is None:
            continue  # $$
        if name.isdigit():
            if int(name) > compiled.groups:
                raise ConfigError(
                    f"{where}.replace: ${name} but the pattern has {compiled.groups} group(s)",
                    reason="bad-config",
                )
        elif name not in compiled.groupindex and name not in BUILTINS:
            raise ConfigError(
                f"{where}.replace: ${name} is neither a group of the pattern nor one of "
                f"{', '.join(BUILTINS)}",
                reason="bad-config",
            )
    corpus = entry.get("corpus")
    if corpus is not None and not isinstance(corpus, str):
        raise ConfigError(f"{where}.corpus: must be a corpus name", reason="bad-config")
    return CitationRule(compiled, replace, corpus)


def cite(
    rules: list[CitationRule],
    source: str,
    *,
    corpus: str | None = None,
    ordinal: int | None = None,
    heading: str | None = None,
    anchor: str | None = None,
) -> str | None:
    """The mapped citation for a slice, or None when no rule matches."""
    builtins = {
        "ordinal": "" if ordinal is None else str(ordinal),
        "heading": heading or "",
        "anchor": anchor or "",
    }
    for rule in rules:
        if rule.corpus is not None and rule.corpus != corpus:
            continue
        match = rule.pattern.search(source)
        if match is None:
            continue

        def value(ref: re.Match[str], match: re.Match[str] = match) -> str:
            name = ref.group(1) or ref.group(2)
            if name is None:
                return "$"
            if name.isdigit():
                raw = match.group(int(name)) or ""
            elif name in match.re.groupindex:
                raw = match.group(name) or ""
            else:
                raw = builtins[name]
            return quote(raw, safe="/")

        return _REFERENCE.sub(value, rule.replace)
    return None
