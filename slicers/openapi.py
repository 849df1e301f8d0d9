"""OpenAPI 3.x, Swagger 2.0, AsyncAPI and JSON Schema: one slice per operation and per schema.

Recognised by a top-level `openapi` / `swagger` / `asyncapi` key, or `$schema` with
`definitions`/`$defs`. AsyncAPI gets one slice per channel (`channel user/signedup`, with its
2.x publish/subscribe operations) and per 3.x operation (`operation onLightMeasured`).
Slices, in file order:

- the top-level keys that are not paths or schemas (`openapi`, `info`, `servers`, `tags`...),
  a run of them as one slice titled from `info` (`info: Swagger Petstore 1.0.0`);
- one per operation, `GET /pets/{petId}`, with the schemas it references as a record field;
  a path item that is only a `$ref` (its operations in another file) one per route, `/pets`;
- one per schema, `schema Pet` (`components.schemas`, `definitions`, `$defs`); other component
  sections (`components.responses`...) one each.

Slices are the file's own lines, so ranges are true: each unit starts at its key's line and runs
to the next unit, so every line belongs to exactly one slice. Minified JSON (one line) is cut at
its units' keys instead: each slice is a piece of line 1, and the pieces, in order, are the line.
A minified spec whose `openapi`/`swagger` key is not the first is recognised by a parse.

JSON positions come from a small scan of the keys (JSON is not always YAML, and a YAML parse is slow
on big files). YAML positions come from the parse itself: LibYAML (PyYAML's C loader, ~10x faster
than ruamel.yaml's pure-Python parser) read with ruamel's own YAML 1.2 scalar rules, so the data is
what ruamel would load; what LibYAML cannot read the same way (tags, anchors, merges, directives,
tabs, duplicate keys) goes through ruamel.yaml's round-trip loader as before. The container lines
above a unit (`paths:`, `/pets:`) go with it, and so do the comments directly above it. A file that
does not parse, or is no spec, is sliced as YAML or as windows.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from slicers.base import LineSpan, Sliced, SliceOptions, spans_to_slices, split_lines
from slicers.windows import Window, cut_line, pack_windows, slice_windows, window_spans
from slicers.yaml import slice_yaml

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_SNIFF_YAML = re.compile(r"^(?:openapi|swagger|asyncapi|[\"']?\$schema[\"']?)[ \t]*:", re.M)
# A top-level key of pretty-printed JSON (indented 0-4), or the first key of one-line JSON.
_SNIFF_JSON = re.compile(
    r"^(?:[ \t]{0,4}|\{)\"(?:openapi|swagger|asyncapi|\$schema)\"[ \t]*:", re.M
)
_SPEC_KEY_ANYWHERE = re.compile(r"\"(?:openapi|swagger|asyncapi)\"[ \t]*:")
_SNIFF_DEFS = re.compile(r"[\"']?(?:definitions|\$defs)[\"']?[ \t]*:")
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}\[\]:]')
_MAX_REFS = 8
# Deeper flow nesting than any spec has: ruamel's scanner costs O(depth) per token (and its
# composer recurses), so a 6 KB `[[[[...` took seconds before failing; LibYAML stops at 1000.
_MAX_FLOW_DEPTH = 200
_FLOW_BRACKET = re.compile(r"[\[\]{}]")
_LONE_CR = re.compile(r"\r(?!\n)")
_YAML_BREAK = re.compile(r"\r\n?|\n")  # as ruamel counts lines; slices count "\n" only
# A block scalar (`|`, `>`) whose first line holds only spaces: ruamel rejects it when a later
# line is indented more ("more indented follow up line than first"), LibYAML does not.
_SPACES_FIRST_IN_BLOCK = re.compile(r"[|>][-+0-9]*[ ]*(?:#[^\n]*)?\r?\n[ ]+\r?\n")
# A block scalar header with a `#` right after it (`|#`): no comment without a space before it,
# and the two parsers disagree on what it is.
_HASH_AFTER_BLOCK = re.compile(r"[|>][-+0-9]*#")

Path = tuple[str, ...]
_WITH_PATHS = ("openapi", "swagger", "asyncapi")


def sniff_spec(text: str) -> str | None:
    """A cheap look at the text (no parse): `openapi` (OpenAPI or Swagger), `asyncapi`,
    `jsonschema`, or None.

    `$schema` alone is not enough: many config files (tsconfig, renovate) point at their schema.
    """
    is_json = text.lstrip()[:1] in ("{", "[")
    match = (_SNIFF_JSON if is_json else _SNIFF_YAML).search(text)
    if match is None:
        # Minified JSON keeps its keys on one line in any order: a key's name alone does not say
        # it is at the top, so the (rare) file that names one is parsed to see.
        return _spec_key_at_top(text) if is_json else None
    if "asyncapi" in match.group(0):
        return "asyncapi"
    if "$schema" not in match.group(0):
        return "openapi"
    return "jsonschema" if _SNIFF_DEFS.search(text) else None


def _spec_key_at_top(text: str) -> str | None:
    if _SPEC_KEY_ANYWHERE.search(text) is None:
        return None
    try:
        kind = spec_kind(json.loads(text))
    except (ValueError, RecursionError):
        return None
    return {"openapi": "openapi", "swagger": "openapi", "asyncapi": "asyncapi"}.get(str(kind))


def parse_spec(text: str) -> Any:
    """The data of a JSON or YAML file (None when it does not parse)."""
    loaded = _load(text)
    return None if loaded is None else loaded.data


def spec_kind(data: Any) -> str | None:
    """`openapi`, `swagger`, `asyncapi`, `jsonschema`, or None for any other document."""
    if not isinstance(data, dict):
        return None
    if "asyncapi" in data:
        return "asyncapi"
    if "openapi" in data and isinstance(data.get("paths", {}), dict):
        return "openapi"
    if "swagger" in data and isinstance(data.get("paths", {}), dict):
        return "swagger"
    if "$schema" in data and any(isinstance(data.get(k), dict) for k in ("definitions", "$defs")):
        return "jsonschema"
    return None


def json_key_lines(text: str, max_depth: int = 3) -> dict[Path, int]:
    """The 0-based line of each object key down to `max_depth`, keyed by its path."""
    return {path: line for path, (line, _) in json_key_positions(text, max_depth).items()}


def json_key_positions(text: str, max_depth: int = 3) -> dict[Path, tuple[int, int]]:
    """The 0-based line and character offset of each object key down to `max_depth`.

    Only strings and brackets matter for key positions, so one regex pass finds them; keys
    inside arrays are not tracked (no unit lives there).
    """
    lines: dict[Path, tuple[int, int]] = {}
    stack: list[Path | None] = []  # the path of each open object; None for arrays and depth
    value_path: Path | None = None  # the key whose value comes next
    last_string: tuple[str, tuple[int, int]] | None = None
    line = pos = 0
    for match in _TOKEN.finditer(text):
        line += text.count("\n", pos, match.start())
        pos = match.start()
        token = match.group()
        if token[0] == '"':
            last_string = (token, (line, pos))
            continue
        if token == ":":
            parent = stack[-1] if stack else None
            if last_string is not None and parent is not None and len(parent) < max_depth:
                try:
                    key = json.loads(last_string[0])
                except ValueError:
                    key = last_string[0].strip('"')
                value_path = (*parent, str(key))
                lines.setdefault(value_path, last_string[1])
            else:
                value_path = None
        elif token == "{":
            stack.append(() if not stack else value_path)
            value_path = None
        elif token == "[":
            stack.append(None)
            value_path = None
        elif stack:
            stack.pop()
        last_string = None
    return lines


def _yaml_key_lines(data: Any, max_depth: int = 3) -> dict[Path, int]:
    lines: dict[Path, int] = {}

    def walk(node: Any, path: Path) -> None:
        # Mappings only: no unit lives in a list, and a list's `lc` is indexed by position.
        if len(path) >= max_depth or not isinstance(node, dict) or not hasattr(node, "lc"):
            return
        for key in node:
            try:
                line = node.lc.key(key)[0]
            except Exception:  # ruamel keeps no position for merged (<<) keys
                continue
            lines[(*path, str(key))] = line
            walk(node[key], (*path, str(key)))

    if isinstance(data, dict):
        walk(data, ())
    return lines


def _flow_depth_over(text: str, limit: int) -> bool:
    """Whether `[`/`{` nest deeper than `limit`. Brackets in quoted text count too: a file read
    wrongly this way is sliced as text, with nothing lost."""
    depth = 0
    for match in _FLOW_BRACKET.finditer(text):
        depth = depth + 1 if match.group() in "[{" else max(depth - 1, 0)
        if depth > limit:
            return True
    return False


def _load_yaml_ruamel(text: str) -> tuple[Any, dict[Path, int]] | None:
    if _flow_depth_over(text, _MAX_FLOW_DEPTH):
        return None
    try:
        from slicers.ruamel_yaml import YAML

        data = YAML(typ="rt", pure=True).load(text)
    except Exception:  # any YAML error (or a multi-document stream): not a spec we can slice
        return None
    lines = _yaml_key_lines(data)
    if _LONE_CR.search(text):  # a line break to ruamel (old Mac endings), not to split_lines
        ours = [0]
        for match in _YAML_BREAK.finditer(text):
            ours.append(ours[-1] + (match.group() != "\r"))
        lines = {path: ours[line] for path, line in lines.items()}
    return data, lines


def _ruamel_only(text: str) -> bool:
    """Text LibYAML would read otherwise than ruamel: `%` directives (`%YAML 1.1` switches ruamel
    to YAML 1.1 rules), tabs and block scalars opening on a line of spaces (ruamel rejects some
    that LibYAML accepts), line breaks other than \\n and \\r\\n (they shift line numbers), and
    anchors and tags (ruamel keeps `!!str 1` as a TaggedScalar, an anchored `true` as a
    ScalarBoolean printed `1`).

    Plain `in`/`find` scans (one regex over the whole text cost a quarter of the parse) and a
    look before each `&`/`!`: an anchor or tag starts a node, so nothing or an indicator precedes
    it on its line; `x && y` in a description keeps the fast path.
    """
    if text.lstrip("\ufeff").startswith("%") or "\n%" in text:
        return True
    if any(ch in text for ch in "\t\x85\u2028\u2029") or ("\r" in text and _LONE_CR.search(text)):
        return True
    if "\ufeff" in text[1:]:  # a byte order mark past the start: the parsers disagree
        return True
    if _SPACES_FIRST_IN_BLOCK.search(text) or _HASH_AFTER_BLOCK.search(text):
        return True
    for ch in "&!":
        at = text.find(ch)
        while at >= 0:
            i = at - 1
            while i >= 0 and text[i] == " ":
                i -= 1
            if i < 0 or text[i] in "\n:-?[{,":
                return True
            at = text.find(ch, at + 1)
    return False


@functools.cache
def _libyaml_loader() -> Any:
    """PyYAML's LibYAML loader made to build what ruamel's round-trip loader builds (None when
    PyYAML was built without LibYAML): ruamel's YAML 1.2 resolver table instead of PyYAML's 1.1
    one (`yes`, `on`, `010` and `1:20` read as 1.2 does), ruamel's ints and timestamps, and
    duplicate keys an error as in ruamel. Merge keys (`<<`) have no constructor here, so they
    raise too and the file goes to ruamel."""
    try:
        from yaml import CSafeLoader, MappingNode
    except ImportError:
        return None
    from slicers.ruamel_yaml import RoundTripConstructor, implicit_resolvers

    ruamel = RoundTripConstructor()

    class Loader(CSafeLoader):  # type: ignore[misc]
        yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012 (PyYAML's class table)

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            if not isinstance(node, MappingNode):
                raise ValueError(f"expected a mapping, found {node.id}")
            mapping: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in mapping:
                    raise ValueError(f"duplicate key {key!r}")
                mapping[key] = self.construct_object(value_node, deep=deep)
            return mapping

    def construct_int(loader: Any, node: Any) -> int:
        # YAML 1.2: 0b/0o/0x prefixes; a leading zero is decimal (YAML 1.1 read it as octal).
        value = loader.construct_scalar(node).replace("_", "")
        return int(value, 0 if value.lstrip("+-")[:2] in ("0b", "0o", "0x") else 10)

    for versions, tag, regexp, first in implicit_resolvers:
        if (1, 2) in versions:
            Loader.add_implicit_resolver(str(tag), regexp, first)
    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    Loader.add_constructor(
        "tag:yaml.org,2002:timestamp", lambda _, node: ruamel.construct_yaml_timestamp(node)
    )
    return Loader


def _load_yaml_libyaml(text: str) -> tuple[Any, dict[Path, int]] | None:
    """The document and its key lines as ruamel would give them, or None to ask ruamel.

    Key lines come from the parse's own nodes (each key's start mark), so block and flow style
    alike get true positions with no second pass over the text.
    """
    loader_class = _libyaml_loader()
    if loader_class is None or _ruamel_only(text):
        return None
    from yaml import MappingNode

    try:
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except Exception:  # LibYAML's error, or a construct above: ruamel decides
        return None
    lines: dict[Path, int] = {}

    def walk(node: Any, value: Any, path: Path) -> None:
        if len(path) >= 3 or not isinstance(node, MappingNode):
            return
        # A mapping's dict keeps its node's key order: no merges, no duplicates.
        for (key_node, value_node), key in zip(node.value, value, strict=True):
            lines[(*path, str(key))] = key_node.start_mark.line
            walk(value_node, value[key], (*path, str(key)))

    walk(node, data, ())
    return data, lines


@dataclass
class _Loaded:
    data: Any
    lines: dict[Path, int]  # each key's 0-based line
    offsets: dict[Path, int] | None = None  # JSON: each key's character offset


def _load(text: str, fast_yaml: bool = True) -> _Loaded | None:
    """The document and its key positions, or None when it does not parse."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: arrays nested past the stack
            return None
        positions = json_key_positions(text)
        lines = {path: line for path, (line, _) in positions.items()}
        return _Loaded(data, lines, {path: offset for path, (_, offset) in positions.items()})
    loaded = _load_yaml_libyaml(text) if fast_yaml else None
    loaded = loaded if loaded is not None else _load_yaml_ruamel(text)
    return None if loaded is None else _Loaded(*loaded)


