"""YAML specs read by LibYAML slice exactly as ruamel.yaml's round-trip loader slices them.

The fast path (PyYAML's C loader with ruamel's YAML 1.2 scalar rules) must be invisible: the
property tests slice generated specs, full of scalars YAML 1.1 and 1.2 read differently, both
ways and compare everything, then do the same on randomly damaged copies, so that what one
loader rejects the other rejects too (or hands to ruamel).
"""

from __future__ import annotations

import io
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from slicers import SliceOptions
from slicers.openapi import _load_yaml_libyaml, slice_openapi
from tests.conftest import FIXTURES
from tests.slicer_invariants import assert_covers

PETSTORE = FIXTURES / "formats" / "openapi" / "petstore-v3.0.yaml"

# Plain scalars whose reading differs between YAML 1.1 (PyYAML's own rules), YAML 1.2 (ruamel)
# and ruamel's types (TimeStamp, ScalarInt...), and some that are ordinary.
TRICKY = [
    "yes", "no", "on", "off", "y", "true", "False", "null", "~", "", "010", "0o17", "0x1F",
    "0b101", "1_000", "-0", "007", "1e3", "1.10", ".5", "-.5e+3", ".inf", ".nan", "1:20",
    "2023-01-01", "2023-01-01T10:00:00Z", "2001-12-14 21:59:43.10 -5", "2023-01-01 10:00:00",
    "=", "<<", "0x_", "Pet", "pets", "'single: quoted'", '"double \\u00e9 \\/ quoted"',
    "a:b", "a #b", "x-tag", "!!str 1", "&anchor Pet", "*anchor", "1", "1.0", "'010'",
]  # fmt: skip
_tricky = st.sampled_from(TRICKY)
_word = st.from_regex(r"[A-Za-z/][A-Za-z0-9_{}/.-]{0,10}", fullmatch=True)
_scalar = st.one_of(_tricky, _word)
# Scalars that load on either path, so damage (not the scalar) decides what parses.
_loadable = st.one_of(
    st.sampled_from([t for t in TRICKY if t not in ("=", "<<", "0x_", "*anchor", "&anchor Pet")]),
    _word,
)
_method = st.sampled_from(["get", "put", "post", "delete", "patch", "on", "GET"])


def compare(text: str, budget: int = 2000) -> None:
    options = SliceOptions(max_chars=budget)
    fast = slice_openapi(text, "api.yaml", options)
    reference = slice_openapi(text, "api.yaml", options, fast_yaml=False)
    assert fast == reference
    assert [repr(s.symbol) for s in fast.slices] == [repr(s.symbol) for s in reference.slices]
    assert_covers(text, fast)


@st.composite
def raw_specs(draw, scalars=_scalar) -> str:
    """A block-style spec written as text, so tricky scalars stay unquoted."""
    out = [f"openapi: {draw(st.sampled_from(['3.0.3', '3.1.0', '1.10']))}"]
    if draw(st.booleans()):
        out.append("# the API")
    out += ["info:", f"  title: {draw(scalars)}", f"  version: {draw(scalars)}", "paths:"]
    for route in draw(st.lists(scalars, min_size=1, max_size=4, unique=True)):
        out.append(f"  /{route}:" if draw(st.booleans()) else f"  {route}:")
        for method in draw(st.lists(_method, min_size=1, max_size=3, unique=True)):
            out += [f"    {method}:", f"      operationId: {draw(scalars)}"]
            if draw(st.booleans()):
                out += ["      responses:", "        '200':", "          content:",
                        f"            $ref: '#/components/schemas/{draw(scalars)}'"]  # fmt: skip
            if draw(st.booleans()):
                out += ["      description: |", f"        {draw(scalars)}: text", ""]
    out += ["components:", "  schemas:"]
    for name in draw(st.lists(scalars, max_size=4, unique=True)):
        out += [f"    {name}:", f"      type: {draw(scalars)}"]
    if draw(st.booleans()):
        out.append(f"{draw(scalars)}: {draw(scalars)}")
    if draw(st.booleans()):
        out.append(f"x-flow: {{a: [1, {draw(scalars)}], b: {draw(scalars)}}}")
    return "\n".join(out) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_specs(), st.integers(300, 4000))
def test_libyaml_path_slices_generated_specs_as_ruamel_does(text, budget):
    compare(text, budget)


