"""The `docs-flatten` app: every command registered here, by name, and the one place where errors
become messages and exit codes.

Data goes to stdout, diagnostics to stderr. Exit codes: 0 ok, 1 the run failed, 2 usage error,
130 interrupted. Every failure prints what was wrong and what to do; no traceback reaches the user.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from flatten._version import __version__
from flatten.cli import config, flatten, load, mcp, pack, query
from flatten.cli.help import Command, command_class
from flatten.cli.output import error_lines
from flatten.errors import FlattenError

F = TypeVar("F", bound=Callable[..., Any])

app = typer.Typer(
    name="docs-flatten",
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
            return command(*args, **kwargs)
        except FlattenError as exc:
            for line in error_lines(exc):
                typer.echo(line, err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("interrupted: nothing was written", err=True)
            raise typer.Exit(130) from None
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


# In the order `--help` lists them.
COMMANDS: list[tuple[str, Callable[..., None], dict[str, Any]]] = [
    ("flatten", flatten.flatten_command, {}),
    ("pack", pack.pack_command, {}),
    ("index", load.index_command, {}),
    ("ingest", load.ingest_command, {}),
    ("drop", load.drop_command, {}),
    ("search", query.search_command, {}),
    ("eval", query.eval_command, {"cls": command_class({"--k": "--top-k"})}),  # --k: its old name
    ("match", query.match_command, {"context_settings": {"ignore_unknown_options": True}}),
    ("words", query.words_command, {}),
    ("sources", query.sources_command, {}),
    ("show", query.show_command, {}),
    ("get", query.get_command, {}),
    ("toc", query.toc_command, {}),
    ("card", query.card_command, {}),
    ("stats", query.stats_command, {}),
    ("doctor", query.doctor_command, {}),
    ("config", config.config_command, {}),
    ("mcp", mcp.mcp_command, {}),
]
for _name, _command, _settings in COMMANDS:
    app.command(_name, **{"cls": Command, **_settings})(reports_errors(_command))


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # run the same clean-up as Ctrl-C


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    app()


if __name__ == "__main__":
    main()
