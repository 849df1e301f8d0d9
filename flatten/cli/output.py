"""How the commands print: JSON documents, result lists, summaries. Nothing else writes to
stdout, so each command's output is decided here."""

from __future__ import annotations

import json
from typing import Any

import typer


def echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
