"""Citations: what a reader should see for a slice, a link wherever one can be built.

Without configuration (`default_citation`):
- a crawled page: its URL, with `#<anchor>` (the page's own heading id) past the first slice;
- a git source whose remote is a known forge (GitHub, GitLab, Bitbucket Cloud, Codeberg, Gitea
  or Forgejo, Azure DevOps): a permalink pinned to the commit, in the forge's own form, with the
  slice's lines (`?plain=1`-style source view for files the forge renders, such as markdown, so
  the line fragment lands). A notebook slice (cells, not lines) links to the file. A file that
  differed from the commit (`dirty`) is not in it: it gets the path form;
- anything else: the path and its lines, `docs/x.md:12-40`.

What becomes a link is checked, since a record may come from any tool (`link`): an absolute
http(s) URL with a host, no white space, control or format characters, none of the characters a
URL may not hold unencoded, balanced parentheses, credentials stripped. Any other `url`
(`javascript:`, `data:`, `file:`, a line break and a markdown link after it) is not cited: the
slice gets the path form. A line range is cited only when it can be one (`lines`): from line 1
on, the end not before the start, no more lines than a record's text can hold; else the slice
is cited (and answered) as having no range.

Rules in docs-flatten.yaml override that:

    citations:
      - pattern: '^docs/(?P<page>.+)\\.md$'
        replace: 'https://docs.example.com/${page}/#${anchor}'
      - pattern: '.*'
        replace: 'https://git.example.com/o/r/src/{commit}/{path}#L{startLine}-L{endLine}'

`replace` may use `$1`, `$name`, `${name}` for the pattern's groups, the placeholders `ordinal`,
`heading`, `anchor`, `commit`, `ref`, `path` (the path inside the repository, else the source),
`startLine`, `endLine`, `startCell`, `endCell` as `$name`, `${name}` or `{name}`, and `$$` for a
dollar sign. A placeholder without a value is empty: a notebook slice's range counts cells, so
it fills `startCell`/`endCell` and leaves the line placeholders empty (never a line fragment
that points at the notebook's JSON). Values are percent-encoded for a URL path. The first rule
whose pattern matches the source (and whose optional `corpus` fits) wins. Rules are checked when
the config loads, and an error names the rule: `citations[0].replace`.

Pure functions: no I/O.
"""

from __future__ import annotations

import enum
import posixpath
import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, urlsplit

from flatten.record import place, source_bytes
from flatten.shown import one_line
from flatten.userinfo import strip_credentials
from index.errors import ConfigError

BUILTINS = ("ordinal", "heading", "anchor", "commit", "ref", "path", "startLine", "endLine",
            "startCell", "endCell")  # fmt: skip
CELL = "cell"  # a `lineUnit`: the range counts notebook cells, not lines
_REFERENCE = re.compile(r"\$(?:\$|\{(\w+)\}|(\w+))|\{(\w+)\}")
# A slice is one JSONL line, which the loader reads up to 16 MiB (index.loader.MAX_LINE_BYTES):
# its text holds fewer line breaks than that, so its range spans at most this many lines.
MAX_SPAN = 16 << 20
# What a URL may not hold unencoded (RFC 3986; `[` `]` only around an IPv6 host), and what would
# end a link early where a reader writes it into markdown or HTML.
_NOT_IN_URL = frozenset('<>"{}|\\^`')


@dataclass(frozen=True)
class Origin:
    """Where a slice is: what a citation is built from (its fields and its document's)."""

    source: str
    corpus: str | None = None
    ordinal: int | None = None
    heading: str | None = None
    anchor: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    line_unit: str | None = None  # "cell": the range counts notebook cells, not lines
    url: str | None = None  # a crawled page's URL
    repo_url: str | None = None  # the git remote, as recorded (https, ssh or scp-like)
    commit: str | None = None
    ref: str | None = None
    repo_path: str | None = None  # the path inside the repository
    dirty: bool = False  # the file differed from `commit` when it was read


class Kind(enum.StrEnum):
    PAGE = "page"  # a crawled page's URL
    PERMALINK = "permalink"  # a forge's link pinned to the commit
    PATH = "path"  # the path and its lines


@dataclass(frozen=True)
class Citation:
    text: str
    kind: Kind
    at: str  # what it points at: "heading", "lines", "cells" or "file"


# --- rules ------------------------------------------------------------------------------------


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
        if match.group(3) is not None:  # {name}: a placeholder only
            if match.group(3) not in BUILTINS:
                raise ConfigError(
                    f"{where}.replace: {{{match.group(3)}}} is not a placeholder (one of "
                    f"{', '.join(BUILTINS)}); a pattern's groups are $name or ${{name}}",
                    reason="bad-config",
                )
            continue
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


def cite(rules: list[CitationRule], origin: Origin | str, **fields: Any) -> str | None:
    """The first matching rule's citation for a slice, or None when no rule matches. `origin`
    may be a bare source with its fields as keywords (`cite(rules, "a.md", anchor="x")`)."""
    if isinstance(origin, str):
        origin = Origin(origin, **fields)
    for rule in rules:
        if rule.corpus is not None and rule.corpus != origin.corpus:
            continue
        match = rule.pattern.search(origin.source)
        if match is not None:
            return _REFERENCE.sub(lambda ref, m=match: _value(ref, m, origin), rule.replace)
    return None


