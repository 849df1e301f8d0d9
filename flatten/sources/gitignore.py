"""Compile a .gitignore for the walker, with matching time bounded for any pattern.

pathspec translates each pattern to a regular expression exactly as it does for its own
`GitIgnoreSpec` (which agrees with git), but Python's backtracking `re` takes exponential time
on patterns such as `*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b` (minutes for one 40-character name).
RE2 matches in time linear in the path for any pattern, so the patterns are matched with RE2:
all in one RE2 set (pathspec's own "re2" backend, the fast path), or, when the set is too large
for RE2's memory bound, one by one. A pattern RE2 refuses even alone, and a line pathspec
rejects as invalid (`!`, a trailing backslash, a reversed range `[z-a]`, an unknown class
`[[:foo:]]`: git never matches those either), is left out and returned, so the run report can
name it.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import pathspec
import re2
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported by us, not logged to stderr by RE2


@dataclass(frozen=True)
class Refused:
    line: int  # 1-based line number in the .gitignore
    pattern: str
    why: str  # "invalid" (no regex can match it) or "too-large" (RE2 cannot compile it)


def _compiles(regex: str) -> bool:
    """Whether Python's `re` compiles `regex`: pathspec compiles every line with it before any
    RE2 backend, so a reversed range (`[z-a]`) raised re.error out of the walk. Its warnings
    (`[[` is a "possible nested set") are ours to judge, not stderr's."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(regex)
    except re.error:
        return False
    return True


def compile_gitignore(lines: list[str]) -> tuple[pathspec.GitIgnoreSpec, list[Refused]]:
    """A spec for `lines`, and every pattern left out of it."""
    kept: list[tuple[int, str, str, bool]] = []
    refused: list[Refused] = []
    for number, line in enumerate(lines, start=1):
        try:
            regex, include = GitIgnoreSpecPattern.pattern_to_regex(line)
        except ValueError:  # pathspec's GitIgnorePatternError
            refused.append(Refused(number, line, "invalid"))
            continue
        if regex is not None and not _compiles(regex):
            refused.append(Refused(number, line, "invalid"))
            continue
        if include is not None and regex is not None:  # else a comment or blank line
            kept.append((number, line, regex, include))
    try:
        with warnings.catch_warnings():  # pathspec's own `re` pass: its warnings were judged above
            warnings.simplefilter("ignore", FutureWarning)
            spec = pathspec.GitIgnoreSpec.from_lines([k[1] for k in kept], backend="re2")
        return spec, refused
    except re2.error:
        pass  # too many patterns for one RE2 set: one RE2 regex each (slower, still linear)
    patterns = []
    for number, line, regex, include in kept:
        try:
            compiled = re2.compile(regex, _OPTIONS)
        except re2.error as exc:
            # RE2 also refuses what git cannot match (`[[:foo:]]`: an unknown class).
            why = "too-large" if "too large" in str(exc) else "invalid"
            refused.append(Refused(number, line, why))
            continue
        # pathspec takes any precompiled regex object with `search` (documented), and its
        # "simple" backend walks the patterns in order as git does.
        patterns.append(GitIgnoreSpecPattern(compiled, include))
    refused.sort(key=lambda r: r.line)
    return pathspec.GitIgnoreSpec(patterns, backend="simple"), refused
