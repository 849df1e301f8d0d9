"""docs-flatten.yaml written to hurt: read from the working directory by every command (a pull
request's file in CI), so each of these must end in a named error, exit 2, no traceback, and
nothing done: no store made, no source flattened.

The config is checked once, by the checks `config` runs, before the command does anything."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from flatten.config import MAX_VALUES
from tests.conftest import assert_clean_failure, run_cli, write


def laughs(levels: int = 9) -> str:
    """Nested aliases: 9 ** levels strings from a few hundred bytes of YAML."""
    rows = ['&a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    rows += [f"&a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "[" + ", ".join(rows) + "]"


def _limited_memory() -> None:
    # 3 GB of address space: the bomb, built and printed, needed more than that (MemoryError).
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _folder(tmp_path: Path, config: str) -> Path:
    write(tmp_path / "docs", {"a.md": "# A\n\nalpha\n"})
    (tmp_path / "docs-flatten.yaml").write_text(config)
    return tmp_path


def _refused_everywhere(tmp_path: Path, *words: str, real: bool = False) -> None:
    """`config`, `flatten` and a bare `ingest` in the folder: each refuses, saying `words`,
    and `ingest` makes no store and flattens nothing."""
    store = tmp_path / "store"
    commands = (["config"], ["flatten", "--root", "docs", "-o", "out.jsonl"],
                ["ingest", "--root", "docs", "--store", store])  # fmt: skip
    for args in commands:
        popen = {"preexec_fn": _limited_memory} if real else {}
        result = run_cli(*args, cwd=tmp_path, **popen)
        assert_clean_failure(result, 2, *words)
        assert len(result.stderr) < 1000, result.stderr[:2000]  # the value is cut, not printed
        assert "files:" not in result.stderr  # nothing flattened
    assert not store.exists() and not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "config",
    [f"flatten:\n  kind: {laughs()}\n", f"flatten:\n  exclude: {laughs()}\n",
     f"sources:\n  - root: docs\n    include: {laughs()}\n",
     f"citations: {laughs()}\n", f"embeddings:\n  model: {laughs()}\n"],
    ids=["kind", "exclude", "source include", "citations", "embeddings"],
)  # fmt: skip
def test_a_billion_laughs_is_refused_before_it_is_built(tmp_path, config):
    _folder(tmp_path, config)
    _refused_everywhere(tmp_path, f"more than {MAX_VALUES:,} values", "aliases", real=True)


def test_anchors_and_aliases_within_bounds_still_work(tmp_path):
    _folder(tmp_path, "sources:\n  - &first {root: docs, kind: code, exclude: &skip ['*.py']}\n"
                      "  - {<<: *first, corpus: second, include: *skip}\n")  # fmt: skip
    result = run_cli("config", "--show", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert "ingest sources[1]: root docs" in result.stdout
    assert "config sources[1].kind" in result.stdout  # merged from the first entry


def test_a_long_bad_value_is_echoed_cut_short(tmp_path):
    many = "[" + ", ".join(f'"item{n}"' for n in range(20_000)) + "]"
    _folder(tmp_path, f"flatten:\n  kind: {many}\n")
    result = run_cli("config", cwd=tmp_path)
    assert_clean_failure(result, 2, "flatten.kind: expected one of docs, code, auto, not [")
    assert len(result.stderr) < 400, result.stderr


@pytest.mark.parametrize(
    ("config", "named"),
    [("flatten: " + "[" * 100_000 + "]" * 100_000 + "\n", "maximum nesting depth"),
     ("flatten:\n" + "".join(" " * (i + 2) + f"k{i}:\n" for i in range(3000)),
      "nested deeper than 32 levels"),
     ("sources: " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32 levels")],
    ids=["flow", "block mappings", "just past the bound"],
)  # fmt: skip
def test_deep_nesting_is_refused_without_a_recursion_error(tmp_path, config, named):
    _folder(tmp_path, config)
    _refused_everywhere(tmp_path, named)


@pytest.mark.parametrize(
    ("config", "named"),
    [("citations: true\n", "citations: expected a list of {pattern, replace} rules, not True"),
     ("citations: 5\n", "citations: expected a list of {pattern, replace} rules, not 5"),
     ("citations:\n  - pattern: 5\n    replace: x\n",
      "citations[0].pattern: expected a non-empty string, not 5"),
     ("citations:\n  - pattern: x\n    replace: [y]\n",
      "citations[0].replace: expected a non-empty string, not ['y']"),
     ("embeddings:\n  base_url: 5\n  model: [x]\n",
      "embeddings.base_url: expected a non-empty string, not 5"),
     ("embeddings:\n  base_url: http://127.0.0.1:9/v1\n  model: [x]\n",
      "embeddings.model: expected a non-empty string, not ['x']"),
     ("sources:\n  - root: docs\n    max-delete: lots\n",
      "sources[0].max_delete: expected a number of documents or a percentage (25%), not 'lots'"),
     ("sources:\n  - root: docs\n    max-delete: 1.5\n", "sources[0].max_delete"),
     ("flatten:\n  max-chars: 99999999999999999999999999\n",
      "flatten.max_chars: expected a whole number from 200 to 16,777,216"),
     ("flatten:\n  max-file-size: 99999999999999999999999MiB\n",
      "flatten.max_file_size: expected a size (1MiB, 512k or a number of bytes) up to 1TiB"),
     (f"flatten:\n  max-file-size: '{'9' * 400}'\n", "flatten.max_file_size: expected a size"),
     (f"flatten:\n  max-chars: {'9' * 5000}\n", "a value that cannot be read: Exceeds the limit"),
     ("sources:\n  - root: docs\n    corpus: 2024-13-45\n", "a value that cannot be read: month"),
     ("sources:\n  - root: docs\n    max-page-size: 2048GiB\n", "sources[0].max_page_size")],
    ids=["citations true", "citations 5", "pattern 5", "replace list", "base_url 5", "model list",
         "max-delete lots", "max-delete fraction", "max-chars", "max-file-size", "400 digits",
         "5000 digits", "no such date", "max-page-size"],
)  # fmt: skip
def test_a_bad_value_is_refused_by_config_and_by_the_commands_before_anything(
    tmp_path, config, named
):
    # `config` used to call these ok (or fail with a traceback); `ingest` refused max-delete
    # only after flattening the source.
    _folder(tmp_path, config)
    _refused_everywhere(tmp_path, named, "error: docs-flatten.yaml: ")


def test_config_checks_embeddings_as_the_commands_that_embed_do(tmp_path):
    _folder(tmp_path, "embeddings:\n  model: m\n")
    assert_clean_failure(run_cli("config", cwd=tmp_path), 2, "embeddings.base_url: required")
    given = run_cli("config", "--base-url", "http://127.0.0.1:9/v1", cwd=tmp_path)
    assert given.code == 0, given.stderr
    assert run_cli("config", "--no-embed", cwd=tmp_path).code == 0


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [("--max-delete", "lots", "--max-delete takes a number"),
     ("--max-chars", "99999999999999999999999999", "--max-chars must be from 200 to 16,777,216"),
     ("--max-file-size", "99999999999999999999999MiB", "is more than 1TiB"),
     ("--max-file-size", "9" * 400, "is more than 1TiB"),
     ("--max-page-size", "2048GiB", "is more than 1TiB")],
)  # fmt: skip
def test_the_flags_take_the_same_bounds_and_are_refused_before_any_source_runs(
    tmp_path, flag, value, named
):
    _folder(tmp_path, "sources:\n  - root: docs\n  - root: docs\n    corpus: two\n")
    store = tmp_path / "store"
    result = run_cli("ingest", "--store", store, flag, value, cwd=tmp_path)
    assert_clean_failure(result, 2, named)
    assert "files:" not in result.stderr and not store.exists()
    if flag != "--max-delete":
        flat = run_cli("flatten", "--root", tmp_path / "docs", flag, value, "-q")
        assert_clean_failure(flat, 2, named)


@pytest.mark.parametrize(
    ("config", "named"),
    [("flatten: {}\nflatten: {}\n", 'found duplicate key "flatten"'),
     ("flatten: !!python/object:os.system {}\n", "could not determine a constructor"),
     ("flatten: *nope\n", "found undefined alias 'nope'"),
     ("a: 1\n---\nb: 2\n", "expected a single document")],
    ids=["duplicate key", "python tag", "undefined alias", "two documents"],
)  # fmt: skip
def test_yaml_that_cannot_be_read_is_one_line_saying_where(tmp_path, config, named):
    _folder(tmp_path, config)
    result = run_cli("config", cwd=tmp_path)
    assert_clean_failure(result, 2, "docs-flatten.yaml is not valid YAML: ", named, "(line ")
    assert result.stderr.count("\n") == 1, result.stderr


def test_the_shape_is_checked_where_pyyaml_has_no_libyaml(tmp_path, monkeypatch):
    # A PyYAML built from source without LibYAML has no CSafeLoader: its own loader reads the
    # events instead, and the bomb is refused the same way.
    import yaml

    from flatten.config import load_config
    from flatten.errors import UsageError

    monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    bomb = tmp_path / "docs-flatten.yaml"
    bomb.write_text(f"flatten:\n  kind: {laughs()}\n")
    with pytest.raises(UsageError, match="aliases"):
        load_config(bomb)
    fine = tmp_path / "fine.yaml"
    fine.write_text("flatten:\n  kind: docs\n")
    assert load_config(fine)["flatten"]["kind"] == "docs"