@dataclass
class _Unit:
    at: int  # its key's line; in a one-line file, its key's character offset
    title: str
    symbol: str | None = None
    meta: tuple[tuple[str, str], ...] = ()
    top: str | None = None  # a plain top-level key: runs of them merge into one slice


class _OverBudget(Exception):
    """More nodes walked than the file could hold without aliases: an alias bomb."""


@dataclass
class _Budget:
    left: int


def _refs(node: Any, budget: _Budget) -> list[str]:
    """Names of the schemas an operation references (`#/components/schemas/Pet` -> Pet).

    YAML aliases share nodes, so a 400-byte file can stand for 9^8 of them: each node is walked
    once (by id), and all operations together draw on one budget sized by the file, raising
    `_OverBudget` when it runs out.
    """
    found: dict[str, None] = {}
    seen: set[int] = set()
    todo = [node]
    while todo:
        item = todo.pop()
        if isinstance(item, (dict, list)):
            if id(item) in seen:
                continue
            seen.add(id(item))
        budget.left -= 1
        if budget.left < 0:
            raise _OverBudget
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                found[ref.rsplit("/", 1)[-1]] = None
            todo.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            todo.extend(reversed(item))
    return list(found)


def _only_a_ref(item: Any) -> bool:
    """A path item that holds no operation, only where it is (`$ref: paths/users.yaml`)."""
    if not isinstance(item, dict) or any(method in item for method in METHODS):
        return False
    return isinstance(item.get("$ref"), str)


