"""docs-flatten.yaml: settings a project keeps beside its docs (flags override them).

Sections: `flatten:` (defaults for every run that flattens), `sources:` (what a bare
`docs-flatten ingest` refreshes: each a repo, root or url with its own options and corpus),
`redaction:`, `citations:` and `embeddings:`. A key nobody reads is an error that names it and
the keys there are, for every section: a misspelt `exlude:` must not be silently ignored.
Keys of `flatten:` and `sources:` are the flags' names, with `-` or `_` (`max-chars`,
`max_chars`); they are held with `_`, as the commands' parameters are named.

The file is read automatically from the working directory (a pull request's file in CI), so
its shape is checked on YAML's events before it is built: nesting deeper than `MAX_DEPTH` or
more than `MAX_VALUES` values, aliases (`*name`) counted as the values they repeat (a "billion
laughs" of nested aliases), is refused unbuilt. A bad value is echoed cut short (`shown`).
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crawl.options as crawl
from flatten.errors import UsageError

CONFIG_NAME = "docs-flatten.yaml"
SECTIONS = ("citations", "embeddings", "flatten", "redaction", "sources")
KINDS = ("docs", "code", "auto")
# A config is a few dozen values a few levels deep; these are far past any real one.
MAX_DEPTH = 32
MAX_VALUES = 100_000
# The largest size a size setting or flag takes (--max-file-size, --max-page-size): 1 TiB.
MAX_SIZE = 1 << 40
# --max-chars (and the config's max-chars): past 16 MiB no slice's line could be loaded
# (index.loader.MAX_LINE_BYTES), so a larger budget is a typo.
MIN_CHARS, MAX_CHARS = 200, 16 << 20
SHOWN_CHARS = 200  # a bad value is echoed in its error cut to this

_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlong = 3, 80, 80, 40


def shown(value: Any) -> str:
    """`repr(value)` cut short: a few items, levels and characters of it, never all of it."""
    text = _SHOWN.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) and value.strip() else "a non-empty string"


def _some_text(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "a non-empty string"


def _globs(value: Any) -> str | None:
    ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
    return None if ok else "a list of glob patterns"


def _kind(value: Any) -> str | None:
    return None if value in KINDS else f"one of {', '.join(KINDS)}"


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]i?b?|b)?\s*$", re.I)
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "m": 1000**2,
    "g": 1000**3,
    "ki": 1024,
    "mi": 1024**2,
    "gi": 1024**3,
}


def parse_size(text: str) -> int:
    """`1048576`, `512k`, `1MiB`, `2MB` -> bytes; `UsageError` (`bad-size`) for what is no
    size or more than `MAX_SIZE`."""
    match = _SIZE.match(text)
    if not match:
        raise UsageError(
            f"not a size: {shown(text)} (try 1MiB, 512k or a number of bytes)", reason="bad-size"
        )
    unit = (match.group(2) or "").lower().removesuffix("b")
    size = float(match.group(1)) * _UNITS[unit]  # 400 digits read as inf: refused below
    if not size <= MAX_SIZE:
        raise UsageError(f"not a size: {shown(text)} is more than 1TiB", reason="bad-size")
    return int(size)


def _size(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_SIZE
    if isinstance(value, str):  # read as the flags are: `1XB` is no size
        try:
            ok = parse_size(value) > 0
        except UsageError:
            ok = False
    return None if ok else "a size (1MiB, 512k or a number of bytes) up to 1TiB"


_LIMIT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(%?)\s*")


def removal_limit(text: str | int) -> tuple[str, bool]:
    """--max-delete's value (`25` documents or `25%` of the corpus) as its number and whether it
    is a percentage; `UsageError` otherwise. Read here, where the config is checked, and by the
    index's snapshot (`index.snapshot.parse_limit`)."""
    match = _LIMIT.fullmatch(str(text))
    if not match or (not match.group(2) and "." in match.group(1)):
        raise UsageError(
            f"--max-delete takes a number of documents or a percentage (10, 25%), not {text!r}",
            reason="bad-max-delete",
        )
    return match.group(1), bool(match.group(2))


def _limit(value: Any) -> str | None:
    """Read as --max-delete is, now rather than when the source is loaded, after its flatten or
    crawl."""
    ok = (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or isinstance(
        value, str
    )
    if ok:
        try:
            removal_limit(value)
        except UsageError:
            ok = False
    return None if ok else "a number of documents or a percentage (25%)"


def whole_number(low: int, high: int | None = None) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
        ok = ok and (high is None or value <= high)
        return None if ok else f"a whole number from {low:,}" + (f" to {high:,}" if high else "")

    return check


def seconds_at_least(low: float, high: float | None = None) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, float) and not math.isfinite(value):
            # YAML's .inf and .nan, refused as the flags refuse them: a crawl would wait for
            # ever (nan passes every comparison, inf none).
            return "a finite number of seconds"
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= low
        if high is None:
            return None if ok else f"seconds, at least {low:g}"
        return None if ok and value <= high else f"seconds, from {low:g} to {high:g}"

    return check


