"""Notebooks, API specs, JSON Schema and the named-block formats, over real files.

The fixtures under fixtures/formats/ come from published packages (see its README); the
property tests generate notebooks and specs to check the invariants on shapes the fixtures lack.
"""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from flatten.classify import classify_text
from slicers import SliceOptions, slice_text
from slicers.notebook import strip_outputs
from slicers.openapi import json_key_lines
from tests.conftest import FIXTURES, run_cli
from tests.slicer_invariants import assert_covers, assert_covers_cells

FORMATS = FIXTURES / "formats"
NOTEBOOKS = FORMATS / "notebooks"
SPECS = [
    FORMATS / "openapi" / "petstore-v3.0.yaml",
    FORMATS / "openapi" / "petstore-v2.0.json",
    FORMATS / "jsonschema" / "swagger-2.0-schema.json",
]
BLOCKS = {
    FORMATS / "proto" / "operations.proto": "proto",
    FORMATS / "graphql" / "schema_kitchen_sink.graphql": "graphql",
    FORMATS / "localstack" / "Makefile": "make",
    FORMATS / "localstack" / "Dockerfile": "dockerfile",
    FORMATS / "flaskr" / "schema.sql": "sql",
}


def cell_sources(text: str) -> list[str]:
    cells = json.loads(text)["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]


def notebook(path):
    text = path.read_text(encoding="utf-8")
    result = slice_text("notebook", text, str(path))
    assert_covers_cells(cell_sources(text), result)
    return result


def spec(path, fmt="openapi", lang=None):
    text = path.read_text(encoding="utf-8")
    result = slice_text(fmt, text, str(path), lang=lang)
    assert_covers(text, result)
    return result


def spec_text(text, path, max_chars=4000):
    result = slice_text("openapi", text, path, SliceOptions(max_chars=max_chars))
    assert_covers(text, result, max_chars)
    return result


def titles(result):
    return [s.title for s in result.slices]


# --- notebooks ---------------------------------------------------------------------------------


def test_notebook_sections_follow_headings_with_cell_ranges_and_the_kernel_language():
    result = notebook(NOTEBOOKS / "quickstart.ipynb")
    assert result.doc_title == "Quickstart"
    assert [(s.title, s.start_line, s.end_line) for s in result.slices] == [
        ("Quickstart", 1, 2),
        ("How to sample a multi-dimensional Gaussian (part 1/2)", 3, 19),
        ("How to sample a multi-dimensional Gaussian (part 2/2)", 20, 25),
    ]
    second = result.slices[1]
    assert second.section == ("Quickstart", "How to sample a multi-dimensional Gaussian")
    assert second.anchor == "how-to-sample-a-multi-dimensional-gaussian"
    assert "```python\nimport numpy as np\n```" in second.content


def test_notebook_outputs_keep_short_text_and_drop_images_with_a_count():
    result = notebook(NOTEBOOKS / "quickstart.ipynb")
    text = "\n".join(s.content for s in result.slices)
    assert "Output:\nMean acceptance fraction: 0.552" in text
    assert "[1 rich output(s) dropped: images, HTML or widgets]" in text
    assert "iVBORw0KGgo" not in text  # no base64 PNG


def test_notebook_heavy_with_images_is_kept_small():
    result = notebook(NOTEBOOKS / "moves.ipynb")
    assert titles(result) == ["Using different moves"]
    assert len(result.slices[0].content) < 5000  # 245 KB of JSON, mostly base64 images


def make_notebook(cells: list[dict], language: str = "python") -> str:
    return json.dumps({"cells": cells, "metadata": {"language_info": {"name": language}},
                       "nbformat": 4, "nbformat_minor": 5})  # fmt: skip


def test_long_outputs_are_cut_at_twenty_lines_with_a_note():
    stream = {"output_type": "stream", "name": "stdout", "text": [f"row {i}\n" for i in range(50)]}
    text = make_notebook([{"cell_type": "code", "source": "show()", "outputs": [stream]}], "julia")
    result = slice_text("notebook", text, "n.ipynb")
    content = result.slices[0].content
    assert content.startswith("```julia\nshow()\n```")
    assert "row 19\n[output cut: 30 more lines]" in content and "row 20" not in content


def test_notebook_without_headings_is_cut_by_cells_within_the_budget():
    cells = [
        {"cell_type": "code", "source": f"x{i} = {'1' * 300}", "outputs": []} for i in range(20)
    ]
    text = make_notebook(cells)
    result = slice_text("notebook", text, "n.ipynb", SliceOptions(max_chars=1000))
    assert len(result.slices) > 4
    assert all(len(s.content) <= 1000 for s in result.slices)
    assert_covers_cells(cell_sources(text), result)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"worksheets": []}', ""])
