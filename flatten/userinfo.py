"""Credentials in URLs (`https://user:token@host/x`): stripped from all that is shown or kept.

A leaf module: corpus names, run reports and git's messages share the one rule, and the CLI's
start-up may load it.
"""

from __future__ import annotations

import re

# Up to the last `@` of the authority (a password may hold a raw `@`), never past its end.
_USERINFO = re.compile(r"(?<=://)[^/?#\s]*@")


def strip_credentials(text: str) -> str:
    """`https://user:token@host/x` -> `https://host/x`, in every URL of `text`; scp-like
    `git@host:x` is kept (its user names no secret)."""
    return _USERINFO.sub("", text)