def _value(ref: re.Match[str], match: re.Match[str], origin: Origin) -> str:
    name = ref.group(1) or ref.group(2) or ref.group(3)
    if name is None:
        return "$"
    if ref.group(3) is None and name.isdigit():
        raw = match.group(int(name)) or ""
    elif ref.group(3) is None and name in match.re.groupindex:
        raw = match.group(name) or ""
    else:
        raw = _placeholder(origin, name)
    return quote(raw, safe="/")


def _placeholder(origin: Origin, name: str) -> str:
    cells = origin.line_unit == CELL
    value = {
        "ordinal": origin.ordinal,
        "heading": origin.heading,
        "anchor": origin.anchor,
        "commit": origin.commit,
        "ref": origin.ref,
        "path": origin.repo_path or origin.source,
        "startLine": None if cells else origin.start_line,
        "endLine": None if cells else origin.end_line,
        "startCell": origin.start_line if cells else None,
        "endCell": origin.end_line if cells else None,
    }[name]
    return "" if value is None else str(value)


def citation(rules: list[CitationRule], origin: Origin) -> str:
    """What a reader should see for a slice: the first matching rule, else the default."""
    origin = checked(origin)
    return cite(rules, origin) or default_citation(origin).text


# --- what may be cited -------------------------------------------------------------------------


def link(url: str | None) -> str | None:
    """`url` as a citation may hold it (credentials stripped), or None when it is not a link to
    hand a reader: not absolute http(s) with a host (`javascript:`, `data:`, `file:`, a relative
    path), or holding what would cut it short or run on from it where it is written into
    markdown or HTML (white space, control and format characters, `<>"{}|\\^``, `[` `]`
    outside an IPv6 host, an unbalanced parenthesis)."""
    if not url or not url.isprintable() or " " in url or _NOT_IN_URL.intersection(url):
        return None  # isprintable: no control, format (bidi, zero-width) or separator character
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # a malformed IPv6 host or port
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    rest = url[len(parts.scheme) + 3 + len(parts.netloc) :]
    if "[" in rest or "]" in rest or not _balanced(url):
        return None
    return strip_credentials(url)


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def lines(start: int | None, end: int | None) -> tuple[int, int] | None:
    """(first, last) of a slice's range when it can be one: from line 1 on, the end (the start
    when not given) not before the start, spanning at most `MAX_SPAN` lines; else None."""
    if start is None:
        return None
    last = start if end is None else end
    if start < 1 or last < start or last - start >= MAX_SPAN:
        return None
    return start, last


def checked(origin: Origin) -> Origin:
    """`origin` with what cannot be cited left out: a `url` that is not a `link` (the path form
    is cited instead), a range that is not one (`lines`: cited as having none)."""
    url = link(origin.url) if origin.url else origin.url
    span = lines(origin.start_line, origin.end_line)
    start, end = span if span else (None, None)
    if (url, start, end) == (origin.url, origin.start_line, origin.end_line):
        return origin
    return replace(origin, url=url or None, start_line=start, end_line=end)


# --- defaults ---------------------------------------------------------------------------------


def default_citation(origin: Origin) -> Citation:
    """The page URL (with its heading), else a forge permalink, else the path and lines."""
    origin = checked(origin)
    if origin.url:
        heading = None
        if "#" not in origin.url and origin.anchor and origin.ordinal != 1:
            heading = link(f"{origin.url}#{fragment(origin.anchor)}")
        if heading is None:
            return Citation(origin.url, Kind.PAGE, "file")  # a page's first slice is the page
        return Citation(heading, Kind.PAGE, "heading")
    forge = parse_remote(origin.repo_url) if origin.repo_url else None
    if forge is not None and origin.commit and not origin.dirty:
        span = None if origin.line_unit == CELL else lines(origin.start_line, origin.end_line)
        path = origin.repo_path or origin.source
        permalink = link(forge.permalink(origin.commit, path, span))
        if permalink is not None:  # a record's repoUrl or commit may hold anything
            return Citation(permalink, Kind.PERMALINK, "lines" if span else "file")
    # One line, as names are shown: a line break in a record's source cannot start a line (a
    # markdown link of its own) where the citation is quoted verbatim.
    text = place(one_line(origin.source), origin.start_line, origin.end_line, origin.line_unit)
    if origin.start_line is None:
        return Citation(text, Kind.PATH, "file")
    return Citation(text, Kind.PATH, "cells" if origin.line_unit == CELL else "lines")


def fragment(anchor: str) -> str:
    """An element id as a URL fragment (the URL spec's fragment characters kept, the rest and
    `%` percent-encoded): `a b` -> `a%20b`, `50%` -> `50%25`; a browser decodes it back to
    find the id."""
    return quote(anchor, safe="!$&'()*+,;=:@/?")


