"""Tool arguments are validated strictly: a value of the wrong JSON type is refused with a
sentence naming the argument, never coerced (pydantic's lax mode took `true` for top_k=1 and
"5" for 5). Every argument of every tool, in process, and the common slips over stdio with the
official SDK's client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flatten.cli.mcp import ALL_TOOLS, build_server
from index.agent import Knowledge
from tests.conftest import FIXTURES, run_cli
from tests.test_mcp import params, session

# A value of each JSON type, as a client may send it by mistake for an argument of another type.
WRONG = {
    "integer": [True, False, "5", "1", 5.0, [5], None],
    "boolean": [1, 0, "true", "false", [True], None],
    "string": [5, True, ["docs/"], {"a": 1}, 2.5],
    "array": ["docs/", 5, True, [1], [None], {"a": 1}],
}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    where = str(tmp_path_factory.mktemp("strict") / "store")
    assert run_cli("index", FIXTURES / "docs-tree", "--store", where, "-q").code == 0
    return where


@pytest.fixture(scope="module")
def server(store):
    knowledge = Knowledge(store)
    yield build_server(knowledge, list(ALL_TOOLS))
    knowledge.close()


def _schemas(server: Any) -> dict[str, dict[str, Any]]:
    return {t.name: t.input_schema for t in asyncio.run(server.list_tools())}


def _types(prop: dict[str, Any]) -> set[str]:
    return {p.get("type") for p in prop.get("anyOf", [prop])}


def _required(schema: dict[str, Any]) -> dict[str, Any]:
    """A valid value for each required argument, so only the argument under test is wrong."""
    return {name: "docker" if name == "query" else "docs/guide/install.md"
            for name in schema.get("required", [])}  # fmt: skip


def _wrong_values(schema: dict[str, Any]) -> list[tuple[str, Any]]:
    cases = []
    for name, prop in schema["properties"].items():
        types, required = _types(prop), name in schema.get("required", [])
        for kind, values in WRONG.items():
            if kind in types:
                cases.extend((name, v) for v in values if not _fits(v, types, required))
    return cases


def _fits(value: Any, types: set[str], required: bool) -> bool:
    """Whether `value` is of a JSON type the argument takes (null: an optional one's default)."""
    if value is None:
        return "null" in types or not required
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
             dict: "object"}  # fmt: skip
    if type(value) is list and "array" in types:
        return all(type(item) is str for item in value)
    return kinds[type(value)] in types


def test_every_argument_of_every_tool_has_wrong_typed_values_to_try(server):
    schemas = _schemas(server)
    assert sorted(schemas) == sorted(ALL_TOOLS)
    tried = {(tool, name) for tool, schema in schemas.items() for name, _ in _wrong_values(schema)}
    every = {(tool, name) for tool, schema in schemas.items() for name in schema["properties"]}
    assert tried == every


def test_a_value_of_the_wrong_json_type_is_refused_naming_the_argument(server):
    schemas = _schemas(server)
    for tool, schema in schemas.items():
        for name, value in _wrong_values(schema):
            arguments = {**_required(schema), name: value}
            result = asyncio.run(server.call_tool(tool, arguments))
            answer = json.loads(result.content[0].text)
            assert result.is_error, (tool, name, value, answer)
            assert answer["status"] == "bad_argument", (tool, name, value)
            assert answer["message"].startswith(f"{name} must be "), (tool, name, answer)
            assert answer["message"].endswith(f"not {json.dumps(value)}."), (tool, name, answer)


@settings(max_examples=60, deadline=None)
@given(number=st.integers(min_value=1, max_value=20))
def test_a_whole_number_in_range_is_taken_and_its_string_is_refused(server, number):
    ok = asyncio.run(server.call_tool("knowledge_search", {"query": "docker", "top_k": number}))
    assert not ok.is_error
    refused = asyncio.run(
        server.call_tool("knowledge_search", {"query": "docker", "top_k": str(number)})
    )
    answer = json.loads(refused.content[0].text)
    assert refused.is_error and answer["message"] == (
        f'top_k must be a whole number from 1 to 20, not "{number}".'
    )


# Over stdio with the official SDK's client: the slips a model makes, each with its sentence.
SLIPS = [
    ("knowledge_search", {"query": "docker", "top_k": True},
     "top_k must be a whole number from 1 to 20, not true."),
    ("knowledge_search", {"query": "docker", "top_k": "5"},
     'top_k must be a whole number from 1 to 20, not "5".'),
    ("knowledge_search", {"query": "docker", "per_doc": False},
     "per_doc must be a whole number from 0 to 20, not false."),
    ("knowledge_search", {"query": "docker", "path": ["docs/", 3]},
     'path must be a list of strings or null, not ["docs/", 3].'),
    ("knowledge_enumerate", {"query": "docker", "paths_only": 1},
     "paths_only must be true or false, not 1."),
    ("knowledge_enumerate", {"query": "docker", "paths_only": "true"},
     'paths_only must be true or false, not "true".'),
    ("knowledge_get", {"source": "docs/guide/install.md", "offset": True},
     "offset must be a whole number, 0 or more, not true."),
    ("knowledge_toc", {"prefix": 7}, "prefix must be a string, not 7."),
]  # fmt: skip


def test_slips_of_type_over_stdio_are_refused_with_the_argument_named(store):
    answers = session(params("--store", store, "--tools", "all"),
                      *[(tool, arguments) for tool, arguments, _ in SLIPS],
                      ("knowledge_search", {"query": "docker", "top_k": 2}))  # fmt: skip
    for (tool, arguments, sentence), answer, error in zip(
        SLIPS, answers["answers"], answers["errors"], strict=False
    ):
        assert (error, answer) == (True, {"status": "bad_argument", "message": sentence}), (
            tool, arguments)  # fmt: skip
    assert answers["errors"][-1] is False and answers["answers"][-1]["status"] == "ok"
