"""Classify a path: which slicer format, kind and language it has, or why it is skipped.

Path rules only; what the bytes say (binary, LFS pointer, minified) is `flatten.content`'s job.
Binary files are recognised by content, except for a short list of extensions that are never
text: guessing binary from an extension alone once made a tool skip every `.ts` file.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass

from flatten.options import KINDS  # noqa: F401  (re-exported)
from slicers.base import split_lines
from slicers.openapi import sniff_spec
from slicers.rst import find_rst_headings


@dataclass(frozen=True)
class FileClass:
    fmt: str  # the slicer registry key
    kind: str  # the record's `kind`
    lang: str | None
    is_docs: bool


# Directory names whose contents are never documentation of the project itself.
NOISE_DIRS: dict[str, str] = {
    **dict.fromkeys((".git", ".hg", ".svn", ".bzr"), "vcs"),
    **dict.fromkeys(
        ("node_modules", "vendor", "bower_components", ".terraform", ".venv", "venv",
         "site-packages", ".bundle", "Pods"),
        "vendored",
    ),
    **dict.fromkeys(
        ("dist", "build", "target", "out", ".next", ".nuxt", ".svelte-kit", "_build",
         "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
         ".gradle", ".cache", "coverage", "htmlcov", ".docusaurus",
         ".docs-flatten"),  # our own index store (a CI job caches it inside the checkout)
        "build-output",
    ),
}  # fmt: skip

LOCKFILES = frozenset({
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
    "Cargo.lock", "poetry.lock", "Pipfile.lock", "uv.lock", "pdm.lock", "Gemfile.lock",
    "composer.lock", "go.sum", "mix.lock", "flake.lock", "Package.resolved", "pubspec.lock",
    "packages.lock.json", "gradle.lockfile", ".terraform.lock.hcl", "conda-lock.yml",
})  # fmt: skip

# Files whose whole purpose is to hold credentials: never read, never emitted.
_SECRET_NAMES = frozenset({
    ".netrc", "_netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", "kubeconfig",
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "credentials", ".htpasswd",
    "secrets.yaml", "secrets.yml", "secrets.json",
})  # fmt: skip
_SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kubeconfig", ".gpg")
_ENV_TEMPLATES = (".example", ".sample", ".template", ".dist", ".defaults")

_NEVER_TEXT = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".icns", ".tif", ".tiff", ".psd",
    ".pdf", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".jar", ".war",
    ".class", ".so", ".dylib", ".dll", ".exe", ".o", ".a", ".lib", ".woff", ".woff2", ".ttf",
    ".otf", ".eot", ".mp3", ".mp4", ".m4a", ".wav", ".ogg", ".mov", ".avi", ".webm", ".wasm",
    ".pyc", ".pyo", ".sqlite", ".sqlite3", ".db", ".parquet", ".npy", ".pkl", ".bin",
})  # fmt: skip

_DOC_FORMATS: dict[str, tuple[str, str]] = {
    ".md": ("markdown", "markdown"), ".markdown": ("markdown", "markdown"),
    ".mdown": ("markdown", "markdown"), ".mkd": ("markdown", "markdown"),
    ".mdx": ("markdown", "mdx"), ".rst": ("rst", "rst"), ".rest": ("rst", "rst"),
    ".adoc": ("asciidoc", "asciidoc"), ".asciidoc": ("asciidoc", "asciidoc"),
    ".asc": ("asciidoc", "asciidoc"), ".txt": ("text", "text"), ".text": ("text", "text"),
    ".ipynb": ("notebook", "ipynb"),
}  # fmt: skip
# Read before deciding: an OpenAPI/Swagger spec or a JSON Schema is documentation (`classify_text`).
SPEC_SUFFIXES = frozenset({".json", ".yaml", ".yml"})
# Their long lines are data the slicer reads (base64 outputs, one-line JSON): never "minified".
NEVER_MINIFIED = frozenset({"notebook", "openapi"})
# Extension-less names that are prose by convention.
_DOC_NAMES = frozenset({
    "README", "CHANGELOG", "CHANGES", "HISTORY", "NEWS", "CONTRIBUTING", "AUTHORS", "NOTICE",
    "LICENSE", "LICENCE", "COPYING", "TODO", "SECURITY", "CODEOWNERS",
})  # fmt: skip

# Our own extension map: the language pack has no short aliases (`py`, `ts`, `sh`).
CODE_LANGS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".go": "go", ".java": "java", ".kt": "kotlin",
    ".kts": "kotlin", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascript", ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx", ".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
    ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp", ".cs": "csharp",
    ".swift": "swift", ".scala": "scala", ".sc": "scala", ".php": "php", ".rb": "ruby",
    ".lua": "lua", ".dart": "dart", ".ex": "elixir", ".exs": "elixir", ".erl": "erlang",
    ".hs": "haskell", ".ml": "ocaml", ".r": "r", ".jl": "julia", ".pl": "perl", ".zig": "zig",
    ".vue": "vue", ".svelte": "svelte", ".sql": "sql", ".proto": "proto", ".graphql": "graphql",
    ".gql": "graphql", ".mk": "make", ".dockerfile": "dockerfile",
}  # fmt: skip
_BLOCK_NAMES = {"Dockerfile": "dockerfile", "Makefile": "make", "GNUmakefile": "make",
                "makefile": "make"}  # fmt: skip
_INFRA: dict[str, tuple[str, str, str]] = {  # suffix -> (fmt, kind, lang)
    ".tf": ("terraform", "terraform", "hcl"), ".tfvars": ("terraform", "terraform", "hcl"),
    ".hcl": ("terraform", "terraform", "hcl"), ".yaml": ("yaml", "yaml", "yaml"),
    ".yml": ("yaml", "yaml", "yaml"), ".sh": ("shell", "shell", "bash"),
    ".bash": ("shell", "shell", "bash"), ".zsh": ("shell", "shell", "bash"),
}  # fmt: skip
_TEXT_NAMES: dict[str, str] = {
    "Justfile": "just",
    "Jenkinsfile": "groovy", "Vagrantfile": "ruby", "Gemfile": "ruby", "Rakefile": "ruby",
}  # fmt: skip
_TEXT_SUFFIXES: dict[str, str] = {
    ".toml": "toml", ".json": "json", ".ini": "ini", ".cfg": "ini", ".xml": "xml",
    ".html": "html", ".htm": "html", ".css": "css", ".scss": "scss", ".csv": "csv",
    ".gradle": "groovy", ".properties": "properties",
}  # fmt: skip
_SHEBANG = re.compile(r"^#!\s*(?:/usr/bin/env\s+(?:-S\s+)?)?(?:\S*/)?(\w+)")
_SHEBANG_LANGS = {
    "sh": ("shell", "shell", "bash"), "bash": ("shell", "shell", "bash"),
    "zsh": ("shell", "shell", "bash"), "dash": ("shell", "shell", "bash"),
    "python": ("code", "code", "python"), "python3": ("code", "code", "python"),
    "node": ("code", "code", "javascript"), "ruby": ("code", "code", "ruby"),
}  # fmt: skip


def path_parts(rel_path: str) -> list[str]:
    """The names in a relative path (`PurePosixPath(rel_path).parts`), without building one:
    the path rules run on every listed file, and pathlib's parsing was most of their cost."""
    parts = rel_path.split("/")
    if "" in parts or "." in parts:
        return [part for part in parts if part not in ("", ".")]
    return parts