def _units(
    data: dict[str, Any], kind: str, lines: dict[Path, int], budget: _Budget, route: str = ""
) -> tuple[list[_Unit], set[int]]:
    """The units and the lines of the containers above them (`paths:`, `/pets:`). `route`: a
    path item's route, from the spec that refers to it."""
    units: list[_Unit] = []
    headers: set[int] = set()

    def add(path: Path, unit: _Unit) -> None:
        if path in lines:
            unit.at = lines[path]
            units.append(unit)

    def schemas(path: Path, members: Any) -> None:
        headers.update(lines[path[:i]] for i in range(1, len(path) + 1) if path[:i] in lines)
        for name in members if isinstance(members, dict) else ():
            add((*path, str(name)), _Unit(0, f"schema {name}", str(name)))

    def operations(prefix: Path, route: str, item: Any) -> None:
        if prefix and _only_a_ref(item):
            # A split spec's path item lives in its file (`/users: {$ref: paths/users.yaml}`),
            # sliced there per operation; here it is the route's entry, titled by the route, not
            # a tail of the slice before (a root of such items was one `info:` slice).
            add(prefix, _Unit(0, route, route))
            return
        for method in METHODS if isinstance(item, dict) else ():
            if method in item:
                op = item[method]
                title = f"{method.upper()} {route}"
                op_id = op.get("operationId") if isinstance(op, dict) else None
                # Symbols are text: `operationId: 1` or `true` names nothing.
                symbol = op_id if isinstance(op_id, str) and op_id else title
                refs = _refs(op, budget)[:_MAX_REFS]
                meta = (("schemas", ", ".join(refs)),) if refs else ()
                add((*prefix, method), _Unit(0, title, symbol, meta))

    if kind == "pathitem":
        operations((), route, data)
    for key, value in data.items():
        key = str(key)
        if kind == "pathitem" and key in METHODS:
            continue
        if key == "paths" and kind in _WITH_PATHS and isinstance(value, dict):
            headers.add(lines.get(("paths",), -1))
            for name, item in value.items():
                headers.add(lines.get(("paths", str(name)), -1))
                operations(("paths", str(name)), str(name), item)
        elif key in ("channels", "operations") and kind == "asyncapi" and isinstance(value, dict):
            # AsyncAPI: one per channel (2.x holds its publish/subscribe operations) and, in
            # 3.x, one per operation.
            headers.add(lines.get((key,), -1))
            for name, member in value.items():
                refs = _refs(member, budget)[:_MAX_REFS]
                meta = (("schemas", ", ".join(refs)),) if refs else ()
                title = f"{key.removesuffix('s')} {name}"
                add((key, str(name)), _Unit(0, title, str(name), meta))
        elif key == "components" and kind in ("openapi", "asyncapi") and isinstance(value, dict):
            headers.add(lines.get(("components",), -1))
            for section, members in value.items():
                if section == "schemas":
                    schemas(("components", "schemas"), members)
                else:
                    add(("components", str(section)), _Unit(0, f"components.{section}"))
        elif key in ("definitions", "$defs") and isinstance(value, dict):
            schemas((key,), value)
        else:
            add((key,), _Unit(0, key, top=key))
    headers.discard(-1)
    return units, headers


