"""Names for the named blocks of non-programming grammars the language pack bundles.

Protobuf, GraphQL SDL, Makefiles, Dockerfiles and SQL DDL are sliced by the code slicer (leading
comments attached, small neighbours merged, oversized blocks split inside); this module only
says what each block is called, the way people search for it: `service Operations`,
`rpc Operations.GetOperation`, `type Foo`, `query user`, `make test`, `FROM base AS builder`,
`table orders`. A namer returns (symbol, title), or None for preamble (imports, options,
variables, `DROP TABLE`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slicers.treesitter import node_text

Named = tuple[str, str] | None
Namer = Callable[[Any, str | None], Named]


def _child(node: Any, *types: str) -> Any | None:
    return next((c for c in node.named_children if c.type in types), None)


def _member(parent: str | None, name: str) -> str:
    return f"{parent}.{name}" if parent else name


_PROTO_LABELS = {"service": "service", "rpc": "rpc", "message": "message", "enum": "enum"}


def proto_name(node: Any, parent: str | None) -> Named:
    label = _PROTO_LABELS.get(node.type)
    if label is None:
        return None
    name_node = _child(node, f"{node.type}_name", "identifier")
    symbol = _member(parent, node_text(name_node) if name_node is not None else label)
    return symbol, f"{label} {symbol}"


_GRAPHQL_LABELS = {
    "schema_definition": "schema", "schema_extension": "extend schema",
    "object_type_definition": "type", "object_type_extension": "extend type",
    "interface_type_definition": "interface", "interface_type_extension": "extend interface",
    "union_type_definition": "union", "union_type_extension": "extend union",
    "enum_type_definition": "enum", "enum_type_extension": "extend enum",
    "input_object_type_definition": "input", "input_object_type_extension": "extend input",
    "scalar_type_definition": "scalar", "scalar_type_extension": "extend scalar",
    "directive_definition": "directive", "fragment_definition": "fragment",
}  # fmt: skip
# Fields of the root types are the API's operations: `query user`, `mutation addComment`.
_ROOT_TYPES = {"Query": "query", "Mutation": "mutation", "Subscription": "subscription"}


def graphql_name(node: Any, parent: str | None) -> Named:
    kind = node.type
    if kind == "field_definition":
        name = node_text(_child(node, "name"))
        root = _ROOT_TYPES.get(parent or "")
        symbol = _member(parent, name)
        return symbol, (f"{root} {name}" if root else symbol)
    if kind == "operation_definition":
        operation = _child(node, "operation_type")
        name_node = _child(node, "name")
        label = node_text(operation) if operation is not None else "query"
        name = node_text(name_node) if name_node is not None else "(anonymous)"
        return name, f"{label} {name}"
    label = _GRAPHQL_LABELS.get(kind)
    if label is None:
        return None
    name_node = _child(node, "name", "fragment_name")
    if name_node is None:
        return label, label  # `schema { ... }`
    name = node_text(name_node)
    return name, f"{label} {'@' if kind == 'directive_definition' else ''}{name}"


def make_name(node: Any, parent: str | None) -> Named:
    if node.type != "rule":
        return None
    targets = _child(node, "targets")
    names = node_text(targets).split() if targets is not None else []
    # `.PHONY: test` and other special targets declare, they do not build: preamble.
    names = [n for n in names if not n.startswith(".")]
    if not names:
        return None
    return names[0], "make " + " ".join(names[:3]) + (" ..." if len(names) > 3 else "")


def dockerfile_name(node: Any, parent: str | None) -> Named:
    """A build stage starts at its FROM (the instructions after it belong to it)."""
    if node.type != "from_instruction":
        return None
    spec = _child(node, "image_spec")
    image = node_text(spec).split("@", 1)[0] if spec is not None else "?"
    alias = _child(node, "image_alias")
    if alias is None:
        return image, f"FROM {image}"
    return node_text(alias), f"FROM {image} AS {node_text(alias)}"


_SQL_LABELS = {
    "create_table": "table", "create_view": "view", "create_materialized_view": "view",
    "create_index": "index", "create_function": "function", "create_type": "type",
    "create_schema": "schema", "create_sequence": "sequence", "create_trigger": "trigger",
    "create_extension": "extension", "create_database": "database", "create_role": "role",
}  # fmt: skip


def sql_name(node: Any, parent: str | None) -> Named:
    statement = node.named_children[0] if node.type == "statement" and node.named_children else node
    label = _SQL_LABELS.get(statement.type)
    if label is None:
        return None  # DROP, ALTER, INSERT ...: grouped with their neighbours
    name_node = _child(statement, "object_reference", "identifier")
    name = node_text(name_node) if name_node is not None else label
    return name, f"{label} {name}"
