"""The server's SQL written once for both databases: each module builds one table's
statements from a `Dialect` (placeholder style, value codecs, JSON filters, text ordering),
maps its rows to records from its columns listed once (`records`), and builds its
searches. The backends execute them, and keep only what the dialects really do differently
(claims, locks, merges, DDL)."""