def _flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


# The settings `flatten:` takes, and what each must be.
FLATTEN_KEYS: dict[str, Callable[[Any], str | None]] = {
    "kind": _kind, "include": _globs, "exclude": _globs,
    "max_chars": whole_number(MIN_CHARS, MAX_CHARS), "max_file_size": _size,
}  # fmt: skip
# A source entry: one of repo, root, url; its corpus; the flatten settings and its own.
SOURCE_KINDS = ("repo", "root", "url")
SOURCE_KEYS: dict[str, Callable[[Any], str | None]] = {
    "repo": _text, "root": _text, "url": _text, "corpus": _text, "ref": _text, "subdir": _text,
    "token_env": _text, "max_delete": _limit, **FLATTEN_KEYS,
    "scope": _text, "max_pages": whole_number(*crawl.PAGES),
    "max_depth": whole_number(*crawl.DEPTH),
    "concurrency": whole_number(*crawl.CONCURRENCY), "delay": seconds_at_least(*crawl.DELAY),
    "timeout": seconds_at_least(*crawl.TIMEOUT),
    "max_page_size": _size, "ignore_robots": _flag, "no_sitemap": _flag,
}  # fmt: skip
# A citations rule (index.citations reads it and compiles its pattern; its keys and their
# types are checked here with the other sections).
CITATION_KEYS: dict[str, Callable[[Any], str | None]] = {
    "pattern": _some_text, "replace": _some_text, "corpus": _text,
}  # fmt: skip
# The embeddings settings that are text (index.vectors.client checks the section in full where
# embeddings are used; base_url and model may come from the flags there).
EMBEDDING_TEXTS = ("base_url", "model", "api_key_env")


def _error(path: Path | None, message: str) -> UsageError:
    return UsageError(f"{path or CONFIG_NAME}: {message}", reason="bad-config")


def check_keys(path: Path | None, where: str, keys: Any, known: Any) -> None:
    """`UsageError` naming the first of `keys` not in `known`, and the known ones."""
    unknown = sorted(str(k) for k in set(keys) - set(known))
    if unknown:
        dot = f"{where}." if where else ""
        what = "a section" if not where else "a setting"
        name = unknown[0] if len(unknown[0]) <= SHOWN_CHARS else shown(unknown[0])
        raise _error(path, f"{dot}{name}: not {what} (known: {', '.join(sorted(known))})")


def _settings(
    path: Path, where: str, data: Any, checks: dict[str, Callable[[Any], str | None]]
) -> dict[str, Any]:
    """A mapping of settings with `-` spelt `_`, every key known and every value checked."""
    if not isinstance(data, dict):
        raise _error(path, f"{where}: expected a mapping")
    out = {str(k).replace("-", "_"): v for k, v in data.items()}
    check_keys(path, where, out, checks)
    for key, value in out.items():
        if key in ("include", "exclude") and isinstance(value, str):
            value = out[key] = [value]  # one pattern without a list
        problem = checks[key](value)
        if problem:
            raise _error(path, f"{where}.{key}: expected {problem}, not {shown(value)}")
    return out


def _sources(path: Path, data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, list):
        raise _error(path, "sources: expected a list of {repo | root | url, ...} entries")
    entries = []
    for n, entry in enumerate(data):
        where = f"sources[{n}]"
        if isinstance(entry, str):
            raise _error(path, f"{where}: expected a mapping such as {{repo: {shown(entry)}}}")
        entry = _settings(path, where, entry, SOURCE_KEYS)
        given = [k for k in SOURCE_KINDS if k in entry]
        if len(given) != 1:
            raise _error(path, f"{where}: give exactly one of repo, root or url")
        entries.append(entry)
    return entries