def suffix_of(name: str) -> str:
    """`PurePosixPath(name).suffix`: from the last dot, unless the name starts or ends there."""
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""


def _suffix(rel_path: str) -> str:
    """The lower-case suffix of the file a path names."""
    parts = path_parts(rel_path)
    return suffix_of(parts[-1]).lower() if parts else ""


def noise_dir(rel_path: str) -> tuple[str, str] | None:
    """The first noise directory on a file's path (`node_modules/`) and its reason, or None."""
    return _noise_in(path_parts(rel_path))


def _noise_in(parts: list[str]) -> tuple[str, str] | None:
    for i, part in enumerate(parts[:-1]):
        reason = NOISE_DIRS.get(part)
        if reason:
            return "/".join(parts[: i + 1]) + "/", reason
    return None


def path_skip_reason(rel_path: str) -> str | None:
    """Why a file is skipped by its path alone, or None."""
    parts = path_parts(rel_path)
    noise = _noise_in(parts)
    if noise:
        return noise[1]
    name = parts[-1] if parts else ""
    lower = name.lower()
    if name in LOCKFILES:
        return "lockfile"
    if ".tfstate" in lower:
        return "tfstate"
    if _is_secret_file(parts, lower):
        return "secret-file"
    if lower.endswith((".min.js", ".min.css", ".min.mjs")) or "-min." in lower:
        return "minified"
    if lower.endswith(".map") and ("." in lower[:-4]):
        return "sourcemap"
    if suffix_of(name).lower() in _NEVER_TEXT:
        return "binary"
    return None


