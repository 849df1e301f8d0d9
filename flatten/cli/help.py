"""The command class every `docs-flatten` command uses: typer's, with help that reads well and
hidden spellings kept for options that were renamed.

Typer's rich help prints a type beside every parameter: `<bool>` beside a flag (which takes no
value) and `<list[str]>` beside a list argument. Here a flag shows no type, and a list argument
its element type followed by `...`. Values are coerced by `flatten.cli.coerce` where that
can be done without pydantic.
"""

from __future__ import annotations

from typing import Any, ClassVar, get_args

from typer._click.exceptions import UsageError
from typer.core import TyperArgument, TyperCommand, TyperOption

from flatten.cli.coerce import use_plain_coercion


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
            return super().parse_args(ctx, args)
        except UsageError as exc:  # typer's own click: `click.UsageError` is another class
            if "--json" in given[: given.index("--") if "--" in given else None]:
                from flatten.cli.output import json_usage_error

                json_usage_error(exc, ctx)  # a script's --json reads it too; exit 2 stays
            raise


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
