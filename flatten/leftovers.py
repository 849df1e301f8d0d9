"""Telling a killed writer's leftover temporary file from a live writer's, for every writer that
names its temporary files by its pid (`-o` outputs, `flatten.writer`; the vector sidecar,
`index.vectors.sidecar`)."""

from __future__ import annotations

import os

# A temporary file nobody has written to for this long is no live writer's: writes land every
# few seconds while a run goes on.
STALE_SECONDS = 15 * 60


def may_run(pid: int) -> bool:
    """Whether `pid` may run here: False only when it surely runs no more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):  # another user's; a pid past what kill takes
        return True
    return True