def check_config(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The config with `flatten:` and `sources:` checked and their keys spelt with `_`; any key
    nobody reads, in any section, is an error naming it and the keys there are."""
    check_keys(path, "", data, SECTIONS)
    out = dict(data)
    if data.get("flatten") is not None:
        out["flatten"] = _settings(path, "flatten", data["flatten"], FLATTEN_KEYS)
    if data.get("sources") is not None:
        out["sources"] = _sources(path, data["sources"])
    for name, section in (("embeddings", data.get("embeddings")),
                          ("redaction", data.get("redaction"))):  # fmt: skip
        if isinstance(section, dict):  # their own parsers check values and the keys they know
            continue
        if section is not None:
            raise _error(path, f"{name}: expected a mapping, not {shown(section)}")
    for key in EMBEDDING_TEXTS:
        value = (data.get("embeddings") or {}).get(key)
        if value is not None and _text(value):
            raise _error(path, f"embeddings.{key}: expected {_text(value)}, not {shown(value)}")
    rules = data.get("citations")
    if rules is not None and not isinstance(rules, list):
        raise _error(path, "citations: expected a list of {pattern, replace} rules, "
                           f"not {shown(rules)}")  # fmt: skip
    for n, rule in enumerate(rules or []):
        if isinstance(rule, dict):
            _settings(path, f"citations[{n}]", rule, CITATION_KEYS)
    return out


def config_path(path: str | Path | None = None) -> Path | None:
    """The config file a command reads: `path`, else ./docs-flatten.yaml if present, else none."""
    if path is not None:
        return Path(path)
    candidate = Path(CONFIG_NAME)
    return candidate if candidate.exists() else None


def load_config(path: str | Path | None = None) -> dict[str, Any]:
    """The config at `path`, else ./docs-flatten.yaml if present, else an empty config."""
    found = config_path(path)
    if found is None:
        return {}
    data = _read_yaml(found)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{found}: expected a mapping at the top level", reason="bad-config")
    return check_config(data, found)


def load_sources(path: str | Path) -> list[dict[str, Any]]:
    """`--sources FILE`: entries as the config's `sources:` takes them, as a YAML list or a
    mapping holding `sources:` (a config file itself will do), checked the same way."""
    path = Path(path)
    data = _read_yaml(path)
    if isinstance(data, dict) and "sources" in data:
        data = data["sources"]
    return _sources(path, data)


def _read_yaml(path: Path) -> Any:
    """The YAML document at `path`, or a `UsageError` (reason `bad-config`) saying why not."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the config {path}: {exc.strerror}",
                         reason="bad-config") from exc  # fmt: skip
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not valid UTF-8 (byte {exc.start})",
                         reason="bad-config") from None  # fmt: skip
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    _check_shape(path, text)
    try:
        data = YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise _not_yaml(path, exc) from None
    except ValueError as exc:  # an integer past sys.get_int_max_str_digits(), a 13th month
        why = str(exc).split(";")[0]  # not the advice to raise Python's digit limit
        raise UsageError(f"{path}: a value that cannot be read: {why}",
                         reason="bad-config") from None  # fmt: skip
    return data


def _check_shape(path: Path, text: str) -> None:
    """`UsageError` for a document nested deeper than `MAX_DEPTH` or holding more than
    `MAX_VALUES` values once its aliases are expanded, read from its events (LibYAML's, a state
    machine, no recursion, in C) before ruamel builds it. An alias counts the values of its
    anchor's node, so nested aliases are counted, never expanded."""
    import yaml

    values = 0
    opened: list[tuple[str | None, int]] = []  # each open collection's anchor, values before it
    anchored: dict[str, int] = {}  # values of each closed anchor's node
    try:
        # LibYAML's loader where PyYAML was built with it (its wheels are); else its own.
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, yaml.CollectionStartEvent):
                opened.append((event.anchor, values))
                values += 1
                if len(opened) > MAX_DEPTH:
                    raise _error(path, f"nested deeper than {MAX_DEPTH} levels (line "
                                       f"{event.start_mark.line + 1})")  # fmt: skip
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, before = opened.pop()
                if anchor is not None:
                    anchored[anchor] = values - before
            elif isinstance(event, yaml.ScalarEvent):
                values += 1
                if event.anchor is not None:
                    anchored[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                # An alias of a node still open (a node holding itself) counts as one: ruamel
                # builds it as a cycle, which no setting takes.
                values += anchored.get(event.anchor, 1)
            if values > MAX_VALUES:
                raise _error(path, f"more than {MAX_VALUES:,} values (aliases such as *name "
                                   "count the values they repeat)")  # fmt: skip
    except yaml.YAMLError as exc:
        raise _not_yaml(path, exc) from None


def _not_yaml(path: Path, exc: Exception) -> UsageError:
    """A YAML error (LibYAML's or ruamel's) on one line: what is wrong, and where."""
    said = (getattr(exc, "context", None), getattr(exc, "problem", None))
    problem = " ".join(": ".join(filter(None, said)).split()) or " ".join(str(exc).split())
    if len(problem) > SHOWN_CHARS:  # a duplicate key's message holds its values
        problem = problem[:SHOWN_CHARS] + "..."
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return UsageError(f"{path} is not valid YAML: {problem}{where}", reason="bad-config")


@dataclass(frozen=True)
class Setting:
    """A setting's value and where it came from: flag > config > default."""

    value: Any
    origin: str  # "flag", "config sources[0].kind", "config flatten.kind" or "default"


def resolve(
    values: dict[str, Any], given: set[str], config: dict[str, Any], source: int | None = None
) -> dict[str, Setting]:
    """Each of a command's settings (`values`: its parameters, defaults included) with its
    origin: a flag given on the command line (`given`), else the config's source entry number
    `source`, else its `flatten:` section, else the command's default."""
    flatten = config.get("flatten") or {}
    entry = config["sources"][source] if source is not None else {}
    out: dict[str, Setting] = {}
    for name, value in values.items():
        if name in given:
            out[name] = Setting(value, "flag")
        elif name in entry:
            out[name] = Setting(entry[name], f"config sources[{source}].{name}")
        elif name in flatten:
            out[name] = Setting(flatten[name], f"config flatten.{name}")
        else:
            out[name] = Setting(value, "default")
    return out
