"""Multi-file API specs: the files a spec's local `$ref`s name, and what each one is to it.

A spec split into files (`paths: {/users: {$ref: paths/users.yaml}}`) leaves those files without
a word of their role: `paths/users.yaml` holds `get:` and `post:` but no route. These pure
functions read the role from the referring side: `/users` for a path item (its operations become
`GET /users`), `GET /users` for an operation, `schema User` for a schema, "" for any other file
a `$ref` names. Only relative references to files are followed: never a URL, an absolute path,
or a path that leaves the root.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any
from urllib.parse import unquote

from slicers.openapi import METHODS

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# Nodes walked per file before giving up on the rest (YAML aliases can make a small file huge).
_MAX_NODES = 200_000
_SCHEMA_SECTIONS = (("components", "schemas"), ("definitions",), ("$defs",))
# Keys whose value is a schema (or a list of them), and those whose values each are one.
_SCHEMA_KEYS = frozenset(
    ("schema", "items", "additionalProperties", "not", "allOf", "oneOf", "anyOf")
)
_PROPERTY_MAPS = frozenset(("properties", "patternProperties"))
# Top-level keys of the pieces a split spec is made of: path items, operations, schemas, and
# AsyncAPI's channels (2.x publish/subscribe, 3.x address/messages), operations (`action`) and
# messages (`payload`). Not `type` or `parameters` alone: package.json and many configs have
# those (`type` counts with a schema's value, below). A key that also names a config's only
# costs a look: the directories above it, and once per run a walk of the root for specs.
_FRAGMENT_KEYS = (
    "get|put|post|delete|options|head|patch|trace|responses|requestBody|operationId"
    "|properties|allOf|oneOf|anyOf|items|enum|\\$ref"
    "|publish|subscribe|address|messages|action|payload"
    # Responses, request bodies, headers and parameters in their own files (components/...).
    "|content|schema|headers"
)
_FRAGMENT = re.compile(
    rf"^(?:(?:{_FRAGMENT_KEYS})|[ \t]{{0,4}}\"(?:{_FRAGMENT_KEYS})\"|\{{\"(?:{_FRAGMENT_KEYS})\")"
    r"[ \t]*:",
    re.M,
)

# A schema of one scalar (`type: string` + `format: uuid`) or a parameter (`in: path`) has no key
# above: its key's value names it. `type: module` (package.json) or `type: Opaque` do not.
_VALUED = (
    r"type[\"']?[ \t]*:[ \t]*(?:\[[ \t]*)?[\"']?(?:string|integer|number|boolean|object|array|null)"
    r"|in[\"']?[ \t]*:[ \t]*[\"']?(?:path|query|header|cookie|body|formData)"
)
_VALUED_KEY = re.compile(
    rf"^(?:[\"']?|[ \t]{{0,4}}\"|\{{\")(?:{_VALUED})[\"']?[ \t]*(?:[,#}}\]]|$)", re.M
)

# Any key of a piece, for minified JSON (see looks_like_fragment).
_FRAGMENT_KEY = re.compile(rf"\"(?:{_FRAGMENT_KEYS})\"[ \t]*:|\"(?:{_VALUED})\"")


def looks_like_fragment(text: str) -> bool:
    """A cheap look: a top-level key of a path item, an operation or a schema. Minified JSON
    keeps its keys on one line in any order (`{"parameters":[...],"get":...}`, a schema that
    opens with `title`), so there such a key anywhere will do."""
    if _FRAGMENT.search(text) is not None or _VALUED_KEY.search(text) is not None:
        return True
    body = text.strip()
    return body[:1] == "{" and "\n" not in body and _FRAGMENT_KEY.search(body) is not None


def resolve_ref(referrer: str, ref: str) -> str | None:
    """The file `ref` names, relative to the file `referrer` (both POSIX paths below the root):
    a normalised path below the root, or None for a URL, an absolute path, a pointer into the
    referrer itself (`#/components/...`), or a path that leaves the root."""
    file_part = ref.split("#", 1)[0].strip()
    if not file_part or _SCHEME.match(file_part) or file_part.startswith(("/", "\\")):
        return None
    decoded = unquote(file_part)
    if "\x00" in decoded or decoded.startswith("/"):
        return None
    target = posixpath.normpath(posixpath.join(posixpath.dirname(referrer), decoded))
    if target in (".", "..") or target.startswith(("../", "/")):
        return None
    return target


def local_refs(data: Any, referrer: str) -> dict[str, str]:
    """The files `data` (a spec, or a piece of one, read from `referrer`) refers to, each with
    its title there: a route, `GET /route`, `schema Name`, `channel name`, `operation name`, or ""
    for a file with no role."""
    found: dict[str, str] = {}

    def note(node: Any, title: str) -> None:
        ref = node.get("$ref") if isinstance(node, dict) else None
        target = resolve_ref(referrer, ref) if isinstance(ref, str) else None
        if target is not None and not found.get(target):
            found[target] = title

    if isinstance(data, dict):
        paths = data.get("paths")
        for route, item in paths.items() if isinstance(paths, dict) else ():
            note(item, str(route))
            for method in METHODS if isinstance(item, dict) else ():
                note(item.get(method), f"{method.upper()} {route}")
        for section in _SCHEMA_SECTIONS:
            members = _at(data, section)
            for name, member in members.items() if isinstance(members, dict) else ():
                note(member, f"schema {name}")
        if "asyncapi" in data:  # titled as slice_openapi titles them in a one-file spec
            for section, role in (("channels", "channel"), ("operations", "operation")):
                members = data.get(section)
                for name, member in members.items() if isinstance(members, dict) else ():
                    note(member, f"{role} {name}")
    for node, is_schema in _mappings(data):
        ref = node.get("$ref")
        whole_file = isinstance(ref, str) and "#" not in ref.strip().rstrip("#")
        target = resolve_ref(referrer, ref) if whole_file and is_schema else None
        # A whole file in a schema's place (`schema: {$ref: error.json}`) is a schema: named by
        # its file, as `components.schemas` would name it.
        stem = posixpath.splitext(posixpath.basename(target))[0] if target else ""
        note(node, f"schema {stem}" if stem else "")
    return found


def _at(data: dict[str, Any], keys: tuple[str, ...]) -> Any:
    node: Any = data
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _mappings(data: Any) -> list[tuple[dict[str, Any], bool]]:
    """Every mapping in `data`, each once (aliases share nodes), up to `_MAX_NODES` nodes, with
    whether it stands where a schema does (under `schema`, `items`, `allOf`, a property...)."""
    out: list[tuple[dict[str, Any], bool]] = []
    seen: set[int] = set()
    # Each node with whether it is a schema, and whether its values are (`properties`).
    todo: list[tuple[Any, bool, bool]] = [(data, False, False)]
    while todo and len(seen) < _MAX_NODES:
        node, is_schema, holds_schemas = todo.pop()
        if not isinstance(node, (dict, list)) or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            out.append((node, is_schema))
            for key, value in node.items():
                in_place = holds_schemas or key in _SCHEMA_KEYS
                todo.append((value, in_place, not holds_schemas and key in _PROPERTY_MAPS))
        else:
            todo.extend((item, is_schema, False) for item in node)
    return out