def _top_title(keys: list[str], data: dict[str, Any], kind: str, path: str) -> tuple[str, str]:
    """Title and symbol of a run of plain top-level keys."""
    info = data.get("info") if isinstance(data.get("info"), dict) else None
    if "info" in keys and info is not None:
        name = " ".join(str(info[k]) for k in ("title", "version") if info.get(k) is not None)
        return f"info: {name}" if name else "info", "info"
    if kind == "jsonschema":
        name = data.get("title") or data.get("$id") or data.get("id") or path
        return f"schema {name} (root)", str(name)
    if kind in ("pathitem", "fragment"):
        return path, path  # the route or title the referring spec gives this file
    shown = ", ".join(keys[:4]) + (", ..." if len(keys) > 4 else "")
    return shown, keys[0]


def _fallback(text: str, path: str, options: SliceOptions, why: str) -> Sliced:
    if text.lstrip()[:1] in ("{", "["):
        result = slice_windows(text, path, options)
    else:
        result = slice_yaml(text, path, options)
    return Sliced(result.slices, notes=(f"openapi: {why}",) if why else ())


def slice_openapi(text: str, path: str, options: SliceOptions, *, fast_yaml: bool = True) -> Sliced:
    """`fast_yaml=False` reads YAML with ruamel.yaml only (the reference the fast path equals)."""
    loaded = _load(text, fast_yaml)
    if loaded is None:
        return _fallback(text, path, options, "did not parse; sliced as text")
    data = loaded.data
    kind = spec_kind(data)
    if kind is None and options.title and isinstance(data, dict):
        # A piece of a multi-file spec, titled by the spec that refers to it (slicers.refs).
        kind = "pathitem" if any(isinstance(data.get(m), dict) for m in METHODS) else "fragment"
    if kind is None:
        return _fallback(text, path, options, "")  # no spec after all: a plain JSON/YAML file
    lines = split_lines(text)
    # Minified JSON is one line: its units start at their keys' characters, and every slice is
    # a piece of that line (line 1), so none is lost to the rule that a slice starts a line.
    one_line = loaded.offsets is not None and len(lines) == 1
    positions = loaded.offsets if one_line and loaded.offsets is not None else loaded.lines
    try:
        # Without aliases every node is at least one character of the file, walked once.
        budget = _Budget(2 * len(text) + 1000)
        units, headers = _units(data, kind, positions, budget, options.title or "")
    except _OverBudget:
        return _fallback(text, path, options, "aliases expand past the file's size; sliced as text")
    merged = _merge(units)
    starts = _starts(merged, headers, [] if one_line else lines)
    limit = len(lines[0]) if one_line else len(lines)

    spans: list[LineSpan] = []
    for i, (unit, keys) in enumerate(merged):
        end = starts[i + 1] if i + 1 < len(merged) else limit
        title, symbol = (unit.title, unit.symbol)
        if keys:
            title, symbol = _top_title(keys, data, kind, options.title or path)
        if one_line:
            cuts = cut_line(lines[0][starts[i] : end], options.max_chars)
            windows = [Window(0, 1, (starts[i] + a, starts[i] + b)) for a, b in cuts]
        else:
            windows = pack_windows(lines, starts[i], end, options.max_chars)
        spans.extend(window_spans(windows, title, symbol=symbol, meta=unit.meta))
    if not spans:
        return _fallback(text, path, options, "")
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    doc_title = info.get("title") or data.get("title")
    return Sliced(spans_to_slices(lines, spans), doc_title=str(doc_title) if doc_title else None)


