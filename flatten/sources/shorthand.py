"""Repository shorthands, as gitingest and repomix accept them: `owner/repo` (GitHub),
`github:owner/repo`, `gitlab:group/subgroup/repo`, each to its https clone URL.

A local path of the same spelling wins: `docs/site` that exists is a folder, never a GitHub repo.
"""

from __future__ import annotations

import re
from pathlib import Path

_HOSTS = {"github": "github.com", "gitlab": "gitlab.com"}
# GitHub names: owner of letters, digits and single hyphens; repo of letters, digits, . _ -.
_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9_.-]+"
_GITHUB = re.compile(rf"^(?:github:)?({_OWNER})/({_NAME}?)(?:\.git)?/?$")
_GITLAB = re.compile(rf"^gitlab:((?:{_NAME}/)+)({_NAME}?)(?:\.git)?/?$")


def shorthand_url(text: str) -> str | None:
    """The https URL a shorthand stands for, or None when `text` is not one. Pure: it does not
    look at the file system (`expand_repo` does)."""
    text = text.strip()
    match = _GITLAB.match(text)
    host = _HOSTS["gitlab"]
    if match is None:
        match = _GITHUB.match(text)
        host = _HOSTS["github"]
    if match is None or match.group(2) in ("", ".", ".."):
        return None
    owner = match.group(1).rstrip("/")
    if any(part in (".", "..") for part in owner.split("/")):
        return None
    return f"https://{host}/{owner}/{match.group(2)}.git"


def expand_repo(text: str) -> str | None:
    """The URL for a shorthand `--repo`, or None: not a shorthand, or an existing local path."""
    url = shorthand_url(text)
    if url is None or Path(text).expanduser().exists():
        return None
    return url
