"""`docs-flatten pack`: the same sources and options as `flatten`, written as ONE markdown or XML
file for a prompt, with token counts on stderr and an optional token budget."""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flatten.cli.flatten import flatten_command
from flatten.cli.flattening import run_flatten
from flatten.cli.options import with_options_of
from flatten.cli.settings import stdout_dash

if TYPE_CHECKING:  # the packer and the writer load when `pack` runs, not for --help
    from flatten.pack import Pack
    from flatten.record import Record
    from flatten.report import RunReport


class Style(StrEnum):  # repomix's names
    markdown = "markdown"
    xml = "xml"


class Encoding(StrEnum):
    cl100k_base = "cl100k_base"
    estimate = "estimate"


_PACK = "Pack"


@with_options_of(flatten_command, drop=("fmt",))
def pack_command(
    style: Annotated[Style, typer.Option("--style", rich_help_panel=_PACK,
                     help="markdown, or xml (well-formed: contents in CDATA).")] = Style.markdown,
    token_budget: Annotated[int | None, typer.Option("--token-budget", min=1, metavar="N",
                            show_default=False, rich_help_panel=_PACK,
                            help="Fail (exit 1, nothing written) when the pack holds more "
                            "tokens; the largest files are named.")] = None,
    encoding: Annotated[Encoding, typer.Option("--token-count-encoding", rich_help_panel=_PACK,
                        help="cl100k_base (tiktoken, bundled vocabulary), or estimate "
                        "(characters / 4).")] = Encoding.cl100k_base,
    output: Annotated[Path | None, typer.Option("-o", "--output", show_default=False,
                      callback=stdout_dash,
                      help="Write the pack here (atomically) \\[default: stdout].")] = None,
    **options: Any,
) -> None:  # fmt: skip
    """Pack a folder, a git repository or a docs site into ONE markdown or XML file for a
    prompt: a directory tree, then every slice under its path and line range."""
    from flatten.pack import check_budget, pack, pack_title, token_counter, token_table
    from flatten.writer import write_text

    counter = token_counter(encoding.value)
    packed: list[Pack] = []

    def consume(records: Iterator[Record], report: RunReport) -> None:
        kept = list(records)  # the title needs the source, known once the run is under way
        title = pack_title(root=options["root"], repo=options["repo"], url=options["url"],
                           commit=report.provenance.commit)  # fmt: skip
        result = pack(kept, style=style.value, title=title, counter=counter)
        report.pack = result.to_dict()
        check_budget(result, token_budget)  # before writing: over budget, nothing is written
        write_text(result.text, output)
        packed.append(result)

    run_flatten(consume, output=output, **options)
    if not options["quiet"]:
        typer.echo(token_table(packed[0]), err=True)
