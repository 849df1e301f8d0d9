"""docs-flatten.yaml: settings a project keeps beside its docs (flags override them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flatten.errors import UsageError

CONFIG_NAME = "docs-flatten.yaml"


def load_config(path: str | Path | None = None) -> dict[str, Any]:
    """The config at `path`, else ./docs-flatten.yaml if present, else an empty config."""
    if path is None:
        candidate = Path(CONFIG_NAME)
        if not candidate.exists():
            return {}
        path = candidate
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the config {path}: {exc.strerror}",
                         reason="bad-config") from exc  # fmt: skip
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not valid UTF-8 (byte {exc.start})",
                         reason="bad-config") from None  # fmt: skip
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise UsageError(f"{path} is not valid YAML: {exc}", reason="bad-config") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping at the top level", reason="bad-config")
    return data
