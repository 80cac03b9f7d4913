"""Confluence as a source: a selection of a site's pages (spaces and/or CQL) indexed as files.

``client`` talks to Cloud (REST v2) or Server/Data Center (REST v1); ``storage`` turns a
page body (storage-format XHTML) into Markdown; ``pages`` presents the pages to an index
run as ``rag.indexer.Documents``, so a page is stored, replaced and deleted with the same
per-file SQL bookkeeping as a file of a folder.
"""

from rag.sources.confluence.client import ConfluenceClient, flavor_of
from rag.sources.confluence.pages import ConfluenceDocuments, page_path

__all__ = ["ConfluenceClient", "ConfluenceDocuments", "flavor_of", "page_path"]
