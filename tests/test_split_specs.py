"""Multi-file API specs: pieces a spec refers to by `$ref` are docs, titled by the spec.

Real trees on disk through the CLI; hostile references (outside the root, URLs, absolute paths,
cycles) must neither be read nor hang.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slicers.refs import local_refs, resolve_ref
from tests.conftest import run_cli, write

ROOT_SPEC = """openapi: 3.0.3
info:
  title: Split API
  version: '1'
paths:
  /users:
    $ref: paths/users.yaml
  /users/{id}:
    $ref: 'paths/users@{id}.yaml'
  /escape:
    $ref: ../outside.yaml
  /remote:
    $ref: https://example.com/remote.yaml
  /absolute:
    $ref: /etc/passwd
  /loop:
    $ref: loop/a.yaml
components:
  schemas:
    User:
      $ref: components/schemas/User.yaml
"""

USERS = """get:
  operationId: listUsers
  summary: List zebra users
  responses:
    '200':
      description: ok
      content:
        application/json:
          schema:
            $ref: ../components/schemas/User.yaml
post:
  summary: Create a user
  responses:
    '201':
      description: created
"""

USER_BY_ID = """{
  "parameters": [{"name": "id", "in": "path", "required": true}],
  "get": {"summary": "One user", "responses": {"200": {"description": "ok"}}}
}
"""

TREE = {
    "api/openapi.yaml": ROOT_SPEC,
    "api/paths/users.yaml": USERS,
    "api/paths/users@{id}.yaml": USER_BY_ID,
    "api/components/schemas/User.yaml": "type: object\nproperties:\n  name: {type: string}\n",
    "api/loop/a.yaml": "get:\n  responses: {}\n  x-next:\n    $ref: b.yaml\n",
    "api/loop/b.yaml": "type: object\nproperties:\n  back:\n    $ref: a.yaml\n",
    "api/unrelated.yaml": "type: object\nproperties: {}\n",
    "outside.yaml": "get:\n  summary: SECRET-OUTSIDE\n  responses: {}\n",
}


@pytest.fixture
def tree(tmp_path):
    write(tmp_path, TREE)
    return tmp_path


def flatten(root, *extra):
    result = run_cli("flatten", "--root", root, "-q", *extra)
    assert result.code == 0, result.stderr
    return result.records()


def test_path_items_a_spec_refers_to_are_sliced_as_its_operations(tree):
    records = flatten(tree / "api")
    by_source: dict[str, list[str]] = {}
    for r in records:
        by_source.setdefault(r["source"], []).append(r["title"])
    assert by_source["paths/users.yaml"] == ["GET /users", "POST /users"]
    assert by_source["paths/users@{id}.yaml"] == ["/users/{id}", "GET /users/{id}"]
    assert by_source["components/schemas/User.yaml"] == ["schema User"]
    assert "loop/a.yaml" in by_source and "loop/b.yaml" in by_source  # a cycle, each once
    assert "unrelated.yaml" not in by_source  # no spec refers to it: not docs
    users = [r for r in records if r["source"] == "paths/users.yaml"]
    assert {r["kind"] for r in users} == {"openapi"} and users[0]["symbol"] == "listUsers"
    assert users[0]["startLine"] == 1 and "List zebra users" in users[0]["content"]


def test_references_never_leave_the_root_or_fetch(tree):
    (tree / "api" / "link.yaml").symlink_to(tree / "outside.yaml")
    spec = tree / "api" / "openapi.yaml"
    link = "paths:\n  /link:\n    $ref: link.yaml\n"
    spec.write_text(ROOT_SPEC.replace("paths:\n", link))
    records = flatten(tree / "api")
    assert not any("SECRET-OUTSIDE" in r["content"] for r in records)
    assert all(not r["source"].startswith(("..", "/")) for r in records)


def test_a_spec_changed_between_runs_is_read_again(tree):
    assert "paths/users.yaml" in {r["source"] for r in flatten(tree / "api")}
    spec = tree / "api" / "openapi.yaml"
    spec.write_text(ROOT_SPEC.replace("$ref: paths/users.yaml", "get: {responses: {}}"))
    assert "paths/users.yaml" not in {r["source"] for r in flatten(tree / "api")}


@pytest.mark.parametrize(
    ("referrer", "ref", "expected"),
    [
        ("openapi.yaml", "paths/users.yaml", "paths/users.yaml"),
        ("api/openapi.yaml", "./paths/a.yaml#/get", "api/paths/a.yaml"),
        ("api/paths/a.yaml", "../components/User.yaml", "api/components/User.yaml"),
        ("api/openapi.yaml", "paths/users%40%7Bid%7D.yaml", "api/paths/users@{id}.yaml"),
        ("openapi.yaml", "#/components/schemas/User", None),
        ("openapi.yaml", "../../etc/passwd", None),
        ("a/openapi.yaml", "b/../../../x.yaml", None),
        ("openapi.yaml", "/etc/passwd", None),
        ("openapi.yaml", "https://example.com/x.yaml", None),
        ("openapi.yaml", "file:///etc/passwd", None),
        ("openapi.yaml", "%2Fetc%2Fpasswd", None),
        ("openapi.yaml", "..%2F..%2Fetc%2Fpasswd", None),
        ("openapi.yaml", ".", None),
    ],
)
def test_only_relative_file_references_below_the_root_resolve(referrer, ref, expected):
    assert resolve_ref(referrer, ref) == expected


@given(st.text(max_size=40), st.text(max_size=40))
def test_a_resolved_reference_is_always_a_plain_path_below_the_root(referrer, ref):
    target = resolve_ref(referrer.lstrip("/"), ref)
    if target is not None:
        parts = target.split("/")
        assert not any(part in ("", ".", "..") for part in parts), target


def test_roles_come_from_the_referring_side_and_specific_ones_win():
    spec = json.loads(json.dumps({
        "paths": {"/a": {"$ref": "a.yaml"}, "/b": {"get": {"$ref": "op.yaml"}}},
        "components": {"schemas": {"S": {"$ref": "s.yaml"}}},
        "x-other": [{"$ref": "s.yaml"}, {"$ref": "misc.yaml"}],
    }))  # fmt: skip
    assert local_refs(spec, "openapi.yaml") == {
        "a.yaml": "/a", "op.yaml": "GET /b", "s.yaml": "schema S", "misc.yaml": ""
    }  # fmt: skip


def test_a_whole_file_in_a_schemas_place_is_a_schema_named_by_its_file():
    # As in prance's test specs: a response's `schema: {$ref: error.json}`, a body parameter's
    # schema in `./schema/Entity.json`, schemas under properties and allOf.
    spec = {
        "swagger": "2.0",
        "paths": {"/p": {"get": {
            "parameters": [{"in": "body", "schema": {"$ref": "./schema/Entity.json"}}],
            "responses": {"200": {"schema": {"$ref": "error.json"}}, "400": {"$ref": "r.yaml"}},
        }}},
        "definitions": {"A": {
            "properties": {"b": {"$ref": "b.yaml"}, "items": {"$ref": "named-items.yaml"}},
            "allOf": [{"$ref": "base.yaml"}],
            "items": {"$ref": "defs.yaml#/Item"},
        }},
    }  # fmt: skip
    assert local_refs(spec, "api/spec.yaml") == {
        "api/schema/Entity.json": "schema Entity", "api/error.json": "schema error",
        "api/r.yaml": "", "api/b.yaml": "schema b", "api/named-items.yaml": "schema named-items",
        "api/base.yaml": "schema base", "api/defs.yaml": "",
    }  # fmt: skip


def test_a_response_schema_file_is_titled_as_a_schema(tmp_path):
    spec = "swagger: '2.0'\ninfo: {title: T, version: '1'}\npaths:\n  /p:\n    get:\n"
    spec += "      responses:\n        default:\n          schema:\n            $ref: error.json\n"
    error = '{\n  "required": ["message"],\n  "properties": {"message": {"type": "string"}}\n}\n'
    write(tmp_path, {"spec.yaml": spec, "error.json": error})
    titles = {r["source"]: r["title"] for r in flatten(tmp_path)}
    assert titles["error.json"] == "schema error"


def test_a_directory_of_many_specs_is_read_one_spec_at_a_time(tmp_path):
    """Each spec's text is dropped once its references are taken: a directory of N specs must
    not hold N texts at once (2,000 specs of 1 MiB each was 2 GB in one worker)."""
    import tracemalloc

    from flatten.spec_files import referring_title

    padding = "# " + "x" * 998 + "\n"
    spec = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    $ref: sub/a.yaml\n"
    specs = {f"spec{i:02}.yaml": spec + padding * 300 for i in range(30)}  # ~300 KB each
    write(tmp_path, {**specs, "sub/a.yaml": "get:\n  summary: a\n"})
    total = sum(len(text) for text in specs.values())
    referring_title("warm-up", str(tmp_path), "spec00.yaml", 1 << 20)  # imports the parsers
    tracemalloc.start()
    try:
        title = referring_title("memory-run", str(tmp_path), "sub/a.yaml", 1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert title == "/a"
    assert peak < total / 3  # a spec or two at a time, never all 30 (9 MB held before)


def test_asyncapi_channels_and_operations_in_files_are_titled_by_the_spec(tmp_path):
    write(tmp_path, {
        "asyncapi.yaml": "asyncapi: 3.0.0\ninfo: {title: Lights, version: '1'}\nchannels:\n"
                         "  lightMeasured:\n    $ref: channels/light.yaml\noperations:\n"
                         "  onLightMeasured:\n    $ref: operations/on-light.yaml\n",
        "channels/light.yaml": "address: smartylighting/measured\nmessages:\n"
                               "  lightMeasured:\n    $ref: '#/components/messages/m'\n",
        "operations/on-light.yaml": "action: receive\nchannel:\n  $ref: ../channels/light.yaml\n",
    })  # fmt: skip
    titles = {r["source"]: r["title"] for r in flatten(tmp_path, "--kind", "docs")}
    assert titles["channels/light.yaml"] == "channel lightMeasured"
    assert titles["operations/on-light.yaml"] == "operation onLightMeasured"


def test_a_lookup_parses_at_most_max_files_of_a_directory_s_specs(tmp_path, monkeypatch):
    """MAX_FILES bounds the specs a lookup parses in one directory, not only the pieces it
    follows: 2,500 specs beside one piece were all parsed, in every worker. A spec beside more
    than MAX_FILES other files (its own pieces) is still found."""
    from flatten import spec_files

    monkeypatch.setattr(spec_files, "MAX_FILES", 4)
    specs = {
        f"spec{i}.yaml": f"openapi: 3.0.0\ninfo: {{title: t, version: '1'}}\npaths:\n"
        f"  /r{i}:\n    $ref: sub/p{i}.yaml\n"
        for i in range(8)
    }
    pieces = {f"sub/p{i}.yaml": "get:\n  summary: s\n" for i in range(8)}
    flat = {f"a{i}.yaml": "get:\n  summary: s\n" for i in range(6)}  # sorted before the specs
    flat["z.yaml"] = (
        "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /a0:\n    $ref: a0.yaml\n"
    )
    write(tmp_path / "flat", flat)
    write(tmp_path, {**specs, **pieces})
    assert spec_files.referring_title("cap-run", str(tmp_path), "flat/a0.yaml", 1 << 20) == "/a0"
    titles = [
        spec_files.referring_title("cap-run", str(tmp_path), f"sub/p{i}.yaml", 1 << 20)
        for i in range(8)
    ]
    assert titles == ["/r0", "/r1", "/r2", "/r3", None, None, None, None]  # sorted: first 4


def test_minified_pieces_are_found_whatever_their_first_key(tmp_path):
    """Minified JSON keeps its keys on one line in any order: a path item that opens with
    `parameters`, a schema that opens with `title`, are pieces all the same."""
    item = {
        "parameters": [{"name": "id", "in": "path"}],
        "get": {"summary": "One", "responses": {}},
    }
    schema = {"title": "User", "type": "object", "properties": {"name": {"type": "string"}}}
    write(tmp_path, {
        "openapi.yaml": "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n"
                        "  /users/{id}:\n    $ref: paths/user.json\ncomponents:\n  schemas:\n"
                        "    User:\n      $ref: schemas/user.json\n",
        "paths/user.json": json.dumps(item, separators=(",", ":")),
        "schemas/user.json": json.dumps(schema, separators=(",", ":")),
    })  # fmt: skip
    titles: dict[str, set[str]] = {}
    for r in flatten(tmp_path, "--kind", "docs"):
        titles.setdefault(r["source"], set()).add(r["title"])
    assert "GET /users/{id}" in titles["paths/user.json"]
    assert titles["schemas/user.json"] == {"schema User"}


# A root spec in `api/` whose pieces live in a sibling `shared/` folder, as in split specs
# generated by Redocly's `split` (paths/, components/schemas/) with a shared components tree.
SIBLING_TREE = {
    "api/openapi.yaml": "openapi: 3.0.3\ninfo:\n  title: Split API\n  version: '1'\npaths:\n"
    "  /users:\n    $ref: paths/users.yaml\n  /health:\n    $ref: ../shared/paths/health.yaml\n"
    "  /escape:\n    $ref: ../../outside.yaml\n",
    "api/paths/users.yaml": "get:\n  summary: List users\n  responses:\n    '200':\n"
    "      description: ok\n      content:\n        application/json:\n          schema:\n"
    "            $ref: ../../shared/schemas/User.yaml\n",
    "shared/paths/health.yaml": "get:\n  summary: Health check\n  responses: {}\n",
    "shared/schemas/User.yaml": "type: object\nproperties:\n  id:\n    $ref: Id.yaml\n"
    "  team:\n    $ref: ../../api/schemas/Team.yaml\n",
    "api/schemas/Team.yaml": "type: object\nproperties:\n  lead:\n"
    "    $ref: ../../shared/schemas/User.yaml\n",  # a cycle across the two folders
    "shared/schemas/Id.yaml": "type: string\nformat: uuid\n",
    "shared/orphan.yaml": "get:\n  summary: no spec refers to me\n  responses: {}\n",
}


def test_pieces_in_a_sibling_folder_of_the_spec_are_followed(tmp_path):
    root = tmp_path / "root"
    write(root, SIBLING_TREE)
    write(tmp_path, {"outside.yaml": "get:\n  summary: SECRET-OUTSIDE\n  responses: {}\n"})
    titles: dict[str, list[str]] = {}
    for r in flatten(root, "--kind", "docs"):
        titles.setdefault(r["source"], []).append(r["title"])
    assert titles["shared/paths/health.yaml"] == ["GET /health"]
    assert titles["api/paths/users.yaml"] == ["GET /users"]
    assert titles["shared/schemas/User.yaml"] == ["schema User"]
    assert titles["api/schemas/Team.yaml"] == ["schema Team"]  # through the cycle, once
    assert titles["shared/schemas/Id.yaml"] == ["schema Id"]
    assert "shared/orphan.yaml" not in titles
    assert not any(source.startswith("..") for source in titles)


def test_the_walk_for_specs_never_goes_through_a_symbolic_link(tmp_path):
    """A spec reached only through a linked folder (here outside the root) makes nothing docs:
    the same spec in a real folder does."""
    spec = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n"
    spec += "  /orphan:\n    $ref: ../shared/orphan.yaml\n"
    root = tmp_path / "root"
    write(root, SIBLING_TREE)
    write(tmp_path, {"elsewhere/openapi.yaml": spec})
    (root / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert "shared/orphan.yaml" not in {r["source"] for r in flatten(root, "--kind", "docs")}
    write(root, {"real/openapi.yaml": spec})
    assert "shared/orphan.yaml" in {r["source"] for r in flatten(root, "--kind", "docs")}


def test_a_root_of_referenced_path_items_is_sliced_per_route(tmp_path):
    """Every path item a `$ref` (Redocly's split layout): the root was one `info:` slice."""
    spec = (
        "openapi: 3.1.0\ninfo:\n  title: Museum API\n  version: 1.0.0\n"
        "servers:\n  - url: https://api.example.com\npaths:\n"
        "  /museum-hours:\n    $ref: paths/museum-hours.yaml\n"
        "  /special-events:\n    $ref: paths/special-events.yaml\n"
        "  /special-events/{eventId}:\n    $ref: 'paths/special-events@{eventId}.yaml'\n"
    )
    write(tmp_path, {
        "openapi.yaml": spec,
        "paths/museum-hours.yaml": "get:\n  summary: Get museum hours\n  responses: {}\n",
        "paths/special-events.yaml": "get:\n  summary: List\n  responses: {}\n"
                                     "post:\n  summary: Create\n  responses: {}\n",
        "paths/special-events@{eventId}.yaml": "get:\n  summary: One\n  responses: {}\n",
    })  # fmt: skip
    records = flatten(tmp_path, "--kind", "docs")
    root = [
        (r["title"], r["startLine"], r["endLine"]) for r in records if r["source"] == "openapi.yaml"
    ]
    assert root == [
        ("info: Museum API 1.0.0", 1, 6),
        ("/museum-hours", 7, 9),
        ("/special-events", 10, 11),
        ("/special-events/{eventId}", 12, 13),
    ]
    pieces = [r["title"] for r in records if r["source"].startswith("paths/")]
    assert pieces == ["GET /museum-hours", "GET /special-events", "POST /special-events",
                      "GET /special-events/{eventId}"]  # fmt: skip


def test_a_scalar_schema_a_parameter_or_a_response_file_is_a_piece_when_referred(tmp_path):
    spec = (
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /users/{id}:\n"
        "    parameters:\n      - $ref: components/parameters/Id.yaml\n"
        "    get:\n      responses:\n        '404':\n"
        "          $ref: components/responses/NotFound.yaml\ncomponents:\n  schemas:\n"
        "    Id:\n      $ref: components/schemas/Id.yaml\n"
        "    Count:\n      $ref: components/schemas/Count.json\n"
    )
    write(tmp_path, {
        "openapi.yaml": spec,
        "components/schemas/Id.yaml": "type: string\nformat: uuid\n",
        "components/schemas/Count.json": '{\n  "type": "integer",\n  "format": "int64"\n}\n',
        "components/parameters/Id.yaml": "name: id\nin: path\nrequired: true\n",
        "components/responses/NotFound.yaml": "description: Not found\ncontent:\n"
        "  application/json:\n    schema:\n      $ref: ../schemas/Id.yaml\n",
        "components/schemas/Unused.yaml": "type: string\n",  # no spec refers to it
        "package.yaml": "type: module\n",
    })  # fmt: skip
    titles = {r["source"]: r["title"] for r in flatten(tmp_path, "--kind", "docs")}
    assert titles["components/schemas/Id.yaml"] == "schema Id"
    assert titles["components/schemas/Count.json"] == "schema Count"
    assert "components/parameters/Id.yaml" in titles
    assert "components/responses/NotFound.yaml" in titles
    assert "components/schemas/Unused.yaml" not in titles and "package.yaml" not in titles


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("type: string\nformat: uuid\n", True),
        ("type: [string, 'null']\n", True),
        ('{"type":"string","format":"uuid"}', True),
        ("name: id\nin: query\n", True),
        ("description: Not found\ncontent:\n  application/json: {}\n", True),
        ("type: module\n", False),  # package.yaml
        ('{\n  "name": "x",\n  "type": "module"\n}\n', False),  # package.json
        ("kind: Secret\ntype: Opaque\n", False),
        ("spec:\n  type: string\n", False),  # not at the top
    ],
)
def test_a_piece_is_known_by_a_schema_type_or_a_parameter_location(text, expected):
    from slicers.refs import looks_like_fragment

    assert looks_like_fragment(text) is expected


def test_the_walk_for_specs_skips_noise_folders_and_stops_at_its_bound(tmp_path, monkeypatch):
    """A spec vendored in node_modules/ makes nothing of ours docs; the walk sniffs at most
    MAX_TREE_SNIFFS files (sorted: the same ones each run)."""
    from flatten import spec_files

    spec = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n"
    spec += "  /orphan:\n    $ref: ../../shared/orphan.yaml\n"
    root = tmp_path / "root"
    write(root, {**SIBLING_TREE, "node_modules/pkg/openapi.yaml": spec})
    assert "shared/orphan.yaml" not in {r["source"] for r in flatten(root, "--kind", "docs")}
    write(root, {"vendored/pkg/openapi.yaml": spec})
    run = str(root)
    assert spec_files.referring_title(run, run, "shared/orphan.yaml", 1 << 20) == "/orphan"
    monkeypatch.setattr(spec_files, "MAX_TREE_SNIFFS", 3)  # api/'s three files, not vendored/
    assert spec_files.referring_title(run + "-capped", run, "shared/orphan.yaml", 1 << 20) is None
