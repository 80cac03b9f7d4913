"""local-rag: semantic search over local code and documentation.

Python scans, chunks and talks to embedding/rerank APIs; PostgreSQL (schema
``rag``) owns the catalog, bookkeeping and hybrid search.
"""

__version__ = "0.1.0"
