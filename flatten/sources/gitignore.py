"""Compile a .gitignore for the walker, with matching time bounded for any pattern.

pathspec translates each pattern to a regular expression exactly as it does for its own
`GitIgnoreSpec` (which agrees with git), but Python's backtracking `re` takes exponential time
on patterns such as `*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b` (minutes for one 40-character name).
Here each translated pattern is compiled with RE2, whose matching is linear in the path for
any pattern. A pattern RE2 refuses (too large for its memory bound) is left out and returned,
so the run report can name it.
"""

from __future__ import annotations

import pathspec
import re2
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

# git itself ignores .gitignore files over 100 MiB ("ignoring excessively large pattern file").
GITIGNORE_MAX_SIZE = 100 << 20

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported by us, not logged to stderr by RE2


def compile_gitignore(lines: list[str]) -> tuple[pathspec.GitIgnoreSpec, list[tuple[int, str]]]:
    """A spec for `lines`, and the (line number, pattern) of every pattern left out."""
    patterns: list[GitIgnoreSpecPattern] = []
    refused: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        regex, include = GitIgnoreSpecPattern.pattern_to_regex(line)
        if include is None or regex is None:
            continue  # a comment or blank line
        try:
            compiled = re2.compile(regex, _OPTIONS)
        except re2.error:
            refused.append((number, line))
            continue
        # pathspec accepts any precompiled regex object with `match`/`search`.
        patterns.append(GitIgnoreSpecPattern(compiled, include))
    # "simple" walks the patterns in order, as git does; the RE2 objects do the matching.
    return pathspec.GitIgnoreSpec(patterns, backend="simple"), refused
