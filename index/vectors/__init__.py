"""Vectors: the embeddings client, their storage in the store, the index-time backfill and the
query-time vector stage."""
