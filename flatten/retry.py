"""How long to wait before retrying an HTTP request: the one policy crawl and embeddings share."""

from __future__ import annotations

import email.utils
import time

MAX_BACKOFF = 30.0


def retry_after_seconds(header: str | None, attempt: int) -> float:
    """Seconds from a Retry-After header (seconds, decimals allowed, or an HTTP date), else
    exponential backoff for the `attempt`-th retry (1-based), capped."""
    if header:
        value = header.strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            pass
    return min(MAX_BACKOFF, 0.5 * 2 ** max(0, attempt - 1))
