"""Hostile input found by a red-team run: each case fails by name (or is handled), never with a
traceback, a stray warning, a leaked password or a half-written output."""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flatten import fanout
from flatten.corpus_names import url_corpus
from flatten.fanout import SourceSpec, flatten_many
from flatten.options import FlattenOptions
from flatten.secrets import redact
from flatten.sources.gitignore import compile_gitignore
from slicers import SliceOptions
from slicers.yaml import slice_yaml
from tests.conftest import FIXTURES, run_cli, write
from tests.sites import page, serve_directory

# --- .gitignore lines no regex can match ----------------------------------------------------

DOCS_TREE = FIXTURES / "docs-tree"

REVERSED = ["[z-a]", "[b-a]x", "[!z-a]", "**/[9-0]", "[[:foo:]]"]

_CLASS_CHARS = st.sampled_from([*"az09-!^]:[\\*?/.", "[:alpha:]", "[:foo:]"])
_BRACKETS = st.lists(_CLASS_CHARS, max_size=8).map(lambda parts: "[" + "".join(parts) + "]")
_LINES = st.lists(st.one_of(_BRACKETS, st.sampled_from(["*.log", "a/**/b", "!keep", "x"])))


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES.map("".join), max_size=6))
def test_any_bracket_pattern_compiles_or_is_refused_without_raising_or_warning(lines):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would reach the user's stderr
        spec, refused = compile_gitignore(lines)
    spec.match_file("a/b.md")
    assert all(r.why in ("invalid", "too-large") for r in refused)


def test_reversed_ranges_and_unknown_classes_are_skipped_by_name_and_the_rest_applies(tmp_path):
    root = tmp_path / "d"
    write(root, {".gitignore": "\n".join([*REVERSED, "*.log"]) + "\n", "a.md": "# A\n",
                 "x.log": "l", "z": "z"})  # fmt: skip
    report_path = tmp_path / "r.json"
    result = run_cli("flatten", "--root", root, "--report", report_path, real=True)
    assert result.code == 0, result.stderr
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr, result.stderr
    assert [r["source"] for r in result.records()] == ["a.md"]
    skipped = json.loads(report_path.read_text())["skipped"]
    invalid = [(s["reason"], s["detail"].split(":")[0]) for s in skipped if s["files"] == 0]
    assert invalid == [("gitignore-pattern-invalid", f"line {n}") for n in range(1, 6)]


def test_one_source_failing_unexpectedly_is_its_own_named_failure(tmp_path, monkeypatch):
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        write(root, {"a.md": "# A\n"})
    real = fanout.flatten_root

    def faulty(source, *args, **kwargs):  # a bug of one source, whatever it is
        if source == str(roots[0]):
            raise RuntimeError("boom")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(fanout, "flatten_root", faulty)
    specs = [SourceSpec(r.name, "root", str(r), FlattenOptions(), "s") for r in roots]
    results = {spec.corpus: result for spec, result in flatten_many(specs, {}, jobs=1)}
    assert results["a"].error is not None and results["a"].error.reason == "internal-error"
    assert results["a"].report.error.reason == "internal-error"
    assert results["b"].error is None and results["b"].path is not None


# --- credentials in --url ---------------------------------------------------------------------

SECRET = "hunter2-secret"