# Files a reader of the docs never wants as an answer: legal text, ownership maps, forms to fill
# in, templates. Skipped as `boilerplate` under every --kind; a matching --include brings one back.
# SECURITY.md and CONTRIBUTING.md stay: they are the project's own instructions.
_BOILERPLATE_STEMS = frozenset({
    "license", "licence", "licenses", "licences", "unlicense", "copying", "copyright", "notice",
    "codeowners", "code_of_conduct", "code-of-conduct", "issue_template", "pull_request_template",
})  # fmt: skip
_BOILERPLATE_DIRS = frozenset({
    "issue_template", "pull_request_template", "discussion_template", "issue_templates",
    "merge_request_templates",
})  # fmt: skip
_TEMPLATE_INFIX = re.compile(r"\.(?:tpl|tmpl|template)\.(?:md|markdown|rst|txt|adoc)$", re.I)


def is_boilerplate(rel_path: str) -> bool:
    """LICENSE/COPYING/NOTICE (any extension, `LICENSE-MIT` too), CODEOWNERS, the code of conduct,
    issue, pull/merge request and discussion templates, and `*.tpl.md`-style templates."""
    parts = path_parts(rel_path)
    lower = parts[-1].lower() if parts else ""
    stem = lower.split(".", 1)[0]
    named = stem in _BOILERPLATE_STEMS or stem.startswith(("license-", "licence-", "copying-"))
    if named and suffix_of(lower) not in CODE_LANGS:  # license.go is code, not a licence
        return True
    if any(part.lower() in _BOILERPLATE_DIRS for part in parts[:-1]):
        return True
    return bool(_TEMPLATE_INFIX.search(lower))


def _is_secret_file(parts: list[str], lower: str) -> bool:
    if lower.startswith(".env") and not lower.endswith(_ENV_TEMPLATES):
        return lower == ".env" or lower.startswith(".env.")
    if lower in _SECRET_NAMES:
        return lower != "credentials" or ".aws" in parts
    if lower.endswith(_SECRET_SUFFIXES):
        return True
    return len(parts) >= 2 and parts[-2] == ".kube" and lower == "config"


def classify(rel_path: str, first_line: str = "") -> FileClass:
    """The format, kind and language of a text file, from its name (or its shebang)."""
    parts = path_parts(rel_path)
    name = parts[-1] if parts else ""
    suffix = suffix_of(name).lower()
    if suffix in _DOC_FORMATS:
        fmt, lang = _DOC_FORMATS[suffix]
        return FileClass(fmt, fmt, lang, is_docs=True)
    if not suffix and name.upper() in _DOC_NAMES:
        return FileClass("text", "text", "text", is_docs=True)
    if suffix in _INFRA:
        return FileClass(*_INFRA[suffix], is_docs=False)
    if suffix in CODE_LANGS:
        return FileClass("code", "code", CODE_LANGS[suffix], is_docs=False)
    if name in _BLOCK_NAMES:
        return FileClass("code", "code", _BLOCK_NAMES[name], is_docs=False)
    if name in _TEXT_NAMES:
        return FileClass("text", "text", _TEXT_NAMES[name], is_docs=False)
    if suffix in _TEXT_SUFFIXES:
        return FileClass("text", "text", _TEXT_SUFFIXES[suffix], is_docs=False)
    shebang = _SHEBANG.match(first_line)
    if shebang and shebang.group(1) in _SHEBANG_LANGS:
        return FileClass(*_SHEBANG_LANGS[shebang.group(1)], is_docs=False)
    return FileClass("text", "text", None, is_docs=False)


def classify_text(rel_path: str, text: str) -> FileClass:
    """`classify` with a look at the text: its shebang, whether a JSON/YAML file is an API
    spec or a JSON Schema (docs, sliced per operation and schema), and whether a text document
    (`.txt`, `README`) is reStructuredText (sliced by its sections)."""
    file_class = classify(rel_path, text[:200].split("\n", 1)[0])
    if file_class.fmt == "text" and file_class.is_docs and looks_like_rst(text):
        return FileClass("rst", "rst", "rst", is_docs=True)
    if _suffix(rel_path) in SPEC_SUFFIXES:
        kind = sniff_spec(text)
        if kind is not None:
            return FileClass("openapi", kind, file_class.lang, is_docs=True)
    return file_class


# Markup that only reST gives a meaning to: a directive (`.. note::`, `.. code-block:: python`),
# a hyperlink target (`.. _install:`), a substitution definition (`.. |logo| image:: x.png`), a
# role (`:ref:`install``, `:py:class:`Widget``), or an inline literal in double backquotes.
_RST_MARKUP = re.compile(
    r"^[ \t]*\.\. (?:\w[\w:+.-]*::|_[^:\n]+:|\|[^|\n]+\| \w[\w:+.-]*::)"
    r"|(?<![\w`:]):[A-Za-z][\w+.-]*(?::[A-Za-z][\w+.-]*)*:`[^`\n]+`"
    r"|(?<![\w`])``[^`\s](?:[^`\n]*[^`\s])?``(?![\w`])",
    re.MULTILINE,
)