def _merge(units: list[_Unit]) -> list[tuple[_Unit, list[str]]]:
    """Units in file order, each with the plain top-level keys merged into it.

    Runs of plain top-level keys merge; a unit on the line of the one before (JSON with several
    keys on a line) joins it, since a slice cannot start inside a line.
    """
    merged: list[tuple[_Unit, list[str]]] = []
    for unit in sorted(units, key=lambda u: u.at):
        last = merged[-1] if merged else None
        if last is not None and (unit.at == last[0].at or (unit.top and last[0].top)):
            if unit.top:
                last[1].append(unit.top)
            continue
        merged.append((unit, [unit.top] if unit.top else []))
    return merged


def _starts(
    merged: list[tuple[_Unit, list[str]]], headers: set[int], lines: list[str]
) -> list[int]:
    """Where each unit's slice starts: the first container key above it (`paths:`, `/pets:`)
    past the unit before, and the YAML comments directly above that; the first at 0."""
    starts: list[int] = []
    for i, (unit, _) in enumerate(merged):
        floor = merged[i - 1][0].at if i else -1
        start = min([h for h in headers if floor < h < unit.at] + [unit.at])
        while lines and start - 1 > floor and lines[start - 1].lstrip().startswith("#"):
            start -= 1
        starts.append(0 if i == 0 else start)
    return starts