def test_broken_notebook_falls_back_to_windows(text):
    result = slice_text("notebook", text, "broken.ipynb")
    assert_covers(text, result)
    assert all(dict(s.meta).get("lineUnit") is None for s in result.slices)


_cell_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)
_cell = st.one_of(
    st.builds(lambda level, t, body: {"cell_type": "markdown",
                                      "source": f"{'#' * level} {t}\n\n{body}"},
              st.integers(1, 4), _cell_text, _cell_text),
    st.builds(lambda s: {"cell_type": "markdown", "source": s.splitlines(keepends=True)},
              _cell_text),
    st.builds(lambda s, out: {"cell_type": "code", "source": s, "outputs": [
        {"output_type": "stream", "name": "stdout", "text": out},
        {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo", "text/plain": "x"}},
    ]}, _cell_text, _cell_text),
    st.builds(lambda s: {"cell_type": "raw", "source": s}, _cell_text),
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(_cell, max_size=25), st.integers(200, 3000))
def test_generated_notebooks_cover_every_cell_once(cells, budget):
    text = make_notebook(cells)
    result = slice_text("notebook", text, "gen.ipynb", SliceOptions(max_chars=budget))
    assert_covers_cells(cell_sources(text), result)
    assert not result.notes


def test_a_cell_over_the_budget_is_cut_into_parts_that_share_its_number_not_repeated():
    rows = [f"row{i} = compute({i})  # a comment with words" for i in range(5000)]
    cells = [{"cell_type": "markdown", "source": "# Big"},
             {"cell_type": "code", "source": "\n".join(rows), "outputs": []},
             {"cell_type": "markdown", "source": "after"}]  # fmt: skip
    text = make_notebook(cells)
    result = slice_text("notebook", text, "n.ipynb", SliceOptions(max_chars=4000))
    assert_covers_cells(cell_sources(text), result)
    assert all(len(s.content) <= 4000 for s in result.slices)
    assert sum(len(s.content) for s in result.slices) < 1.1 * len(text)  # was 100x: all per part
    joined = "\n".join(s.content for s in result.slices)
    assert all(joined.count(f"row{i} = ") == 1 for i in (0, 1, 2500, 4999))
    parts = [s for s in result.slices if s.start_line == s.end_line == 2]
    assert len(parts) > 10 and all(p.title.startswith("Big (part ") for p in parts)


_long_cell_text = st.lists(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300), max_size=30
).map("\n".join)
_long_cell = st.one_of(
    st.builds(lambda s: {"cell_type": "code", "source": s, "outputs": [
        {"output_type": "stream", "name": "stdout", "text": s[:500]}]}, _long_cell_text),
    st.builds(lambda h, s: {"cell_type": "markdown", "source": f"# {h}\n\n{s}"},
              _cell_text, _long_cell_text),
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_cell, _long_cell), max_size=12), st.integers(100, 1500))
def test_cells_over_the_budget_are_partitioned_with_output_bounded_by_input(cells, budget):
    text = make_notebook(cells)
    result = slice_text("notebook", text, "gen.ipynb", SliceOptions(max_chars=budget))
    assert_covers_cells(cell_sources(text), result)
    assert all(len(s.content) <= budget for s in result.slices)
    # Each cell's text once (fences, separators and output notes aside): never once per part.
    assert sum(len(s.content) for s in result.slices) <= 2 * len(text) + 100


