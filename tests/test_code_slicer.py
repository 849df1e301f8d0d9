"""The code slicer: declarations with their comments, cAST split and merge, true line ranges."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slicers import SliceOptions, slice_text
from slicers.languages import LANGUAGES
from tests.conftest import FIXTURES
from tests.slicer_invariants import assert_covers

APP = FIXTURES / "app-repo"


def code(path: str, lang: str, max_chars: int = 4000, fmt: str = "code"):
    text = (APP / path).read_text()
    result = slice_text(fmt, text, path, SliceOptions(max_chars), lang=lang)
    assert_covers(text, result)
    return result


def test_oversized_class_splits_into_methods_that_keep_the_class_name():
    result = code("services/orders/order_service.py", "python", max_chars=1600)
    titles = [s.title for s in result.slices]
    assert "OrderService.checkout" in titles
    assert any(t.startswith("OrderService") and "cancel" in t for t in titles)
    checkout = result.slices[titles.index("OrderService.checkout")]
    assert checkout.symbol == "OrderService.checkout"
    assert checkout.content.lstrip().startswith("def checkout(")
    assert checkout.content.rstrip().endswith("return order")


def test_the_slice_holding_a_class_line_declares_the_class():
    result = code("services/orders/order_service.py", "python", max_chars=1600)
    opening = next(s for s in result.slices if "class OrderService:" in s.content)
    assert opening.title == "OrderService: __init__, create, subtotal, tax"  # what it holds
    assert opening.symbol == "OrderService"  # what it declares: not OrderService.__init__


def test_the_signature_slice_of_a_split_function_with_a_helper_declares_the_function():
    body = "\n".join(f"    step_{i} = compute({i}, value)" for i in range(60))
    text = f'def outer(value):\n    """Doc."""\n    def helper(x):\n        return x\n\n{body}\n'
    result = slice_text("code", text, "o.py", SliceOptions(1000), lang="python")
    first = result.slices[0]
    assert first.content.startswith("def outer(value):") and "def helper(x):" in first.content
    assert (first.title, first.symbol) == ("outer.helper", "outer")
    assert {s.symbol for s in result.slices} == {"outer"}  # one declaration, as the index reads it
    assert_covers(text, result)


def test_a_first_method_cut_in_parts_keeps_its_symbol_on_every_part():
    body = "\n".join(f"        self.step_{i} = compute({i}, value)" for i in range(90))
    text = (
        f"class Big:\n    def __init__(self, value):\n{body}\n\n    def run(self):\n        pass\n"
    )
    result = slice_text("code", text, "b.py", SliceOptions(1000), lang="python")
    parts = [s for s in result.slices if s.title.startswith("Big.__init__ (part ")]
    assert len(parts) > 1 and parts[0].content.startswith("class Big:")
    assert {s.symbol for s in parts} == {"Big.__init__"}
    assert_covers(text, result)


def _method(name: str, statements: int) -> str:
    body = "\n".join(f"        self.{name}_{i} = compute({i}, using)" for i in range(statements))
    return f"    def {name}(self, using=None):\n{body}\n        return self\n"


def test_a_statement_about_the_method_above_stays_in_its_slice():
    # Django marks methods after defining them; `save` nearly fills a slice on its own.
    text = (
        "class Model:\n    objects = Manager()\n\n"
        + _method("save", 34)
        + "\n    save.alters_data = True\n\n"
        + _method("delete", 10)
        + "\n    delete.alters_data = True\n\n"
        + _method("refresh", 12)
    )
    result = slice_text("code", text, "models.py", SliceOptions(2000), lang="python")
    assert_covers(text, result)
    save = next(s for s in result.slices if "save.alters_data" in s.content)
    assert save.content.lstrip().startswith("def save(") and save.symbol == "Model.save"
    after = result.slices[result.slices.index(save) + 1]
    assert after.content.lstrip().startswith("def delete(")


def test_a_call_of_a_nested_helper_stays_with_the_code_around_it():
    helper = "    def check(x):\n" + "".join(f"        assert x != {i}\n" for i in range(40))
    calls = "".join(f"    check({i} + value)\n" for i in range(40))
    text = f"def test_values(value):\n{helper}\n{calls}"
    result = slice_text("code", text, "t.py", SliceOptions(1000), lang="python")
    assert_covers(text, result)
    calls_slice = next(s for s in result.slices if "check(0 + value)" in s.content)
    assert calls_slice.title.startswith("test_values") and "check" not in calls_slice.title


def test_small_neighbours_merge_up_to_the_budget():
    result = code("services/orders/order_service.py", "python")
    assert len(result.slices) < 8
    assert any(s.title.startswith("LineItem, Order") for s in result.slices)


@pytest.mark.parametrize(
    ("path", "lang"),
    [
        ("services/orders/order_service.py", "python"),
        ("services/gateway/server.go", "go"),
        ("web/src/App.tsx", "tsx"),
        ("lib/geometry/src/lib.rs", "rust"),
        ("native/cache.cpp", "cpp"),
        ("db/schema.sql", "sql"),
        ("Dockerfile", "dockerfile"),
    ],
)
def test_a_file_within_the_budget_is_the_one_slice_its_merged_units_make(path, lang):
    """A file within the budget as a whole is joined at once; trailing blank space (which adds
    no size) past three budgets makes the slicer size and merge its units one by one: the two
    must agree."""
    text = (APP / path).read_text()
    options = SliceOptions(max_chars=2 * len(text))  # a budget of len(text): the file fits
    padded = text + "\n" + " " * (8 * len(text)) + "\n"
    joined = slice_text("code", text, path, options, lang=lang)
    merged = slice_text("code", padded, path, options, lang=lang)
    assert len(joined.slices) == 1
    assert joined.slices == merged.slices


def test_go_methods_are_named_with_their_receiver():
    symbols = [s.symbol for s in code("services/gateway/server.go", "go", max_chars=200).slices]
    assert "(*Server).Run" in symbols and "Server.HandleHealth" in symbols


def test_leading_doc_comments_belong_to_their_declaration():
    result = code("services/gateway/server.go", "go", max_chars=600)
    run = next(s for s in result.slices if s.symbol == "(*Server).Run")
    assert run.content.startswith("// Run serves until the context ends.")
    assert run.end_line == run.start_line + 8  # not one past the closing brace


def test_rust_impl_blocks_are_named_like_rust_does():
    symbols = [s.symbol for s in code("lib/geometry/src/lib.rs", "rust", max_chars=200).slices]
    assert "impl Display for Point" in symbols and "impl Point" in symbols
    point = next(
        s for s in code("lib/geometry/src/lib.rs", "rust", 200).slices if s.symbol == "Point"
    )
    assert point.content.startswith("/// A point") and "#[derive" in point.content


def test_export_default_function_is_named_after_its_file():
    result = code("web/src/App.tsx", "tsx", max_chars=100)
    assert "App" in [s.symbol for s in result.slices]


def test_decorated_python_function_is_named_by_its_own_name():
    text = (
        "import x\n\n@app.route('/')\n@login_required\ndef index():\n    return render('index')\n"
    )
    result = slice_text("code", text, "views.py", SliceOptions(60), lang="python")
    index = next(s for s in result.slices if s.symbol == "index")
    assert index.content.index("@app.route") < index.content.index("@login_required")


def test_cpp_namespaces_are_opened_and_qualified_methods_named():
    symbols = [s.symbol for s in code("native/cache.cpp", "cpp", max_chars=150).slices]
    assert {"PriceCache", "PriceCache::put", "PriceCache::get", "clamp_price"} <= set(symbols)


def test_csharp_block_namespace_is_opened():
    titles = [s.title for s in code("dotnet/Orders/OrderController.cs", "csharp").slices]
    assert titles == ["OrderController, CreateOrder"]  # the namespace itself is not a unit


def test_shell_functions_and_grouped_top_level_code():
    result = code("scripts/deploy.sh", "bash", max_chars=400, fmt="shell")
    titles = [s.title for s in result.slices]
    assert "require" in titles and "rollout" in titles
    require = next(s for s in result.slices if s.title == "require")
    assert "# Fail early when a tool is missing.\nrequire() {" in require.content


def test_function_too_big_for_the_budget_becomes_windows_of_its_statements():
    body = "\n".join(f"    step_{i} = compute({i}, value)" for i in range(300))
    text = f"def pipeline(value):\n{body}\n    return value\n"
    result = slice_text("code", text, "big.py", SliceOptions(1000), lang="python")
    assert len(result.slices) > 3
    assert all(s.title.startswith("pipeline") for s in result.slices)
    assert_covers(text, result)


def test_unknown_language_windows_are_titled_with_a_signature_line():
    text = "-- helpers\nlocal function add(a, b)\n  return a + b\nend\n"
    result = slice_text("code", text, "m.lua", lang="lua")
    assert result.slices[0].title == "local function add(a, b)"


def test_syntax_errors_still_slice_everything_and_say_so():
    text = "def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass Fine:\n    x = 1\n"
    result = slice_text("code", text, "bad.py", lang="python")
    assert result.syntax_error
    assert_covers(text, result)


TOKENS = st.sampled_from([
    "def f():", "class A:", "    return 1", "    pass", "@dec", "# comment", "", "import os",
    "func (s *S) M() {", "}", "{", "fn main() {", "impl T for S {", "#[derive(Debug)]",
    "export default function () {", "const f = () => {", "class K {", "  m() {}", "/* c */",
    "namespace N {", "public class C {", "void f(int x) {", "#ifndef X", "#endif", "end",
    "module M", "def m", "function f {", "f() {", "<?php", "object O {", "fun g() {}",
    '"unterminated', "(((", "\t\tdeep", "x = [", "]",
])  # fmt: skip


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.sampled_from(sorted(LANGUAGES)),
    st.lists(TOKENS, max_size=60).map("\n".join) | st.text(max_size=400),
    st.integers(100, 3000),
)
def test_never_raises_and_covers_every_line_in_every_language(lang, text, max_chars):
    fmt = "shell" if lang == "bash" else "code"
    assert_covers(text, slice_text(fmt, text, "f.x", SliceOptions(max_chars), lang=lang))


def test_deeply_nested_code_does_not_recurse_without_bound():
    text = (
        "def f():\n"
        + "".join("    " * i + "if x:\n" for i in range(1, 200))
        + "    " * 200
        + "pass\n"
    )
    result = slice_text("code", text, "deep.py", SliceOptions(300), lang="python")
    assert_covers(text, result)