def looks_like_rst(text: str) -> bool:
    """Whether a text document is reStructuredText (Sphinx projects name their sources `.txt`):
    it holds reST's own markup (directives, targets, substitutions, roles, literals) twice, or
    once beside a section title docutils accepts (adorned at least as long as its text).

    Titles alone are no evidence, over- and underlined or not: plain text underlines headings
    too, boxes banners in lines of `=` or `-`, and fences examples between lines of dashes
    (and markdown's setext headings look the same); such text reads as well in size windows.
    """
    markup = 0
    for _ in _RST_MARKUP.finditer(text):
        markup += 1
        if markup == 2:
            return True
    if not markup:
        return False
    lines = split_lines(text)
    return any(_is_rst_title(lines, heading.end) for heading in find_rst_headings(lines, text))


def _is_rst_title(lines: list[str], end: int) -> bool:
    """A title (underlined, or overlined too) whose underline is at least as long as its text:
    the slicer takes shorter ones too, as docutils does with a warning; evidence of reST takes
    only what docutils accepts."""
    return len(lines[end - 1].rstrip()) >= len(lines[end - 2].strip()) > 0


def might_be_docs(rel_path: str) -> bool:
    """Cheap pre-check for --kind docs, so non-docs are skipped before they are read.

    JSON and YAML files are read: only their text says whether they are API specs."""
    return classify(rel_path).is_docs or _suffix(rel_path) in SPEC_SUFFIXES


def include_exclude_reason(
    rel_path: str, include: tuple[str, ...], exclude: tuple[str, ...]
) -> str | None:
    """ "not-included" or "excluded" when --include/--exclude turn `rel_path` away, else None.
    A crawl passes URL paths (`/docs/1.1/intro/`); a leading `/` is optional in the globs."""
    if include and not _matches(rel_path, include):
        return "not-included"
    if exclude and _matches(rel_path, exclude):
        return "excluded"
    return None


def _matches(rel_path: str, patterns: tuple[str, ...]) -> bool:
    if not rel_path.startswith("/"):
        return matches_any(rel_path, patterns)
    bare = rel_path.lstrip("/")
    return matches_any(rel_path, patterns) or matches_any(bare, patterns)


def matches_any(rel_path: str, patterns: tuple[str, ...]) -> bool:
    """Glob match on the whole relative path or on the file name (`*.md`, `docs/*`, `**/x.md`).

    As in fnmatch, `*` also matches `/`, so `docs/*` takes everything below docs/. As in git's
    wildmatch, `**/` matches zero or more directories: `docs/**/*.rst` takes `docs/index.rst`
    too (fnmatch alone reads it as `docs/*/*.rst`, which needs a folder below docs/).
    """
    parts = path_parts(rel_path)
    name = parts[-1] if parts else ""
    return any(
        _glob_matches(target, pattern) for pattern in patterns for target in (rel_path, name)
    )


# A pattern with more `**/` than this is matched piece by piece: its spellings number 2**n.
_MAX_SPELLED_STARS = 5


def _glob_matches(target: str, pattern: str) -> bool:
    if pattern.count("**/") <= _MAX_SPELLED_STARS:
        return any(fnmatch.fnmatchcase(target, spelling) for spelling in _spellings(pattern))
    return _pieces_match(target, _pieces(pattern))


@functools.lru_cache(maxsize=1024)
def _spellings(pattern: str) -> tuple[str, ...]:
    """`pattern` and each spelling of it with some of its `**/` left out: fnmatch's `**/` stands
    for one or more directories, so together they stand for zero or more."""
    head, sep, tail = pattern.partition("**/")
    if not sep:
        return (pattern,)
    return tuple(head + spelling for rest in _spellings(tail) for spelling in (sep + rest, rest))


@functools.lru_cache(maxsize=256)
def _pieces(pattern: str) -> tuple[re.Pattern[str], ...]:
    """The fnmatch patterns between a pattern's `**/`s, compiled."""
    return tuple(re.compile(fnmatch.translate(piece)) for piece in pattern.split("**/"))


def _pieces_match(target: str, pieces: tuple[re.Pattern[str], ...]) -> bool:
    """What the spellings answer, in polynomial time: each `**/` between two pieces is nothing
    or any text up to a `/` (`(?:.*/)?`), so the positions a piece may start at are carried
    from one piece to the next."""
    size = len(target)
    starts = {0}
    for number, piece in enumerate(pieces):
        ends = {e for s in starts for e in range(s, size + 1) if piece.fullmatch(target, s, e)}
        if number == len(pieces) - 1:
            return size in ends
        first_end = min(ends, default=size + 1)
        starts = ends | {j + 1 for j in range(first_end, size) if target[j] == "/"}
        if not starts:
            return False
    return False
