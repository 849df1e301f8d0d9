"""Output profiles: the native v1 layout, or the document layout another RAG framework loads.

Framework profiles keep metadata flat (scalars only: the section breadcrumb becomes one string)
because several vector stores reject nested or list values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flatten.record import Record

SECTION_SEPARATOR = " > "


def _flat_metadata(record: Record, *, with_id: bool) -> dict[str, Any]:
    data = record.to_dict()
    data.pop("content")
    if not with_id:
        data.pop("id")
    if "section" in data:
        data["section"] = SECTION_SEPARATOR.join(data["section"])
    return {k: v for k, v in data.items() if v is not None}


def native(record: Record) -> dict[str, Any]:
    return record.to_dict()


def langchain(record: Record) -> dict[str, Any]:
    """`langchain_core.documents.Document(**line)`."""
    return {
        "id": record.id,
        "page_content": record.content,
        "metadata": _flat_metadata(record, with_id=True),
    }


def llamaindex(record: Record) -> dict[str, Any]:
    """`llama_index.core.schema.TextNode(**line)` (or `Document(**line)`)."""
    return {
        "id_": record.id,
        "text": record.content,
        "metadata": _flat_metadata(record, with_id=False),
    }


def haystack(record: Record) -> dict[str, Any]:
    """`haystack.Document.from_dict(line)`."""
    return {
        "id": record.id,
        "content": record.content,
        "meta": _flat_metadata(record, with_id=False),
    }


PROFILES: dict[str, Callable[[Record], dict[str, Any]]] = {
    "native": native,
    "langchain": langchain,
    "llamaindex": llamaindex,
    "haystack": haystack,
}
