"""The command class every `docs-flatten` command uses: typer's, with help that reads well and
hidden spellings kept for options that were renamed.

Typer's rich help prints a type beside every parameter: `<bool>` beside a flag (which takes no
value) and `<list[str]>` beside a list argument. Here a flag shows no type, and a list argument
its element type followed by `...`. Values are coerced by `flatten.cli.coerce` where that
can be done without pydantic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, get_args

from typer._click.exceptions import BadParameter, UsageError
from typer.core import TyperArgument, TyperCommand, TyperOption

from flatten.cli.coerce import use_plain_coercion
from flatten.cli.settings import ON_DISK, undecodable


class ListArgument(TyperArgument):
    """An argument that takes many values, shown as `<str>...` rather than `<list[str]>`."""

    def display_type(self, ctx: Any) -> str:
        element = get_args(self.type_descriptor.annotation) or (str,)
        return f"<{self._bare_type(element[0])}>..."


class Command(TyperCommand):
    # Old spelling -> current one (`--k` -> `--top-k`): accepted, never shown.
    aliases: ClassVar[dict[str, str]] = {}

    def get_params(self, ctx: Any) -> list[Any]:
        return readable_params(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if self.aliases:
            args = [_respell(arg, self.aliases) for arg in args]
        given = list(args)  # the parser consumes the list it is given
        try:
            _refuse_empty_paths(ctx, self.params, given)  # options only: no help to prepare
            rest = super().parse_args(ctx, args)
            _refuse_undecodable(ctx, self.params)
            return rest
        except UsageError as exc:  # typer's own click: `click.UsageError` is another class
            if "--json" in given[: given.index("--") if "--" in given else None]:
                from flatten.cli.output import json_usage_error

                json_usage_error(exc, ctx)  # a script's --json reads it too; exit 2 stays
            raise


def _refuse_empty_paths(ctx: Any, params: list[Any], args: list[str]) -> None:
    """`BadParameter` for a path option given as "" (`--root "$DIR"` with the variable unset):
    typer reads it as `Path("")`, the current folder, which `--root` would flatten and `-o`
    or `--out` would write into. Only the raw arguments still tell "" from "."."""
    names = {name: param for param in params if isinstance(param, TyperOption)
             and _names_a_path(param) for name in param.opts}  # fmt: skip
    for at, arg in enumerate(args):
        if arg == "--":
            return
        name, eq, value = arg.partition("=")
        empty = (eq and not value) or (not eq and at + 1 < len(args) and args[at + 1] == "")
        if name in names and empty:
            raise BadParameter(
                "an empty path names nothing (an unset variable?) (reason: empty-path)",
                ctx=ctx,
                param=names[name],
            )


def _refuse_undecodable(ctx: Any, params: list[Any]) -> None:
    """`BadParameter` for a text value holding bytes that are not UTF-8 (`$'\\xff'`, a name
    pasted from a Latin-1 terminal), except where a file on disk is meant (`ON_DISK`)."""
    if ctx.resilient_parsing:  # shell completion: nothing runs
        return
    for param in params:
        if param.name in ON_DISK or _names_a_path(param):
            continue
        value = ctx.params.get(param.name)
        for text in value if isinstance(value, (list, tuple)) else (value,):
            shown = undecodable(text) if isinstance(text, str) else None
            if shown is not None:
                raise BadParameter(
                    f"'{shown}' is not UTF-8 text (a file name's bytes that are not UTF-8 are "
                    "indexed written out as \\xNN, as here) (reason: not-utf8)",
                    ctx=ctx,
                    param=param,
                )


def _names_a_path(param: Any) -> bool:
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    return annotation is Path or Path in get_args(annotation)


def readable_params(params: list[Any]) -> list[Any]:
    """A command's (or the app's) parameters as its help shows them, coerced without pydantic
    where their values are plainly valid."""
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""  # a flag takes no value: nothing to show beside it
        elif type(param) is TyperArgument and param.nargs != 1:
            # typer builds its own argument objects (no class hook): re-class them, the
            # state is the same, only `display_type` differs.
            param.__class__ = ListArgument
    use_plain_coercion(params)  # no pydantic for values plainly valid
    return params


def _respell(arg: str, aliases: dict[str, str]) -> str:
    name, eq, value = arg.partition("=")
    return aliases[name] + eq + value if name in aliases else arg


def command_class(aliases: dict[str, str] | None = None) -> type[Command]:
    """A `Command` subclass that also accepts the given old spellings of its options."""
    if not aliases:
        return Command
    return type("Command", (Command,), {"aliases": dict(aliases)})
