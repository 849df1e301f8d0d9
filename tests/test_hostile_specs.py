"""Hostile OpenAPI files: alias bombs and deep nesting finish, never raise, and lose no line.

Each case runs in a child process under a generous timeout, so a regression fails instead of
hanging the suite; nothing here asserts a speed.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap

import pytest

from slicers import SliceOptions
from slicers.openapi import slice_openapi
from tests.slicer_invariants import assert_covers

_HEAD = 'openapi: 3.0.0\ninfo: {title: b, version: "1"}\n'


def alias_bomb(depth: int, fan: int = 9) -> str:
    """`fan`^`depth` leaves in a few hundred bytes, referenced from one operation."""
    names = [f"n{i}" for i in range(depth)]
    rows = [f"x-{names[0]}: &{names[0]} [" + ",".join(["l"] * fan) + "]"]
    for prev, name in itertools.pairwise(names):
        rows.append(f"x-{name}: &{name} [" + ",".join([f"*{prev}"] * fan) + "]")
    operation = f'responses: {{"200": {{description: ok, x-r: *{names[-1]}}}}}'
    rows.append(f"paths:\n  /x:\n    get:\n      {operation}")
    return _HEAD + "\n".join(rows) + "\n"


def shared_node_fanout(operations: int, size: int) -> str:
    """One anchored list of `size` items that `operations` operations each alias."""
    rows = ["x-big: &big [" + ",".join(["1"] * size) + "]", "paths:"]
    rows += [f"  /r{i}:\n    get: {{x-r: *big}}" for i in range(operations)]
    return _HEAD + "\n".join(rows) + "\n"


def _slice_in_child(texts: dict[str, str]) -> dict[str, dict[str, object]]:
    """Slice each text in a child process (bounded by a timeout); titles, notes and whether the
    slices cover every line."""
    script = textwrap.dedent(
        """
        import json, sys
        from slicers import SliceOptions
        from slicers.openapi import slice_openapi
        from tests.slicer_invariants import assert_covers
        out = {}
        for name, text in json.load(sys.stdin).items():
            result = slice_openapi(text, name, SliceOptions())
            assert_covers(text, result)
            out[name] = {"titles": [s.title for s in result.slices], "notes": list(result.notes)}
        print(json.dumps(out))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=240,  # generous: each case is far under a second once nodes are walked once
        check=True,
    )
    return json.loads(done.stdout)


def test_alias_bombs_of_growing_depth_slice_per_operation_without_hanging():
    texts = {f"bomb{depth}.yaml": alias_bomb(depth) for depth in range(1, 13)}
    results = _slice_in_child(texts)
    for name, result in results.items():
        assert result["titles"][-1] == "GET /x", name
        assert result["notes"] == [], name


def test_operations_sharing_one_big_node_fall_back_to_text_by_name():
    # 400 operations x a 4000-item list: more walking than the file has nodes, a named fallback.
    results = _slice_in_child({"shared.yaml": shared_node_fanout(400, 4000)})
    assert results["shared.yaml"]["notes"] == [
        "openapi: aliases expand past the file's size; sliced as text"
    ]


def test_few_operations_sharing_an_anchor_still_slice_per_operation():
    text = shared_node_fanout(3, 5)
    result = slice_openapi(text, "api.yaml", SliceOptions())
    assert_covers(text, result)
    assert [s.title for s in result.slices][-3:] == ["GET /r0", "GET /r1", "GET /r2"]


@pytest.mark.parametrize(
    "name,text",
    [
        # LibYAML refuses past 1000 levels; ruamel then took seconds per KB before failing.
        ("flow.yaml", _HEAD + "paths:\n  /x:\n    get:\n      x-d: " + "[" * 3000 + "]" * 3000),
        (
            "map.yaml",
            _HEAD + "paths:\n  /x:\n    get:\n      x-d: " + "{a: " * 3000 + "1" + "}" * 3000,
        ),
        (
            "tabs.yaml",
            _HEAD + "x-t:\t1\npaths:\n  /x:\n    get:\n      x-d: " + "[" * 3000 + "]" * 3000,
        ),
        (
            "deep.json",
            '{"openapi": "3.0.0", "paths": {}, "x": ' + "[" * 100000 + "]" * 100000 + "}",
        ),
    ],
)
def test_deeply_nested_spec_falls_back_to_text_with_every_line(name, text):
    results = _slice_in_child({name: text})
    assert results[name]["notes"] == ["openapi: did not parse; sliced as text"]


def test_a_redefined_anchor_is_read_without_a_word_on_stderr(tmp_path):
    """YAML lets an anchor be defined again (the later one wins); ruamel warns about it on
    stderr, a message pointing into its own source files, once per file, even under -q."""
    spec = _HEAD + (
        "paths:\n  /a:\n    get: &op {summary: x, responses: {}}\n"
        "  /b:\n    get: &op {summary: y, responses: {}}\n  /c:\n    get: *op\n"
    )
    front = "---\ntitle: &t One\nalso: &t Two\n---\n# Body\n\ntext\n"
    (tmp_path / "openapi.yaml").write_text(spec)
    (tmp_path / "page.md").write_text(front)
    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "flatten", "--root", str(tmp_path), "--workers", "1",
         "-o", str(tmp_path / "out.jsonl"), "-q"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    titles = [json.loads(line)["title"] for line in (tmp_path / "out.jsonl").open()]
    assert {"GET /a", "GET /b", "GET /c"} <= set(titles)
