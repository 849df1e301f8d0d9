"""Dataclasses as JSON: one serializer, camelCase keys, for every answer the project prints.

`to_json(obj)` turns a dataclass (and the lists, tuples, dicts and enums inside it) into plain
JSON values; field names become camelCase (`start_line` -> `startLine`). A field says how it is
written with `field(metadata=json_field(...))`:

    skip       never written (internal: row ids, cache keys)
    omit_none  left out when None (optional parts of a form, e.g. the hybrid tier's scores)
    digits     a float rounded to this many digits (scores: stable, short output)
    inline     a dict whose pairs join the parent object (a slice's format-specific fields)

A leaf: it imports nothing of the project, so the library, the record codec and the CLI share it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any, NamedTuple


class _Plan(NamedTuple):
    name: str  # the attribute
    key: str  # its JSON key
    skip: bool
    omit_none: bool
    digits: int | None
    inline: bool


_PLANS: dict[type, list[_Plan]] = {}


def json_field(
    *, skip: bool = False, omit_none: bool = False, digits: int | None = None, inline: bool = False
) -> Mapping[str, Any]:
    """Field metadata saying how `to_json` writes the field."""
    return {"json": {"skip": skip, "omit_none": omit_none, "digits": digits, "inline": inline}}


def camel(name: str) -> str:
    """`start_line` -> `startLine`; a name without underscores is kept."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _plan(cls: type) -> list[_Plan]:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = []
        for f in dataclasses.fields(cls):
            options = f.metadata.get("json", {})
            plan.append(_Plan(f.name, camel(f.name), options.get("skip", False),
                              options.get("omit_none", False), options.get("digits"),
                              options.get("inline", False)))  # fmt: skip
        _PLANS[cls] = plan
    return plan


def to_json(value: Any) -> Any:
    """`value` as JSON-ready data: dicts, lists, strings, numbers, booleans and None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for p in _plan(type(value)):
            if p.skip:
                continue
            item = getattr(value, p.name)
            if item is None and p.omit_none:
                continue
            if p.digits is not None and isinstance(item, float):
                item = round(item, p.digits)
            if p.inline and isinstance(item, Mapping):
                out.update((str(k), to_json(v)) for k, v in item.items())
            else:
                out[p.key] = to_json(item)
        return out
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    return value
