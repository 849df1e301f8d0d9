"""The `docs-flatten` app: every command registered here, by name, each wrapped so that its
errors become messages and exit codes (worded in `flatten.cli.failures`).

Data goes to stdout, diagnostics to stderr. Exit codes: 0 ok, 1 the run failed, 2 usage error,
130 interrupted (Ctrl-C), 143 stopped by SIGTERM. Every failure prints what was wrong and what
to do; no traceback reaches the user.
"""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from flatten._version import __version__
from flatten.cli.failures import REPORTED, reported_exit_code
from flatten.cli.help import Command, command_class, readable_params
from flatten.cli.stopping import stop_on_signals, stops_raised

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


# Each command's line in the app's --help: its docstring's first paragraph, on one line (rich
# keeps a docstring's own line breaks, which cut a sentence in the middle). Written out, not
# read from the docstrings, so the list is drawn without importing every command's module and
# building every command (the index's modules among them: nearly 40% of `--help`'s work);
# tests/test_help.py checks each against its docstring.
SUMMARIES: dict[str, str] = {
    "flatten": "Flatten a folder, a git repository or a docs site into JSONL records, one per "
    "slice.",
    "pack": "Pack a folder, a git repository or a docs site into ONE markdown or XML file for a "
    "prompt: a directory tree, then every slice under its path and line range.",
    "index": "Load JSONL records (ours or foreign) or folders into the index, incrementally.",
    "ingest": "Flatten a folder, repository or docs site and index it: the one-liner for CI.",
    "drop": "Remove a corpus from the index: its documents, chunks and text (vectors stay, keyed "
    "by content, for any corpus to reuse). A load never empties a corpus; this does, when asked.",
    "search": "Ranked search with citations: BM25, fused with vectors when embeddings are "
    "configured.",
    "eval": "Retrieval quality of the index against relevance judgments: nDCG@k, Recall@k, MRR, "
    "hit@k.",
    "match": "The complete list of documents containing the words (empty means: not there).",
    "words": "Vocabulary: each word, its stem, documents with the exact word and with any form.",
    "sources": "Indexed documents with chunk counts, last indexed, and their mapped citation.",
    "show": "One chunk by its token.",
    "get": "A whole document, in pages of about 12,000 characters (--all: in one).",
    "toc": "Table of contents: documents and their sections.",
    "card": "A deterministic, budget-bounded index card for an agent's prompt.",
    "stats": "Corpora, documents, chunks, kinds, size of the index, and its vectors if any.",
    "doctor": "Check the store (schema, text index, vectors, corpora; the server on PostgreSQL) "
    "and probe the embeddings server: reachable, model, dimension, normalised, latency per batch.",
    "config": "Check docs-flatten.yaml (or --config FILE): unknown keys and bad values are errors.",
    "mcp": "Serve the index read-only over MCP (stdio by default) for agents and IDEs.",
}


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
            holder.command(name, **{"cls": Command, "short_help": SUMMARIES[name], **settings})(
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

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The app's help, its command list drawn from names and summaries alone (`SUMMARIES`):
        typer would build every command, importing every command's module, for one line each."""
        listing = copy.copy(self)
        listing.commands = {name: TyperCommand(name, short_help=SUMMARIES[name])
                            for name in self.commands}  # fmt: skip
        super(_App, listing).format_help(ctx, formatter)

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
    """Map the error hierarchy (and Ctrl-C, and a closed pipe) to messages and exit codes
    (`flatten.cli.failures`)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with stops_raised():
                return command(*args, **kwargs)
        except REPORTED as exc:
            raise typer.Exit(reported_exit_code(exc)) from None

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
