"""The `docs-flatten` command: the only adapters over the library; nothing in the library
imports them."""