# Files forges render rather than show as text: a line fragment lands only on their source view.
RENDERED = frozenset(
    {".md", ".markdown", ".mdown", ".mkdn", ".mkd", ".mdwn", ".mdx", ".rst", ".adoc",
     ".asciidoc", ".asc", ".org", ".textile", ".rdoc", ".creole", ".mediawiki", ".wiki", ".pod"}
)  # fmt: skip


class ForgeKind(enum.StrEnum):
    GITHUB = "github"
    GITLAB = "gitlab"
    BITBUCKET = "bitbucket"
    GITEA = "gitea"  # Codeberg, Gitea, Forgejo
    AZURE = "azure"


@dataclass(frozen=True)
class Forge:
    kind: ForgeKind
    web: str  # the repository's web address: https://github.com/o/r (Azure: .../_git/r)

    def permalink(self, commit: str, path: str, lines: tuple[int, int] | None) -> str:
        """The file at `commit`, at `lines` (first and last, inclusive) when given."""
        rendered = posixpath.splitext(path)[1].lower() in RENDERED and lines is not None
        encoded = quote(source_bytes(path), safe="/")  # a non-UTF-8 name's own bytes
        start, end = lines or (0, 0)
        if self.kind is ForgeKind.AZURE:
            # Whole lines: the selection runs to column 1 of the line after the last.
            span = (f"&line={start}&lineEnd={end + 1}&lineStartColumn=1&lineEndColumn=1"
                    if lines else "")  # fmt: skip
            return f"{self.web}?path=/{encoded}&version=GC{commit}{span}"
        if self.kind is ForgeKind.BITBUCKET:
            span = f"#lines-{start}" + (f":{end}" if end != start else "") if lines else ""
            return f"{self.web}/src/{commit}/{encoded}{span}"
        if self.kind is ForgeKind.GITLAB:
            view, span = "?plain=1", f"#L{start}" + (f"-{end}" if end != start else "")
            head = f"{self.web}/-/blob/{commit}/{encoded}"
        elif self.kind is ForgeKind.GITEA:
            view, span = "?display=source", f"#L{start}" + (f"-L{end}" if end != start else "")
            head = f"{self.web}/src/commit/{commit}/{encoded}"
        else:
            view, span = "?plain=1", f"#L{start}" + (f"-L{end}" if end != start else "")
            head = f"{self.web}/blob/{commit}/{encoded}"
        if not lines:
            return head
        return head + (view if rendered else "") + span


_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)(.+)$")  # git@host:o/r.git
# `ssh://git@host:o/r.git`: an scp-like path written after ssh:// (git accepts it), not a port.
_SSH_SCP = re.compile(r"^(?:ssh|git\+ssh|ssh\+git)://([^/\s]+?):(?!\d+(?:/|$))(.+)$")


def parse_remote(remote: str) -> Forge | None:
    """The forge a git remote is on (https, ssh:// or scp-like `git@host:o/r`, credentials
    ignored), or None: a local path, file://, or a host not recognisably a forge."""
    remote = _SSH_SCP.sub(r"\1:\2", remote.strip())
    scp = _SCP_LIKE.match(remote) if "://" not in remote else None
    if scp:
        host, path, scheme = scp.group(1).lower(), scp.group(2), "https"
    else:
        try:
            parts = urlsplit(remote)
            host = (parts.hostname or "").lower()
        except ValueError:
            return None
        if parts.scheme not in ("https", "http", "ssh", "git", "git+ssh", "ssh+git") or not host:
            return None
        path, scheme = parts.path, "http" if parts.scheme == "http" else "https"
    segments = [s for s in path.strip("/").removesuffix(".git").split("/") if s]
    return _forge(host, segments, scheme)


def _forge(host: str, segments: list[str], scheme: str) -> Forge | None:
    if host in ("ssh.dev.azure.com", "vs-ssh.visualstudio.com"):
        # git@ssh.dev.azure.com:v3/org/project/repo
        if len(segments) == 4 and segments[0] == "v3":
            org, project, repo = segments[1:]
            return Forge(ForgeKind.AZURE, f"https://dev.azure.com/{org}/{project}/_git/{repo}")
        return None
    if host == "dev.azure.com" or host.endswith(".visualstudio.com"):
        if "_git" in segments and segments.index("_git") == len(segments) - 2:
            return Forge(ForgeKind.AZURE, f"https://{host}/{'/'.join(segments)}")
        return None
    first = host.split(".")[0]
    base = f"{scheme}://{host}"
    if host == "github.com" or first == "github":  # GitHub Enterprise: github.example.com
        kind = ForgeKind.GITHUB
    elif host == "gitlab.com" or first == "gitlab":
        kind = ForgeKind.GITLAB
    elif host == "bitbucket.org":
        kind = ForgeKind.BITBUCKET
    elif host == "codeberg.org" or first in ("gitea", "forgejo"):
        kind = ForgeKind.GITEA
    else:
        return None
    # GitLab nests groups (group/sub/repo); the others are exactly owner/repo.
    if len(segments) < 2 or (kind is not ForgeKind.GITLAB and len(segments) != 2):
        return None
    return Forge(kind, f"{base}/{'/'.join(segments)}")
