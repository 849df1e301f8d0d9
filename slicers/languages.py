"""What the code slicer needs to know about each language's tree-sitter grammar.

`declarations` are the node types that become slices of their own at the top level (and, inside
an oversized declaration, the members it splits into); everything else is preamble or
top-level code. `containers` are transparent (namespaces): their members are sliced as if they
were top level. `leading` nodes (attributes) attach to the declaration below, like comments.

The named-block grammars (Protobuf, GraphQL, Make, Dockerfile, SQL) add three things: a `namer`
that gives a block its symbol and title (`rpc Operations.GetOperation`), `bodies` (node types
whose own children are their members, as a proto `service` holds its `rpc`s), and `runs` (a
declaration owns the nodes after it up to the next one: a Dockerfile stage and its instructions).
"""

from __future__ import annotations

from dataclasses import dataclass

from slicers.blocks import Namer, dockerfile_name, graphql_name, make_name, proto_name, sql_name


@dataclass(frozen=True)
class Language:
    grammar: str
    declarations: frozenset[str]
    containers: frozenset[str] = frozenset()
    leading: frozenset[str] = frozenset()
    namer: Namer | None = None
    bodies: frozenset[str] = frozenset()
    runs: bool = False


def _lang(
    grammar: str,
    declarations: str,
    containers: str = "",
    leading: str = "",
    namer: Namer | None = None,
    bodies: str = "",
    runs: bool = False,
) -> Language:
    return Language(grammar, frozenset(declarations.split()), frozenset(containers.split()),
                    frozenset(leading.split()), namer, frozenset(bodies.split()), runs)  # fmt: skip


_JS = (
    "function_declaration generator_function_declaration class_declaration "
    "abstract_class_declaration interface_declaration type_alias_declaration enum_declaration "
    "export_statement lexical_declaration variable_declaration method_definition "
    "public_field_definition module internal_module"
)
_C = "function_definition struct_specifier union_specifier enum_specifier type_definition"

LANGUAGES: dict[str, Language] = {
    "python": _lang("python", "function_definition class_definition decorated_definition"),
    "go": _lang("go", "function_declaration method_declaration type_declaration"),
    "java": _lang("java", "class_declaration interface_declaration enum_declaration "
                  "record_declaration annotation_type_declaration method_declaration "
                  "constructor_declaration", leading=""),
    "kotlin": _lang("kotlin", "class_declaration function_declaration object_declaration "
                    "companion_object"),
    "javascript": _lang("javascript", _JS),
    "typescript": _lang("typescript", _JS),
    "tsx": _lang("tsx", _JS),
    "rust": _lang("rust", "function_item struct_item enum_item union_item trait_item impl_item "
                  "mod_item macro_definition function_signature_item", leading="attribute_item"),
    "c": _lang("c", _C, containers="preproc_ifdef preproc_if preproc_else"),
    "cpp": _lang("cpp", _C + " class_specifier template_declaration",
                 containers="namespace_definition linkage_specification preproc_ifdef "
                 "preproc_if preproc_else"),
    "csharp": _lang("csharp", "class_declaration struct_declaration interface_declaration "
                    "enum_declaration record_declaration delegate_declaration "
                    "method_declaration constructor_declaration property_declaration",
                    containers="namespace_declaration"),
    "swift": _lang("swift", "class_declaration protocol_declaration function_declaration "
                   "init_declaration"),
    "scala": _lang("scala", "object_definition class_definition trait_definition "
                   "function_definition enum_definition"),
    "php": _lang("php", "class_declaration function_definition interface_declaration "
                 "trait_declaration enum_declaration method_declaration",
                 containers="namespace_definition"),
    "ruby": _lang("ruby", "module class method singleton_method"),
    "bash": _lang("bash", "function_definition"),
    # Named blocks (slicers/blocks.py names them).
    "proto": _lang("proto", "service rpc message enum", namer=proto_name,
                   bodies="service message_body enum_body"),
    "graphql": _lang("graphql", " ".join(("field_definition operation_definition "
                     "fragment_definition schema_definition schema_extension directive_definition",
                     *(f"{k}_type_definition {k}_type_extension" for k in
                       ("object", "interface", "union", "enum", "input_object", "scalar")))),
                     containers="document definition type_system_definition type_definition "
                     "type_system_extension type_extension executable_definition",
                     namer=graphql_name),
    "make": _lang("make", "rule", namer=make_name),
    "dockerfile": _lang("dockerfile", "from_instruction", namer=dockerfile_name, runs=True),
    "sql": _lang("sql", "statement", namer=sql_name),
}  # fmt: skip

# Function-like values that make `const name = ...` a declaration in JavaScript/TypeScript.
JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "class", "generator_function"}
)
NAME_NODES = (
    "identifier", "type_identifier", "simple_identifier", "constant", "name",
    "property_identifier", "field_identifier", "word",
)  # fmt: skip
