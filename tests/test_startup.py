"""What a `flatten` loads before it does anything: a plain command line is read without typer
(`flatten.cli.quick`), exactly as typer reads it, and a slicer's module loads when its format is
first sliced (`slicers.registry`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flatten.cli.flatten
from flatten.cli import quick
from flatten.cli.app import _Commands
from flatten.cli.jobs import given_flags

PROJECT = Path(__file__).resolve().parent.parent

READ_PLAINLY = [
    [],
    ["--root", "docs"],
    ["--root=docs", "--kind", "auto", "-o", "out.jsonl", "-q"],
    ["--repo", "owner/repo", "--ref", "v1", "--subdir", "docs", "--token-env", "TOKEN"],
    ["--url", "https://docs.example.test/guide/", "--scope", "/guide/", "--header", "A: b",
     "--header=C:d", "--ignore-robots", "--no-sitemap", "--max-page-size", "1MiB"],
    ["--root", "d", "--include", "*.md", "--include", "*.rst", "--exclude", "x/**",
     "--max-file-size", "512k", "--max-chars", "2000", "--format", "langchain",
     "--report", "r.json", "--workers", "3", "--config", "c.yaml", "--quiet"],
    ["--root", "d", "-o", "-", "--output=o.jsonl", "--kind=code", "--format=haystack"],
    ["--root", "d", "--root", "e", "--max-chars", "-5", "--workers", "256"],
    ["--root", "--kind", "--report", "-q"],  # a value may start with a dash
    ["-o", "-"],
    # Paths on disk may be any bytes (a surrogate escape in argv): read plainly, as typer does.
    ["--root", "d\udcff", "-o", "o\udcff", "--repo", "r\udcff", "--subdir", "s\udcff"],
]  # fmt: skip

LEFT_TO_TYPER = [
    ["--help"], ["-h"], ["--root", ""], ["--root="], ["-o", ""], ["--kind", "Docs"],
    ["--workers", "257"], ["--workers", "x"], ["--workers", "1.0"], ["--workers", "007"],
    ["--quiet=1"], ["-qo", "x"], ["-o=x"], ["-oout"], ["--max-pages", "3"], ["--delay", "1"],
    ["--root"], ["docs"], ["--", "--root", "d"], ["--rooot", "d"], ["--format", "json"],
    ["--include", "\udcff"], ["--url", "u\udcff"],  # text that is not UTF-8: typer refuses it
]  # fmt: skip


def _typed(values: dict[str, Any]) -> dict[str, tuple[type, Any]]:
    return {name: (type(value), value) for name, value in values.items()}


def _typer_reading(args: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What typer passes on for `flatten ARGS`: the parameters and the flags given."""
    seen: dict[str, Any] = {}

    def spy(fmt: Any, output: Any, *, given: Any = None, **flags: Any) -> None:
        seen.update(flags, fmt=fmt, output=output, given=given_flags())

    monkeypatch.setattr(flatten.cli.flatten, "flatten_to_jsonl", spy)
    command = _Commands()["flatten"]
    command.main(args, prog_name="flatten", standalone_mode=False)
    return seen


@pytest.mark.parametrize("args", READ_PLAINLY, ids=" ".join)
def test_a_plain_command_line_is_read_as_typer_reads_it(args, monkeypatch):
    by_typer = _typer_reading(args, monkeypatch)
    parsed = quick.parse(args)
    assert parsed is not None
    values, given = parsed
    assert _typed(values) == _typed({k: v for k, v in by_typer.items() if k != "given"})
    assert given == by_typer["given"]


_WORDS = [*quick._FLAGS, "--", "-", "--max-pages", "-x", "", "--root=", "--root=x", "docs",
          "code", "auto", "Docs", "0", "-0", "5", "-5", "256", "257", "native", "langchain",
          "x=y", "=", "1e3", "\u00e9", "999999999999999999"]  # fmt: skip
_ARG = st.one_of(st.sampled_from(_WORDS),
                 st.builds("{}={}".format, st.sampled_from(list(quick._FLAGS)),
                           st.sampled_from(_WORDS)))  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(args=st.lists(_ARG, max_size=6))
def test_any_line_the_quick_reading_takes_typer_reads_the_same(args):
    """Over generated lines: where the quick path reads one, typer reads the same values and
    flags (or refuses only an empty path, by its own context-free pre-check)."""
    parsed = quick.parse(args)
    if parsed is None:
        return
    with pytest.MonkeyPatch.context() as patch:
        try:
            by_typer = _typer_reading(list(args), patch)
        except Exception as exc:  # typer's refusal: only its empty-path pre-check may differ
            assert "empty-path" in str(exc), (args, exc)
            return
    values, given = parsed
    assert _typed(values) == _typed({k: v for k, v in by_typer.items() if k != "given"}), args
    assert given == by_typer["given"], args