_damage = st.sampled_from([
    "\t", "  ", "- ", "? ", ": ", "#", "{", "}", "[", "]", ",", "'", '"', "\\", "&a ", "*a",
    "!!str ", "!x ", "<<: *a\n", "%YAML 1.1\n", "---\n", "...\n", "\r", "\r\n", "\x85", "\u2028",
    "\ufeff", "\x00", "|", ">", "@", "`", "%", "\n", "a: 1\n", "010: x\n",
])  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_specs(_loadable), st.lists(st.tuples(st.floats(0, 1), _damage), min_size=1, max_size=3))
def test_libyaml_path_rejects_and_accepts_damaged_specs_as_ruamel_does(text, damage):
    for where, piece in damage:
        at = int(where * len(text))
        text = text[:at] + piece + text[at:]
    compare(text)


_value = st.one_of(
    _tricky, st.text(max_size=12), st.integers(), st.floats(), st.booleans(), st.none(), st.dates()
)


@st.composite
def spec_data(draw) -> dict:
    """A spec as data, for ruamel's dumper to write in its own styles."""
    paths = {
        route: {m: {"operationId": draw(_value), "summary": draw(_value)} for m in methods}
        for route, methods in draw(
            st.dictionaries(_scalar, st.lists(_method, min_size=1, unique=True), max_size=4)
        ).items()
    }
    schemas = draw(st.dictionaries(_scalar, st.dictionaries(_scalar, _value, max_size=2)))
    info = {"title": draw(_value), "version": draw(_value)}
    return {"openapi": "3.0.3", "info": info, "paths": paths, "components": {"schemas": schemas}}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec_data(), st.sampled_from([None, True, False]), st.integers(2, 6))
def test_libyaml_path_equals_ruamel_on_specs_dumped_by_ruamel(data, flow, indent):
    yaml = YAML()
    yaml.default_flow_style = flow
    yaml.indent(mapping=indent, sequence=indent + 2, offset=indent)
    out = io.StringIO()
    yaml.dump(data, out)
    compare(out.getvalue())


def test_block_yaml_spec_is_sliced_without_ruamel():
    text = PETSTORE.read_text(encoding="utf-8")
    assert _load_yaml_libyaml(text) is not None
    with mock.patch("ruamel.yaml.YAML.load", side_effect=AssertionError("ruamel was used")):
        result = slice_openapi(text, str(PETSTORE), SliceOptions())
    assert [s.title for s in result.slices][:2] == ["info: Swagger Petstore 1.0.0", "GET /pets"]
    assert not result.notes


def test_yaml_that_libyaml_reads_otherwise_goes_to_ruamel():
    base = "openapi: 3.0.0\ninfo:\n  title: T\n  version: '1'\npaths: {}\n"
    assert _load_yaml_libyaml(base) is not None
    for text in (
        "%YAML 1.1\n---\n" + base,  # ruamel switches to YAML 1.1 rules
        base + "x-a: &anchor true\n",  # ruamel: ScalarBoolean, printed as 1
        base + "x-b: !!str 1\n",  # ruamel: a TaggedScalar, not a str
        base + "x-c:\tvalue\n",  # ruamel rejects this tab, LibYAML does not
        base + "x-d: 1\nx-d: 2\n",  # duplicate keys: PyYAML keeps the last
        base + "x-e:\n  <<: {a: 1}\n",  # merge keys: ruamel orders them otherwise
        base + "x-f: |\n \n    text\n",  # ruamel: "more indented follow up line than first"
        base + "x-g: |#\n  yes: text\n",  # no comment without a space: the parsers disagree
    ):
        assert _load_yaml_libyaml(text) is None, text
        compare(text)


def test_operation_id_that_is_not_text_leaves_the_method_and_route_as_symbol():
    text = "openapi: 3.0.0\npaths:\n  /a:\n    get:\n      operationId: true\n"
    for fast_yaml in (True, False):
        result = slice_openapi(text, "api.yaml", SliceOptions(), fast_yaml=fast_yaml)
        assert [(s.title, s.symbol) for s in result.slices][-1] == ("GET /a", "GET /a")


def test_list_holding_numbers_equal_to_its_positions_does_not_break_the_ruamel_path():
    text = "openapi: 3.0.0\nx-list: [1, 1.0]\npaths:\n  /a:\n    get: {}\n"
    result = slice_openapi(text, "api.yaml", SliceOptions(), fast_yaml=False)
    assert [s.title for s in result.slices] == ["openapi, x-list", "GET /a"]
    compare(text)


def test_yaml_spec_with_old_mac_line_breaks_keeps_true_ranges():
    # ruamel counts a lone \r as a line break, slices count \n only (the old code raised).
    text = "openapi: 3.0.0\rx: 1\npaths:\n  /a:\r    get: {}\n  /b:\n    get: {}\n"
    result = slice_openapi(text, "api.yaml", SliceOptions())
    assert_covers(text, result)
    assert [(s.title, s.start_line) for s in result.slices] == [
        ("openapi, x", 1),
        ("GET /a", 2),
        ("GET /b", 4),
    ]
    compare(text)
