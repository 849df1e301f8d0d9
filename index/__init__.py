"""The local SQLite index: loader, schema, search tiers and query modules."""