# Text outputs of any length: training logs of many lines, a progress bar redrawn with `\r` on
# one line, tracebacks, `execute_result` text beside HTML.
_log = st.builds(
    lambda line, lines, sep: sep.join([line] * lines), _cell_text, st.integers(0, 400),
    st.sampled_from(["\n", "\r", "\r\n", ""]),
)  # fmt: skip
_output_cell = st.builds(lambda s, log, other: {"cell_type": "code", "source": s, "outputs": [
    {"output_type": "stream", "name": "stderr", "text": log},
    {"output_type": "execute_result", "data": {"text/html": "<b/>", "text/plain": log + other}},
    {"output_type": "error", "ename": "E", "evalue": other, "traceback": [log]},
]}, _cell_text, _log, _cell_text)  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(_cell, _output_cell), max_size=12), st.integers(200, 3000))
def test_a_notebook_without_its_rich_outputs_slices_the_same(cells, budget):
    cells = [{**c, "attachments": {"a.png": {"image/png": "iVBOR"}}} for c in cells]
    text = make_notebook(cells)
    stripped = strip_outputs(text)
    assert stripped is not None and "iVBOR" not in stripped
    options = SliceOptions(max_chars=budget)
    assert slice_text("notebook", stripped, "n.ipynb", options) == slice_text(
        "notebook", text, "n.ipynb", options
    )


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"cells": 3}', ""])
def test_only_a_notebook_is_stripped(text):
    assert strip_outputs(text) is None


def big_image_notebook(code: str) -> str:
    image = {"output_type": "display_data",
             "data": {"image/png": "iVBORw0KGgo" * 150_000, "text/plain": "<Figure>"}}  # fmt: skip
    return make_notebook([{"cell_type": "markdown", "source": "# Plots"},
                          {"cell_type": "code", "source": code, "outputs": [image]}])  # fmt: skip