def test_password_in_url_reaches_no_corpus_name_report_or_index(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_bytes(page("Home", "<p>Hello there, a page about things.</p>"))
    store, report_path = tmp_path / "store", tmp_path / "r.json"
    with serve_directory(site) as base:
        url = base.replace("://", f"://user:{SECRET}@") + "/"
        flat = run_cli("flatten", "--url", url, "--report", report_path)
        loaded = run_cli("ingest", "--url", url, "--store", store, "--json")
        # The same URL among a config's sources: the run's state, kept in the store, too.
        (tmp_path / "docs-flatten.yaml").write_text(f"sources:\n  - url: '{url}'\n    corpus: c\n")
        listed = run_cli("ingest", "--store", store, "--json", cwd=tmp_path)
        assert listed.code == 0, listed.stderr
    host = base.removeprefix("http://")
    assert flat.code == 0 and loaded.code == 0, flat.stderr + loaded.stderr
    assert json.loads(report_path.read_text())["source"] == base + "/"
    assert json.loads(loaded.stdout.splitlines()[-1])["corpus"] == host
    stats = run_cli("stats", "--store", store)
    assert f"corpus {host}:" in stats.stdout
    shown = [flat.stdout, flat.stderr, loaded.stdout, loaded.stderr, listed.stdout,
             listed.stderr, stats.stdout]  # fmt: skip
    kept = [p.read_bytes().decode("latin-1") for p in store.rglob("*") if p.is_file()]
    assert not [text for text in [*shown, *kept] if SECRET in text]


def test_corpus_name_of_a_url_never_holds_its_credentials():
    assert (
        url_corpus("https://u:p@ss@docs.example.com:8443/guide/") == "docs.example.com:8443/guide"
    )
    assert url_corpus("http://token@h/") == "h"


# --- an unwritable --report -------------------------------------------------------------------


def test_report_path_that_is_a_folder_fails_the_run_before_any_output(tmp_path):
    (tmp_path / "adir").mkdir()
    piped = run_cli("flatten", "--root", DOCS_TREE, "--report", tmp_path / "adir", "-q", real=True)
    assert piped.code == 1
    assert piped.stdout == "", "no record (and no success mark) for `index -` to load"
    assert "it is a directory" in piped.stderr
    out = tmp_path / "out.jsonl"
    to_file = run_cli("flatten", "--root", DOCS_TREE, "-o", out, "--report", tmp_path / "adir")
    assert to_file.code == 1 and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir"]  # no temporary file either


def test_report_path_that_is_a_link_is_refused_before_any_output(tmp_path):
    (tmp_path / "link.json").symlink_to(tmp_path / "elsewhere.json")
    out = tmp_path / "out.jsonl"
    result = run_cli("flatten", "--root", DOCS_TREE, "-o", out, "--report", tmp_path / "link.json")
    assert result.code == 1 and "symbolic link" in result.stderr
    assert not out.exists() and not (tmp_path / "elsewhere.json").exists()


def test_failed_run_still_writes_its_report(tmp_path):
    report_path = tmp_path / "r.json"
    result = run_cli("flatten", "--root", tmp_path / "missing", "--report", report_path)
    assert result.code != 0
    report = json.loads(report_path.read_text())
    assert report["ok"] is False and report["error"]["reason"] == "root-missing"


# --- a type in code is no password ------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "struct Conn {\n    struct_token: Struct,\n    max_token: u32,\n}\n",
        "pub struct Auth {\n    api_key: Option<ApiKey>,\n    secret: Secret,\n}\n",
        "interface Login {\n  token: Token;\n  password: string;\n}\n",
        "client = connect(token=Token)\n",
    ],
)
def test_a_field_whose_value_is_a_type_is_not_redacted(text):
    result = redact(text)
    assert result.text == text and not result.counts


@pytest.mark.parametrize(
    "text", ["password: Xk3Lm9Pq,\n", "token: Struct\n", "password: hunter22;\n", "secret: aB9z,\n"]
)
def test_a_value_shaped_like_a_secret_is_still_redacted_before_a_comma(text):
    assert "[REDACTED:password-assignment]" in redact(text).text


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"\A[A-Za-z0-9]{4,12}[0-9][a-z][A-Za-z0-9]{0,8}\Z"), st.sampled_from(",;"))
def test_a_trailing_comma_never_keeps_a_value_with_letters_after_digits(value, end):
    assert redact(f"password: {value}").counts == redact(f"password: {value}{end}").counts


# --- small usage and format holes -------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("--root", str(DOCS_TREE), "--workers", "-3"),
        ("--url", "http://127.0.0.1:9/", "--max-page-size", "0"),
    ],
)
def test_negative_workers_and_a_zero_page_size_are_usage_errors(args):
    result = run_cli("flatten", *args, "-q")
    assert result.code == 2 and result.stdout == "", result.stderr


def test_config_with_a_size_that_is_no_size_is_refused(tmp_path):
    config = tmp_path / "docs-flatten.yaml"
    config.write_text("flatten:\n  max-file-size: 1XB\n")
    result = run_cli("config", "--show", "--config", config)
    assert result.code == 2 and "max_file_size: expected a size" in result.stderr


def test_index_skips_a_byte_order_mark_and_refuses_lines_counted_below_one(tmp_path):
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_bytes(
        b'\xef\xbb\xbf{"text": "hello world", "source": "a.md"}\n'
        b'{"text": "x y", "source": "b.md", "startLine": -5, "endLine": -10}\n'
        b'{"text": "x z", "source": "c.md", "startLine": 4, "endLine": 0}\n'
    )
    result = run_cli("index", jsonl, "--corpus", "c", "--store", tmp_path / "s", "--json")
    load = json.loads(result.stdout.splitlines()[-1])["load"]
    assert load["added"] == 1
    assert [(m["line"], m["reason"].split(" ")[0]) for m in load["malformedLines"]] == [
        (2, "startLine"),
        (3, "endLine"),
    ]


def test_flow_style_metadata_names_a_list_item():
    text = (
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n"
        "  metadata: {name: p1, namespace: ns}\n- kind: Pod\n  metadata: {'name': p2}\n"
    )
    titles = [s.title for s in slice_yaml(text, "list.yaml", SliceOptions()).slices]
    assert titles == ["Pod/p1", "Pod/p2"]
