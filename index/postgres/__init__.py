"""The PostgreSQL store: chosen by a `postgresql://` URL in --store or DOCS_FLATTEN_STORE.

`url` reads and shows the URL (never a password), `dialect` turns the index's portable SQL
(written for SQLite) into PostgreSQL's, `connection` runs it through psycopg with sqlite3's
interface, `schema` holds the numbered migrations, `store` the store itself (transactions,
per-corpus writer locks, named errors).
"""