def test_a_notebook_over_the_size_limit_is_kept_when_its_text_without_outputs_fits(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    (root / "plots.ipynb").write_text(big_image_notebook("plot(zebra)"))
    (root / "huge.ipynb").write_text(big_image_notebook("x = 1\n" * 200_000))
    assert (root / "plots.ipynb").stat().st_size > 1 << 20
    report_path = tmp_path / "report.json"
    result = run_cli("flatten", "--root", root, "--report", report_path, "-q")
    assert result.code == 0, result.stderr
    records = result.records()
    assert [r["source"] for r in records] == ["plots.ipynb"]
    assert "plot(zebra)" in records[0]["content"] and "iVBOR" not in records[0]["content"]
    report = json.loads(report_path.read_text())
    skipped = {s["path"]: s for s in report["skipped"]}
    assert skipped["huge.ipynb"]["reason"] == "too-large"
    assert "without its outputs" in skipped["huge.ipynb"]["detail"]


def test_a_notebook_whose_logs_are_over_the_size_limit_is_kept(tmp_path):
    # A training loop's log: megabytes of output of which the slicer keeps 20 lines.
    log = {"output_type": "stream", "name": "stdout",
           "text": [f"epoch {i} loss 0.{i:05d}\n" for i in range(100_000)]}  # fmt: skip
    bar = {"output_type": "stream", "name": "stderr", "text": "\r 50%|#####     |" * 100_000}
    (tmp_path / "train.ipynb").write_text(make_notebook([
        {"cell_type": "markdown", "source": "# Train"},
        {"cell_type": "code", "source": "fit(zebra)", "outputs": [log, bar]},
    ]))  # fmt: skip
    assert (tmp_path / "train.ipynb").stat().st_size > 3 << 20
    result = run_cli("flatten", "--root", tmp_path, "-q")
    assert result.code == 0, result.stderr
    content = "\n".join(r["content"] for r in result.records())
    assert "fit(zebra)" in content and "epoch 19 loss" in content and "epoch 20 " not in content
    assert "[output cut: 99980 more lines]" in content and "more characters]" in content
    assert len(content) < 10_000


# --- OpenAPI, Swagger, JSON Schema ------------------------------------------------------------


def test_openapi_3_petstore_has_info_operations_and_schemas_with_true_lines():
    result = spec(SPECS[0])
    assert [(s.title, s.start_line, s.end_line) for s in result.slices] == [
        ("info: Swagger Petstore 1.0.0", 1, 8),
        ("GET /pets", 9, 41),
        ("POST /pets", 42, 55),
        ("GET /pets/{petId}", 56, 81),
        ("schema Pet", 82, 97),
        ("schema Pets", 98, 101),
        ("schema Error", 102, 111),
    ]
    get_pet = result.slices[3]
    assert get_pet.symbol == "showPetById"
    assert dict(get_pet.meta) == {"schemas": "Pets, Error"}
    assert get_pet.content.splitlines()[:2] == ["  /pets/{petId}:", "    get:"]
    assert result.doc_title == "Swagger Petstore"


def test_swagger_2_json_operations_start_at_their_own_keys():
    result = spec(SPECS[1])
    by_title = {s.title: s for s in result.slices}
    assert titles(result)[0] == "info: Swagger Petstore 1.0.7"
    assert {
        "GET /pet/{petId}",
        "DELETE /store/order/{orderId}",
        "schema Pet",
        "schema User",
    } <= set(by_title)
    get_pet = by_title["GET /pet/{petId}"]
    assert get_pet.content.splitlines()[:2] == ['    "/pet/{petId}": {', '      "get": {']
    assert '"operationId": "getPetById"' in get_pet.content
    assert '"operationId": "updatePetWithForm"' not in get_pet.content
    assert by_title["schema Pet"].content.lstrip().startswith('"Pet": {')


def test_minified_json_spec_is_sliced_per_operation_on_its_one_line():
    text = json.dumps(json.loads(SPECS[1].read_text()), separators=(",", ":"))
    assert "\n" not in text
    result = spec_text(text, "petstore.min.json")
    assert {(s.start_line, s.end_line) for s in result.slices} == {(1, 1)}
    by_title = {s.title.split(" (part")[0]: s for s in result.slices}
    assert titles(result)[0].startswith("info: Swagger Petstore 1.0.7")
    assert {"GET /pet/{petId}", "DELETE /store/order/{orderId}", "schema Pet"} <= set(by_title)
    get_pet = by_title["GET /pet/{petId}"]
    assert get_pet.content.startswith('"/pet/{petId}":{"get":{')
    assert '"operationId":"getPetById"' in get_pet.content
    assert '"operationId":"updatePetWithForm"' not in get_pet.content
    assert get_pet.symbol == "getPetById"
    assert "".join(s.content for s in result.slices) == text  # the line, cut, nothing repeated


def test_minified_json_spec_is_docs_whichever_key_comes_first():
    doc = {"info": {"title": "T", "version": "1"}, "paths": {}, "openapi": "3.1.0"}
    assert classify_text("api.json", json.dumps(doc, separators=(",", ":"))).kind == "openapi"
    doc = {"info": {"x": {"openapi": "3"}}}  # a key named openapi, not at the top
    assert not classify_text("api.json", json.dumps(doc, separators=(",", ":"))).is_docs


ASYNCAPI_2 = """asyncapi: 2.6.0
info:
  title: Account Service
  version: 1.0.0
channels:
  user/signedup:
    subscribe:
      message:
        $ref: '#/components/messages/UserSignedUp'
  user/deleted:
    publish:
      message:
        payload: {type: string}
components:
  messages:
    UserSignedUp:
      payload:
        $ref: '#/components/schemas/User'
  schemas:
    User:
      type: object
"""

ASYNCAPI_3 = """{
  "asyncapi": "3.0.0",
  "info": {"title": "Lights", "version": "1"},
  "channels": {
    "lightingMeasured": {"address": "smartylighting/measured"}
  },
  "operations": {
    "onLightMeasured": {"action": "receive", "channel": {"$ref": "#/channels/lightingMeasured"}}
  }
}
"""


def test_asyncapi_is_docs_sliced_per_channel_operation_and_schema():
    assert classify_text("asyncapi.yaml", ASYNCAPI_2).kind == "asyncapi"
    assert classify_text("asyncapi.json", ASYNCAPI_3).kind == "asyncapi"
    result = spec_text(ASYNCAPI_2, "asyncapi.yaml")
    assert titles(result) == [
        "info: Account Service 1.0.0", "channel user/signedup", "channel user/deleted",
        "components.messages", "schema User",
    ]  # fmt: skip
    assert dict(result.slices[1].meta) == {"schemas": "UserSignedUp"}
    result = spec_text(ASYNCAPI_3, "asyncapi.json")
    assert titles(result) == ["info: Lights 1", "channel lightingMeasured",
                              "operation onLightMeasured"]  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "swagger: '2.0'\npaths:\n  /a: null\n  /b: [1, 2]\n  /c:\n    get: just text\n"
        "definitions: [1]\n",
        "swagger: '2.0'\npaths:\n  /a:\n    get:\n      responses: {200: {schema: {$ref: 1}}}\n"
        "    parameters: {$ref: '#/paths/~1a'}\n",
        '{"swagger": "2.0", "paths": {"/a": {"get": {"operationId": ["x"]}}}, "definitions": 3}',
        "asyncapi: 2.0.0\nchannels: [a, b]\n",
        "asyncapi: 3.0.0\nchannels:\n  a: null\noperations:\n  b: 7\ncomponents: []\n",
        '{"asyncapi": "2.6.0", "channels": {"a": {"subscribe": {"message": {"$ref": 5}}}}}',
    ],
)
def test_odd_swagger_and_asyncapi_shapes_degrade_without_raising_or_dropping(text):
    spec_text(text, "api.yaml", max_chars=60)


