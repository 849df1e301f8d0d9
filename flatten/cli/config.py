"""`docs-flatten config`: check the config; `--show` prints every setting `ingest` would use, per
source, and where each comes from (flag > config > default). It takes `ingest`'s flags, so
`docs-flatten config --show --kind code` shows the flag winning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer

from flatten.cli.jobs import flatten_settings, plan
from flatten.cli.load import ingest_command
from flatten.cli.options import embedding_config, with_options_of
from flatten.cli.output import echo_json, say
from flatten.cli.settings import read_config
from flatten.config import (
    FLATTEN_KEYS,
    SOURCE_KEYS,
    SOURCE_KINDS,
    Setting,
    config_path,
)
from flatten.errors import UsageError

# The settings that mean something for one kind of source only.
_ONLY = {
    "repo": ("ref", "subdir", "token_env"),
    "url": ("scope", "max_pages", "max_depth", "concurrency", "delay", "timeout",
            "max_page_size", "ignore_robots", "no_sitemap"),
}  # fmt: skip


@dataclass
class ShownSource:
    where: str  # "flags" or "sources[N]"
    kind: str  # repo, root or url
    source: str
    settings: dict[str, Setting]


@dataclass
class ShownConfig:
    config: str | None  # the file read, if any
    sources: list[ShownSource]
    flatten: dict[str, Setting]  # what flatten, pack and index DIR use


def _relevant(kind: str, settings: dict[str, Setting]) -> dict[str, Setting]:
    hidden = {k for other, keys in _ONLY.items() if other != kind for k in keys}
    hidden |= set(SOURCE_KINDS)
    return {k: s for k, s in settings.items() if k not in hidden}


@with_options_of(ingest_command)
def config_command(
    show: Annotated[bool, typer.Option("--show", help="Print every setting and its origin "
                    "(flag > config > default), per source.")] = False,
    **options: Any,
) -> None:  # fmt: skip
    """Check docs-flatten.yaml (or --config FILE): unknown keys and bad values are errors."""
    settings = read_config(options["config"])
    if not options["no_embed"]:  # what every command that embeds refuses (base_url, model)
        embedding_config(settings, options["base_url"], options["model"], options["api_key_env"])
    found = config_path(options["config"])
    flat = flatten_settings({k: options[k] for k in FLATTEN_KEYS}, settings)
    try:
        jobs = plan({k: options.get(k) for k in SOURCE_KEYS}, settings)
    except UsageError as exc:
        if exc.reason != "no-source":
            raise
        jobs = []
    if not show:
        say(f"{found or 'no config file'}: ok, {len(jobs)} source(s)")
        return
    shown = ShownConfig(
        str(found) if found else None,
        [ShownSource(j.where, j.kind, j.source, _relevant(j.kind, j.settings)) for j in jobs],
        flat,
    )
    if options["as_json"]:
        echo_json(shown)
        return
    say(f"config: {shown.config or 'none (no docs-flatten.yaml here, no --config)'}")
    say("precedence: flag > config > default")
    _table("flatten, pack, index DIR", flat)
    if not jobs:
        say("ingest: no source (give --root, --repo or --url, or list sources: in the config)")
    for shown_source in shown.sources:
        head = f"ingest {shown_source.where}: {shown_source.kind} {shown_source.source}"
        _table(head, shown_source.settings)


def _table(title: str, settings: dict[str, Setting]) -> None:
    say(f"{title}:")
    width = max(len(name) for name in settings)
    for name, setting in settings.items():
        value = "-" if setting.value is None else _text(setting.value)
        say(f"  {name.replace('_', '-'):<{width}}  {value:<24}  {setting.origin}")


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) or "-"
    return str(getattr(value, "value", value))
