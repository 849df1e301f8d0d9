"""YAML: one slice per document of a stream, titled by what the document is.

Documents split on `---` / `...` lines at column 0, as the YAML spec defines them (no grammar
needed, so a 40,000-line manifest is no problem; tree-sitter's YAML grammar fails past 32,768
lines). Titles come from a small indentation-aware reader of the document's own top-level keys,
never from the first `name:` anywhere:

- Kubernetes/Argo manifests: `Kind/name` from `metadata.name` (`generateName` when there is no
  name), with `apiVersion` and `namespace` as record fields; `List` kinds slice per item;
- Kustomization, GitHub Actions workflows, docker-compose files, and plain config (its top-level
  keys) get titles of their own.

Helm templates are read the same way: `{{ ... }}` actions are masked before the keys are read,
and come back verbatim in titles. Oversized documents split at top-level keys, then lines.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from slicers.base import LineSpan, Sliced, SliceOptions, is_blank, spans_to_slices, split_lines
from slicers.windows import pack_windows, window_spans

_DOC_MARKER = re.compile(r"^(?:---|\.\.\.)(?:\s|$)")
_HELM_ACTION = re.compile(r"\{\{-?.*?-?\}\}")
_FLOW_MAPPING = re.compile(r"^\{([^{}\[\]]*)\}\s*(?:#.*)?$")
_KEY = re.compile(r"""^(\s*)(?:-\s+)?("[^"]*"|'[^']*'|[^\s#'"][^:#]*?)\s*:(?:\s+(.*?))?\s*$""")


# Top-level keys whose first-level children matter for titles.
_NESTED = ("metadata", "on", "services", "jobs")


@dataclass(frozen=True)
class _Doc:
    start: int
    end: int  # exclusive


def _only_comments(lines: list[str], start: int, end: int) -> bool:
    return all(is_blank(line) or line.lstrip().startswith("#") for line in lines[start:end])


def _documents(lines: list[str]) -> list[_Doc]:
    """`---` opens a document (its line belongs to it), `...` closes one (likewise); comments
    before a `---` belong to the document they introduce."""
    docs: list[_Doc] = []
    start = 0
    for i, line in enumerate(lines):
        if line.startswith("..."):
            if _DOC_MARKER.match(line):
                docs.append(_Doc(start, i + 1))
                start = i + 1
        elif _DOC_MARKER.match(line) and not _only_comments(lines, start, i):
            docs.append(_Doc(start, i))
            start = i
    if start < len(lines) or not docs:
        docs.append(_Doc(start, len(lines)))
    return docs


def _scalar(value: str | None) -> str | None:
    if value is None:
        return None
    value = re.sub(r"\s+#.*$", "", value).strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    if not value or value in ("|", ">", "|-", ">-", "{}", "[]") or value.startswith(("&", "*")):
        return None
    return value


def _flow_pairs(value: str) -> list[tuple[str, str]]:
    """The `key: value` pairs of a one-line flow mapping with no nested collection
    (`{name: p1, namespace: x}`); none for anything else."""
    match = _FLOW_MAPPING.match(value)
    if match is None:
        return []
    pairs = []
    for part in match.group(1).split(","):
        key, sep, item = part.partition(":")
        if sep and key.strip():
            pairs.append((key.strip().strip("\"'"), item))
    return pairs


def _mask(line: str, actions: dict[str, str]) -> str:
    """Helm actions become placeholders; a line holding only actions becomes a comment."""
    if "{{" not in line:
        return line
    if not _HELM_ACTION.sub("", line).strip():
        return "#" + line

    def keep(match: re.Match[str]) -> str:
        token = f"HELM{len(actions)}X"
        actions[token] = match.group(0)
        return token

    return _HELM_ACTION.sub(keep, line)


def _unmask(value: str | None, actions: dict[str, str]) -> str | None:
    if value is None:
        return None
    for token, action in actions.items():
        value = value.replace(token, action)
    return value


def _top_level(lines: list[str], start: int, end: int) -> tuple[dict[str, str | None], list[str]]:
    """Top-level `key: value` pairs, `metadata.*` as dotted keys, and the top-level key order."""
    actions: dict[str, str] = {}
    keys: dict[str, str | None] = {}
    order: list[str] = []
    parent: str | None = None
    child_indent: int | None = None
    for i in range(start, end):
        line = _mask(lines[i], actions)
        if is_blank(line) or line.lstrip().startswith("#") or _DOC_MARKER.match(line):
            continue
        match = _KEY.match(line)
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            parent, child_indent = None, None
            if match and not line.startswith("-"):
                key = match.group(2).strip("\"'")
                keys.setdefault(key, _unmask(_scalar(match.group(3)), actions))
                order.append(key)
                if match.group(3) is None or not match.group(3).strip():
                    parent = key
                elif key in _NESTED:  # `metadata: {name: p1}`: the same children, flow style
                    for child, value in _flow_pairs(match.group(3)):
                        keys.setdefault(f"{key}.{child}", _unmask(_scalar(value), actions))
            continue
        if parent in _NESTED and match and not line.lstrip().startswith("-"):
            if child_indent is None:
                child_indent = indent
            if indent == child_indent:
                key = f"{parent}.{match.group(2).strip()}"
                keys.setdefault(key, _unmask(_scalar(match.group(3)), actions))
    return keys, order


def _title(keys: dict[str, str | None], order: list[str], path: str) -> tuple[str, str | None]:
    """(title, symbol) for one document."""
    kind = keys.get("kind")
    name = keys.get("metadata.name") or keys.get("metadata.generateName")
    if kind and name:
        return f"{kind}/{name}", f"{kind}/{name}"
    file = PurePosixPath(path)
    if kind:
        where = str(file.parent)
        return (f"{kind} ({where})" if where != "." else kind), kind
    if ".github/workflows" in path or ("jobs" in keys and "on" in keys):
        workflow = keys.get("name") or file.name
        return f"workflow: {workflow}", workflow
    if "services" in order and file.name.startswith(("docker-compose", "compose")):
        services = [k.split(".", 1)[1] for k in keys if k.startswith("services.")]
        return f"compose: {', '.join(services) or file.name}", None
    shown = [k for k in order if k][:4]
    if not shown:
        return path, None
    more = ", ..." if len(order) > 4 else ""
    return f"{file.name}: {', '.join(shown)}{more}", None


def _list_items(lines: list[str], start: int, end: int) -> list[int] | None:
    """For `kind: List`, the first line of each entry under `items:`; None if not a list."""
    in_items = False
    item_indent: int | None = None
    starts: list[int] = []
    for i in range(start, end):
        line = lines[i]
        if line.startswith("items:"):
            in_items = True
            continue
        if not in_items or is_blank(line):
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0 and not line.startswith("-"):
            break
        if line.lstrip().startswith("- ") and (item_indent is None or indent == item_indent):
            item_indent = indent
            starts.append(i)
    return starts or None


def _item_keys(lines: list[str], start: int, end: int) -> tuple[dict[str, str | None], list[str]]:
    """Read a list item as a document of its own: drop its dash and common indent."""
    first = lines[start]
    indent = len(first) - len(first.lstrip())
    width = indent + 2
    body = [first[width:]] + [
        line[width:] if line[:width].isspace() else line.lstrip() for line in lines[start + 1 : end]
    ]
    return _top_level(body, 0, len(body))


def _meta(keys: dict[str, str | None]) -> tuple[tuple[str, str], ...]:
    pairs = (("apiVersion", keys.get("apiVersion")), ("namespace", keys.get("metadata.namespace")))
    return tuple((k, v) for k, v in pairs if v)


def _key_blocks(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """Protected ranges: each top-level key with its nested block, so splits fall between keys."""
    cuts = [i for i in range(start, end) if lines[i][:1] not in ("", " ", "\t", "#", "-")]
    cuts = [start, *[c for c in cuts if c > start], end]
    return list(itertools.pairwise(cuts))


def slice_yaml(text: str, path: str, options: SliceOptions) -> Sliced:
    lines = split_lines(text)
    spans: list[LineSpan] = []
    for doc in _documents(lines):
        keys, order = _top_level(lines, doc.start, doc.end)
        items = _list_items(lines, doc.start, doc.end) if keys.get("kind") == "List" else None
        units: list[tuple[int, int, dict[str, str | None], list[str]]] = []
        if items:
            bounds = [doc.start, *items[1:], doc.end]
            for a, b in itertools.pairwise(bounds):
                first_item = items[0] if a == doc.start else a
                units.append((a, b, *_item_keys(lines, first_item, b)))
        else:
            units.append((doc.start, doc.end, keys, order))
        for start, end, unit_keys, unit_order in units:
            title, symbol = _title(unit_keys, unit_order, path)
            protected = [] if items else _key_blocks(lines, start, end)
            windows = pack_windows(lines, start, end, options.max_chars, protected)
            spans.extend(window_spans(windows, title, symbol=symbol, meta=_meta(unit_keys)))
    return Sliced(slices=spans_to_slices(lines, spans))
