"""What an MCP client is told when a tool's arguments do not fit the tool's input schema.

The schema the client was shown is the one source of the allowed values: a rejected argument is
answered with one sentence per argument, built from that schema (type and range), never with the
validator's own report (pydantic's, with its error codes and links). Pure functions over plain
data: the schema as JSON, the validator's errors as dicts (`ValidationError.errors()`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

SHOWN_CHARS = 40  # a rejected value or name is echoed cut to this: enough to recognise it
SHOWN_NAMES = 5  # unknown argument names listed at most


def unknown_tool(tool: str, served: Sequence[str], known: Sequence[str]) -> str:
    """A sentence naming the tools this server has, and the `--tools` that serves one it was
    not started with (an agent's config may list every tool; the SDK's reply is bare text)."""
    has = f"this server has {', '.join(served)}"
    if tool in known:
        return f"{_cut(tool)} is not served here ({has}); start it with --tools {tool} or all."
    return f"There is no tool {_cut(tool)}; {has}."


def unknown_arguments(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
    """A sentence naming the arguments the tool does not take, or "" when there are none (a
    misspelt optional argument would otherwise be dropped and its default used in silence)."""
    known = schema.get("properties", {})
    unknown = [name for name in arguments if name not in known]
    if not unknown:
        return ""
    names = ", ".join(_cut(name) for name in unknown[:SHOWN_NAMES])
    more = f" and {len(unknown) - SHOWN_NAMES} more" if len(unknown) > SHOWN_NAMES else ""
    takes = ", ".join(known) or "none"
    plural = "s" if len(unknown) > 1 else ""
    return f"{tool} has no argument{plural} {names}{more}; it takes {takes}."


def without_nulls(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with every optional one given as null left out, so that it takes its
    default: clients that must send every argument (strict function calling) send null for
    those they do not mean to set."""
    required = set(schema.get("required", ()))
    return {k: v for k, v in arguments.items() if v is not None or k in required}


def explain(
    tool: str,
    schema: Mapping[str, Any],
    errors: Sequence[Mapping[str, Any]],
    arguments: Mapping[str, Any] | None = None,
) -> str:
    """One sentence for each argument the validator rejected, saying what it accepts and
    echoing the value as sent (`arguments`; the validator's input is only the faulty item of
    a list)."""
    sent = arguments or {}
    properties = schema.get("properties", {})
    sentences: dict[str, str] = {}
    for error in errors:
        name = str(error["loc"][0]) if error.get("loc") else ""
        if name in sentences:
            continue
        if name not in properties:  # not an argument's fault: say what the validator said
            sentences[name] = f"{tool}: {error.get('msg', 'invalid arguments')}."
        elif error.get("type") == "missing":
            sentences[name] = f"{tool} needs {name}: {_described(properties[name])}."
        else:
            wanted = accepted(properties[name])
            value = sent[name] if name in sent else error.get("input")
            sentences[name] = f"{name} must be {wanted}, not {_shown(value)}."
    return " ".join(sentences.values())


def accepted(prop: Mapping[str, Any]) -> str:
    """What an argument's schema accepts, in words: "a whole number from 1 to 20"."""
    return " or ".join(_kind(p) for p in prop.get("anyOf", [prop]))


def _kind(prop: Mapping[str, Any]) -> str:
    kind = prop.get("type")
    if kind == "integer":
        low, high = prop.get("minimum"), prop.get("maximum")
        if low is not None and high is not None:
            return f"a whole number from {low} to {high}"
        if low is not None:
            return f"a whole number, {low} or more"
        return "a whole number"
    if kind == "array":
        items = prop.get("items", {})
        return f"a list of {_kind(items)[2:]}s" if items.get("type") == "string" else "a list"
    words = {"string": "a string", "boolean": "true or false", "null": "null"}
    return words.get(str(kind), f"a JSON {kind}")


def _described(prop: Mapping[str, Any]) -> str:
    description = str(prop.get("description", "")).rstrip(".")
    return description[:1].lower() + description[1:] if description else accepted(prop)


def _shown(value: Any) -> str:
    """The rejected value as JSON (so "5" and 5 differ), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return _cut(text)


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"
