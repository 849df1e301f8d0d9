"""`docs-flatten mcp`: serve the index to agents over the Model Context Protocol."""

from __future__ import annotations

from typing import Annotated

import typer

from flatten.cli.options import (
    ApiKeyEnv,
    BaseUrl,
    Config,
    Model,
    StoreDir,
    app,
    embedding_config,
    reports_errors,
)
from flatten.config import load_config
from index.citations import parse_rules


@app.command("mcp")
@reports_errors
def mcp_command(
    store_dir: StoreDir = None,
    config: Config = None,
    tools: Annotated[
        str | None,
        typer.Option("--tools", metavar="NAME,...", show_default=False,
                     help="Tools to serve: knowledge_search, knowledge_enumerate, knowledge_get, "
                     "knowledge_toc, or all [default: the two search tools]."),
    ] = None,
    http: Annotated[
        int | None,
        typer.Option("--http", metavar="PORT", min=1, max=65535, show_default=False,
                     help="Serve streamable HTTP on this port instead of stdio."),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Address for --http.")] = "127.0.0.1",
    base_url: BaseUrl = None,
    model: Model = None,
    api_key_env: ApiKeyEnv = None,
) -> None:  # fmt: skip
    """Serve the index read-only over MCP (stdio by default) for agents and IDEs."""
    from flatten.cli.mcp import serve, tool_names
    from index.agent import Knowledge  # the MCP SDK loads only for this command

    names = tool_names(tools)
    settings = load_config(config)
    knowledge = Knowledge(
        store_dir,
        rules=parse_rules(settings.get("citations")),
        embeddings=embedding_config(settings, base_url, model, api_key_env),
    )
    serve(knowledge, names, http_port=http, host=host)