def test_json_schema_has_one_slice_per_definition():
    result = spec(SPECS[2])
    data = json.loads(SPECS[2].read_text())
    schema_titles = [t for t in titles(result) if not t.endswith("(root)")]
    assert [t.removeprefix("schema ").split(" (part")[0] for t in schema_titles] == [
        name for name in data["definitions"] for _ in range(2 if name == "schema" else 1)
    ]


def test_json_key_positions_survive_tricky_strings():
    text = '{\n "a": "x: {[\\"",\n "b": {\n  "c}": [ {"d": 1} ],\n  "e": 2\n }\n}\n'
    assert json_key_lines(text) == {("a",): 1, ("b",): 2, ("b", "c}"): 3, ("b", "e"): 4}


def test_spec_that_does_not_parse_falls_back_without_raising():
    text = "openapi: 3.0.0\npaths:\n  /x: [unclosed\n"
    result = slice_text("openapi", text, "api.yaml")
    assert_covers(text, result)
    assert result.notes == ("openapi: did not parse; sliced as text",)


def test_specs_are_docs_and_config_that_names_a_schema_is_not():
    assert classify_text("api/openapi.yaml", "openapi: 3.1.0\ninfo: {}\n").is_docs
    assert classify_text("k8s.json", '{\n  "paths": {},\n  "swagger": "2.0"\n}').kind == "openapi"
    tsconfig = (
        '{\n  "$schema": "https://json.schemastore.org/tsconfig",\n  "compilerOptions": {}\n}'
    )
    assert not classify_text("tsconfig.json", tsconfig).is_docs
    assert classify_text("x.schema.json", '{"$schema": "s", "$defs": {}}').kind == "jsonschema"


_name = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True)
_route = st.lists(_name, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts))


@st.composite
def generated_specs(draw):
    routes = draw(st.lists(_route, min_size=1, max_size=6, unique=True))
    schemas = draw(st.lists(_name, max_size=5, unique=True))
    paths, tokens, serial = {}, {}, 0
    for route in routes:
        methods = draw(st.lists(st.sampled_from(["get", "post", "delete"]), min_size=1,
                                unique=True))  # fmt: skip
        paths[route] = {}
        for method in methods:
            serial += 1
            token = f"tok{serial}x"
            tokens[f"{method.upper()} {route}"] = token
            ref = {"$ref": f"#/components/schemas/{schemas[0]}"} if schemas else {"type": "string"}
            paths[route][method] = {"summary": token, "responses": {"200": {
                "description": draw(st.text(max_size=30)), "content": {
                    "application/json": {"schema": ref}}}}}  # fmt: skip
    doc = {"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": paths,
           "components": {"schemas": {n: {"type": "object"} for n in schemas}}}  # fmt: skip
    return doc, tokens


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    generated_specs(), st.sampled_from(["json0", "json2", "json4", "yaml"]), st.integers(300, 4000)
)
def test_generated_specs_slice_per_operation_with_true_ranges(drawn, layout, budget):
    doc, tokens = drawn
    if layout == "yaml":
        import io

        out = io.StringIO()
        YAML().dump(doc, out)
        text = out.getvalue()
    elif layout == "json0":
        text = json.dumps(doc, separators=(",", ":"))  # minified: one line
    else:
        text = json.dumps(doc, indent=int(layout[-1]))
    result = slice_text("openapi", text, "api", SliceOptions(max_chars=budget))
    assert_covers(text, result, budget)
    for title, token in tokens.items():
        owners = [s for s in result.slices if f"summary: {token}" in s.content
                  or f'"summary": "{token}"' in s.content
                  or f'"summary":"{token}"' in s.content]  # fmt: skip
        assert len(owners) == 1 and owners[0].title.split(" (part")[0] == title


