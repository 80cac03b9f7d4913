"""Confluence as a source: a selection of a site's pages (spaces and/or CQL) indexed as files.

``client`` talks to Cloud (REST v2) or Server/Data Center (REST v1); ``storage`` turns a
page body (storage-format XHTML) into Markdown; ``pages`` presents the pages to an index
run as ``rag.sources.base.Documents``, so a page is stored, replaced and deleted with the same
per-file SQL bookkeeping as a file of a folder; ``space`` is the ``Source`` of the kind.

This package's own module imports none of them: the kind is registered (``space``) without
loading an HTTP client, which only an index run of a Confluence source needs.
"""
