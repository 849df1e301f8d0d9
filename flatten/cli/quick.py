"""`docs-flatten flatten` without typer, for the command lines it reads plainly.

Importing typer and building the command was about a seventh of the work of a `flatten` that
had nothing to do (an empty folder). A command line made only of `flatten`'s own flags, each
with a value that is plainly valid, is read here and handed to the same `flatten_to_jsonl` with
the values typer would pass; anything else (`--help`, an unknown or misspelt flag, a value typer
would refuse or read in its own way, the crawl's number flags, shell completion) returns None,
and typer reads the command line as always, so every message and refusal stays typer's.
`tests/test_startup.py` checks both readings agree, flag by flag.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flatten.cli.settings import (
    CRAWL_DEFAULTS,
    DEFAULTS,
    MAX_PROCESSES,
    ON_DISK,
    Format,
    Kind,
    stdout_dash,
    undecodable,
)


class _Declined(Exception):
    """Not a command line this module reads: typer does."""


def _text(value: str) -> str:
    return value


def _path(value: str) -> Path:
    if not value:  # typer refuses "" for a path (`flatten.cli.help`): its message
        raise _Declined
    return Path(value)


def _choice(enum: type[Kind] | type[Format]) -> Callable[[str], Any]:
    def convert(value: str) -> Any:
        if value not in enum._value2member_map_:
            raise _Declined
        return enum(value)

    return convert


_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")  # as `flatten.cli.coerce` reads one


def _integer(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    def convert(value: str) -> int:
        if not _INTEGER.fullmatch(value):
            raise _Declined
        number = int(value)
        if (low is not None and number < low) or (high is not None and number > high):
            raise _Declined
        return number

    return convert


# Each flag read here: its parameter of `flatten_command` and how its value is read (None: a
# flag that takes no value; a list parameter gathers every value given). The crawl's number
# flags (--max-pages, --max-depth, --concurrency, --delay, --timeout) are left to typer.
_FLAGS: dict[str, tuple[str, Callable[[str], Any] | None]] = {
    "--root": ("root", _path),
    "--repo": ("repo", _text),
    "--ref": ("ref", _text),
    "--subdir": ("subdir", _text),
    "--token-env": ("token_env", _text),
    "--url": ("url", _text),
    "--scope": ("scope", _text),
    "--max-page-size": ("max_page_size", _text),
    "--ignore-robots": ("ignore_robots", None),
    "--no-sitemap": ("no_sitemap", None),
    "--header": ("header", _text),
    "--kind": ("kind", _choice(Kind)),
    "-o": ("output", _path),
    "--output": ("output", _path),
    "--include": ("include", _text),
    "--exclude": ("exclude", _text),
    "--max-file-size": ("max_file_size", _text),
    "--max-chars": ("max_chars", _integer()),
    "--format": ("fmt", _choice(Format)),
    "--report": ("report_path", _path),
    "--workers": ("workers", _integer(0, MAX_PROCESSES)),
    "--config": ("config", _path),
    "-q": ("quiet", None),
    "--quiet": ("quiet", None),
}
_LISTS = frozenset({"header", "include", "exclude"})

# Every parameter's default, as typer passes it when the flag is not given.
DEFAULTS_OF_FLATTEN: dict[str, Any] = {
    "root": None, "repo": None, "ref": None, "subdir": None, "token_env": None, "url": None,
    "scope": None, **{name: CRAWL_DEFAULTS[name] for name in
                      ("max_pages", "max_depth", "concurrency", "delay", "timeout")},
    "max_page_size": CRAWL_DEFAULTS["max_page_size"], "ignore_robots": False,
    "no_sitemap": False, "header": None, "kind": Kind.docs, "output": None, "include": None,
    "exclude": None, "max_file_size": DEFAULTS["max_file_size"],
    "max_chars": DEFAULTS["max_chars"], "fmt": Format.native, "report_path": None,
    "workers": 0, "config": None, "quiet": False,
}  # fmt: skip


def parse(args: list[str]) -> tuple[dict[str, Any], set[str]] | None:
    """The parameters typer would pass `flatten_command` for `args` (what follows `flatten`),
    and the names given on the line; None when typer must read it."""
    if any(name.endswith("_COMPLETE") for name in os.environ):  # click's shell completion
        return None
    values = dict(DEFAULTS_OF_FLATTEN)
    given: set[str] = set()
    at = 0
    try:
        while at < len(args):
            flag, eq, value = args[at].partition("=")
            if flag not in _FLAGS or (eq and flag.startswith("-") and len(flag) == 2):
                raise _Declined  # unknown, --help, `--`, an argument, or `-o=x` (click: "=x")
            name, convert = _FLAGS[flag]
            if convert is None:
                if eq:
                    raise _Declined  # a flag given a value: typer's refusal
                values[name] = True
            else:
                if not eq:
                    at += 1
                    if at == len(args):
                        raise _Declined  # the value is missing: typer's refusal
                    value = args[at]
                if convert is _text and name not in ON_DISK and undecodable(value):
                    raise _Declined  # not UTF-8: typer's refusal (`flatten.cli.help`)
                converted = convert(value)
                if name in _LISTS:
                    values[name] = [*(values[name] if name in given else ()), converted]
                else:
                    values[name] = converted
            given.add(name)
            at += 1
    except _Declined:
        return None
    values["output"] = stdout_dash(values["output"])
    return values, given


def run(args: list[str]) -> int | None:
    """Run `flatten` on `args` and return its exit code; None (nothing run) when typer must
    read the command line."""
    parsed = parse(args)
    if parsed is None:
        return None
    # Here, not at the top: a line left to typer (`flatten --help`) pays for the parse alone.
    from flatten.cli.failures import REPORTED, reported_exit_code
    from flatten.cli.flattening import flatten_to_jsonl
    from flatten.cli.stopping import stops_raised

    values, given = parsed
    try:
        with stops_raised():
            flatten_to_jsonl(values.pop("fmt"), values.pop("output"), given=given, **values)
    except REPORTED as exc:
        return reported_exit_code(exc)
    return 0