# --- named blocks --------------------------------------------------------------------------------


def blocks(path):
    text = path.read_text(encoding="utf-8")
    result = slice_text("code", text, str(path), lang=BLOCKS[path])
    assert_covers(text, result)
    return " | ".join(titles(result))


def test_named_blocks_are_titled_as_people_search_for_them():
    proto = blocks(FORMATS / "proto" / "operations.proto")
    assert "service Operations" in proto and "rpc Operations.GetOperation" in proto
    assert "message Operation" in proto
    assert "type Foo" in blocks(FORMATS / "graphql" / "schema_kitchen_sink.graphql")
    make = blocks(FORMATS / "localstack" / "Makefile")
    assert "make test" in make and "make lint" in make and ".PHONY" not in make
    assert blocks(FORMATS / "localstack" / "Dockerfile").split(" | ") == [
        "FROM python:3.13.12-slim-trixie AS base (part 1/2)",
        "FROM python:3.13.12-slim-trixie AS base (part 2/2)",
        "FROM base AS builder",
        "FROM base",
    ]
    assert blocks(FORMATS / "flaskr" / "schema.sql") == "table user, table post"


def test_graphql_root_type_fields_are_queries_and_mutations():
    sdl = "type Query {\n" + "".join(f"  user{i}(id: ID!): User\n" for i in range(60)) + "}\n"
    sdl += "type Mutation {\n  addUser(name: String!): User\n}\n"
    result = slice_text("code", sdl, "schema.graphql", SliceOptions(max_chars=400), lang="graphql")
    assert_covers(sdl, result)
    assert any(t.startswith("query user0") for t in titles(result))
    assert titles(result)[-1] == "type Mutation"  # small: whole, not split into its fields


def test_sql_ddl_names_tables_views_and_indexes():
    sql = "CREATE TABLE orders (id int);\n\nCREATE VIEW open_orders AS SELECT 1;\n" * 1
    result = slice_text("code", sql, "schema.sql", lang="sql")
    assert titles(result) == ["table orders, view open_orders"]


# --- end to end ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("formats") / "formats"
    shutil.copytree(FORMATS, root)
    return root


def test_kind_docs_takes_notebooks_and_specs_and_nothing_else(tree):
    result = run_cli("flatten", "--root", tree, "--kind", "docs", "-q")
    assert result.code == 0, result.stderr
    records = result.records()
    assert {r["source"] for r in records} == {
        "notebooks/moves.ipynb", "notebooks/quickstart.ipynb", "openapi/petstore-v3.0.yaml",
        "openapi/petstore-v2.0.json", "jsonschema/swagger-2.0-schema.json",
        "README.md",
    }  # fmt: skip
    notebooks = [r for r in records if r["kind"] == "notebook"]
    assert notebooks and all(r["lineUnit"] == "cell" for r in notebooks)
    assert {r["kind"] for r in records} == {"notebook", "openapi", "jsonschema", "markdown"}


def test_kind_auto_takes_the_named_block_formats_too(tree):
    result = run_cli("flatten", "--root", tree, "--kind", "auto", "-q")
    assert result.code == 0, result.stderr
    by_source = {}
    for r in result.records():
        by_source.setdefault(r["source"], []).append(r)
    assert {"proto/operations.proto", "graphql/schema_kitchen_sink.graphql", "localstack/Makefile",
            "localstack/Dockerfile", "flaskr/schema.sql"} <= set(by_source)  # fmt: skip
    assert by_source["localstack/Dockerfile"][2]["title"] == "FROM base AS builder"
    assert by_source["localstack/Makefile"][0]["kind"] == "code"
