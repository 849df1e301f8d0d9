"""The `docs-flatten` app: every command registered here, by name, and the one place where errors
become messages and exit codes.

Data goes to stdout, diagnostics to stderr. Exit codes: 0 ok, 1 the run failed, 2 usage error,
130 interrupted (Ctrl-C), 143 stopped by SIGTERM. Every failure prints what was wrong and what
to do; no traceback reaches the user.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

from flatten._version import __version__
from flatten.cli.help import Command, command_class, readable_params
from flatten.cli.stopping import stop_on_signals, stops_raised
from flatten.errors import FlattenError, interrupted_exit_code

F = TypeVar("F", bound=Callable[..., Any])

# In the order `--help` lists them: name, the command's function ("module:name" in flatten.cli),
# settings. eval's --k is its old spelling of --top-k.
COMMANDS: list[tuple[str, str, dict[str, Any]]] = [
    ("flatten", "flatten:flatten_command", {}),
    ("pack", "pack:pack_command", {}),
    ("index", "load:index_command", {}),
    ("ingest", "load:ingest_command", {}),
    ("drop", "load:drop_command", {}),
    ("search", "query:search_command", {}),
    ("eval", "query:eval_command", {"cls": command_class({"--k": "--top-k"})}),
    ("match", "query:match_command", {"context_settings": {"ignore_unknown_options": True}}),
    ("words", "query:words_command", {}),
    ("sources", "query:sources_command", {}),
    ("show", "query:show_command", {}),
    ("get", "query:get_command", {}),
    ("toc", "query:toc_command", {}),
    ("card", "query:card_command", {}),
    ("stats", "query:stats_command", {}),
    ("doctor", "query:doctor_command", {}),
    ("config", "config:config_command", {}),
    ("mcp", "mcp:mcp_command", {}),
]  # fmt: skip


def _summary(command: Callable[..., Any]) -> str | None:
    """The first paragraph of a command's docstring on one line, for the app's command list
    (rich keeps the docstring's own line breaks, which cut a sentence in the middle)."""
    paragraph = (command.__doc__ or "").strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split()) or None


class _Commands(Mapping[str, Any]):
    """The app's commands by name, in `COMMANDS` order, each built when first asked for: a
    command's module is imported then, so `flatten` never imports the index's modules."""

    def __init__(self) -> None:
        self._specs = {name: (target, settings) for name, target, settings in COMMANDS}
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            target, settings = self._specs[name]
            module, _, function = target.partition(":")
            command = getattr(importlib.import_module(f"flatten.cli.{module}"), function)
            # A Typer of its own only to record the command as `app.command` would.
            holder = typer.Typer()
            holder.command(name, **{"cls": Command, "short_help": _summary(command), **settings})(
                reports_errors(command)
            )
            self._built[name] = typer.main.get_command_from_info(
                holder.registered_commands[0],
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
            )
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


class _App(TyperGroup):
    """The app itself: typer's group with its commands built on demand, and its options
    shown and coerced as the commands' are (`flatten.cli.help.readable_params`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _Commands()  # type: ignore[assignment]

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # the names alone: typer's would build every command

    def get_params(self, ctx: Any) -> list[Any]:
        return readable_params(super().get_params(ctx))


app = typer.Typer(
    name="docs-flatten",
    cls=_App,
    help="Turn documentation and code into a searchable, citable corpus of JSONL records, "
    "and search it from a local index.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def reports_errors(command: F) -> F:
    """Map the error hierarchy (and Ctrl-C, and a closed pipe) to messages and exit codes."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with stops_raised():
                return command(*args, **kwargs)
        except FlattenError as exc:
            from flatten.cli.output import error_lines  # only on failure: it imports the index's

            for line in error_lines(exc):
                typer.echo(line, err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt as stop:
            typer.echo("interrupted: nothing was written", err=True)
            raise typer.Exit(interrupted_exit_code(stop)) from None
        except BrokenPipeError:
            raise typer.Exit(0) from None  # the reader went away (`| head`): not an error

    return wrapper  # type: ignore[return-value]


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"docs-flatten {__version__}")
        raise typer.Exit(0)


def main() -> None:
    stop_on_signals()
    app()


if __name__ == "__main__":
    main()
