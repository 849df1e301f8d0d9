"""Credentials in URLs (`https://user:token@host/x`): stripped from all that is shown or kept.

A leaf module: corpus names, run reports and git's messages share the one rule, and the CLI's
start-up may load it. The secret scanner's `url-password` pattern reads a password by the same
rule (`userinfo`), so what is stripped here is what is redacted there.
"""

from __future__ import annotations

import re


def userinfo(stop: str = "", *, password: bool = False) -> str:
    """A regex for a URL's userinfo, from just after `://` to its `@` included; `password`: only
    a userinfo with a password, which is then the group `password`. `stop`: characters (as
    inside a regex class) that no part of it may hold, beyond white space.

    It ends at the LAST `@` before the host's path (a password may hold a raw `@`), and never
    runs past the authority: `https://host/@scope/pkg` and `http://localhost:3000/@vite/x`
    hold no userinfo. A password written with a raw `/`, `?` or `#` (invalid in a URL, yet
    pasted: a cloud secret key often holds a `/`) ends at its first `@` instead, unless what
    comes before that character is a port's digits."""
    s = r"\s" + stop
    user = rf"[^{s}:/?#\[\]]*"  # may hold an `@` (an e-mail address as user name)
    plain = rf"[^{s}/?#\[\]]*"  # may hold `@` and `:`; the last `@` ends it
    # Bounded, as a password is: unbounded, a line of `x://u:/` repeated costs its square.
    slashed = rf"(?![0-9]*[/?#])[^{s}/?#@]{{0,128}}[/?#][^{s}@]{{0,128}}"
    if password:
        return rf"{user}:(?P<password>{slashed}|{plain})@"
    return rf"{user}(?::(?:{slashed}|{plain}))?@"


_USERINFO = re.compile(rf"(?<=://){userinfo()}")


def strip_credentials(text: str) -> str:
    """`https://user:token@host/x` -> `https://host/x`, in every URL of `text`; scp-like
    `git@host:x` is kept (its user names no secret)."""
    return _USERINFO.sub("", text)