@pytest.mark.parametrize("args", LEFT_TO_TYPER, ids=" ".join)
def test_help_and_what_typer_refuses_or_reads_its_own_way_are_left_to_typer(args):
    assert quick.parse(args) is None


def test_shell_completion_is_left_to_typer(monkeypatch):
    monkeypatch.setenv("_DOCS_FLATTEN_COMPLETE", "bash_complete")
    assert quick.parse(["--root", "d"]) is None


def _run(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)  # fmt: skip


# Runs `docs-flatten ARGS` as the console script does, then prints the modules it loaded.
_LOADED_AFTER = (
    "import sys\n"
    "from flatten.cli.start import main\n"
    "sys.argv = ['docs-flatten', *sys.argv[1:]]\n"
    "code = None\n"
    "try:\n    main()\nexcept SystemExit as stop:\n    code = stop.code\n"
    "print(code, *sorted(sys.modules))\n"
)

# What a flatten of markdown files does not need: the CLI framework, and the slicers of other
# formats (the code slicer and its language tables, the spec resolver).
NOT_FOR_MARKDOWN = ["typer", "click", "rich", "pydantic", "slicers.code", "slicers.languages",
                    "slicers.terraform", "slicers.asciidoc", "slicers.notebook",
                    "flatten.spec_files", "slicers.refs"]  # fmt: skip


def test_a_flatten_of_markdown_loads_no_typer_and_no_other_slicer(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nSome text.\n")
    out = tmp_path / "out.jsonl"
    proc = _run(_LOADED_AFTER, "flatten", "--root", "docs", "--kind", "auto", "-q", "-o",
                str(out), cwd=tmp_path)  # fmt: skip
    code, *loaded = proc.stdout.split()
    assert (code, proc.stderr) == ("0", "")
    assert [m for m in loaded if m.split(".")[0] in NOT_FOR_MARKDOWN or m in NOT_FOR_MARKDOWN] == []
    assert "slicers.markdown" in loaded and out.read_text().count("\n") == 1


def test_a_failed_plain_flatten_says_why_and_exits_1_without_typer(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = _run(_LOADED_AFTER, "flatten", "--root", "empty", "-o", "out.jsonl", cwd=tmp_path)
    code, *loaded = proc.stdout.split()
    assert code == "1" and "typer" not in loaded
    assert proc.stderr == ("error: nothing to flatten (no files at all)\n"
                           "hint: check the path, --include/--exclude and --kind\n")  # fmt: skip
    assert not (tmp_path / "out.jsonl").exists()


def test_a_misspelt_flag_still_gets_typers_usage_error(tmp_path):
    proc = _run(_LOADED_AFTER, "flatten", "--rooot", "docs", cwd=tmp_path)
    code, *loaded = proc.stdout.split()
    assert code == "2" and "typer" in loaded
    assert "No such option: --rooot" in proc.stderr and "Traceback" not in proc.stderr


def test_both_readings_write_the_same_bytes(tmp_path):
    """The same run through typer (the app) and without it (the console script)."""
    for name in ("README.md", "guide.rst", "setup.py", "api.yaml"):
        (tmp_path / name).write_text(f"# {name}\n\ntext of {name}\n")
    args = ["flatten", "--root", str(tmp_path), "--kind", "auto", "-q", "-o"]
    typer_run = "import sys\nfrom flatten.cli.app import main\nsys.argv[0] = 'docs-flatten'\nmain()"
    plain_run = (
        "import sys\nfrom flatten.cli.start import main\nsys.argv[0] = 'docs-flatten'\nmain()"
    )
    for code, out in ((typer_run, "typer.jsonl"), (plain_run, "plain.jsonl")):
        proc = _run(code, *args, str(tmp_path.parent / out), cwd=PROJECT)
        assert proc.returncode == 0, proc.stderr
    typer_bytes = (tmp_path.parent / "typer.jsonl").read_bytes()
    assert typer_bytes.count(b"\n") >= 4
    assert typer_bytes == (tmp_path.parent / "plain.jsonl").read_bytes()


def test_a_slicers_module_loads_when_its_format_is_first_sliced():
    code = (
        "import sys\n"
        "from slicers import slice_text\n"
        "before = {m for m in sys.modules if m.startswith('slicers.')}\n"
        "slice_text('terraform', 'resource \"a\" \"b\" {\\n}\\n', 'main.tf')\n"
        "after = {m for m in sys.modules if m.startswith('slicers.')}\n"
        "print(sorted(m for m in before if m in ('slicers.code', 'slicers.terraform')),\n"
        "      sorted(after - before))\n"
    )
    proc = _run(code, cwd=PROJECT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0].startswith("[] [")
    assert "'slicers.terraform'" in proc.stdout and "'slicers.code'" not in proc.stdout


def test_every_format_has_a_slicer_that_loads():
    from slicers.registry import SLICERS, preload

    preload()
    assert all(callable(SLICERS[fmt]) for fmt in SLICERS)
    assert SLICERS["shell"] is SLICERS["code"]
