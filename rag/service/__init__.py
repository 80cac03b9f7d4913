"""The application layer: everything a user can ask of local-rag, written once for the CLI, the
MCP server and ``rag serve`` (thin adapters over ``RagService``), each answer a model of
``rag.schemas``.

``RagService`` loads the config, chooses the database and loads the models on first use, so
a front end that only lists its commands or tools pays for none of it. It is made of one class
per concern, each a module of this package, each building on the ones before it:

- ``core.ServiceCore``: configuration, the database connection (re-opened when lost), the
  models, the schema (``rag init``);
- ``catalog.SourceCatalog``: the sources (configured, indexed, to watch), listed and removed,
  each asked of its ``rag.sources.base.Source``, never switched on by the name of its kind;
- ``indexing.Indexing``: index runs and dry runs;
- ``queries.Queries``: search, ask, read-back, the code graph;
- ``status.Status``: ``rag status``.

The data logic itself is SQL's: sources, status, read-back, removal are calls of ``rag.*``
functions, search is ``rag.search.Searcher``, indexing ``rag.indexer``.
"""

from rag.service.core import database_errors
from rag.service.queries import Queries, known_languages, search_result
from rag.service.status import Status, providers
from rag.sources.base import default_source_name
from rag.sources.confluence.space import confluence_source
from rag.sources.folder import folder_source
from rag.sources.repository import git_source


class RagService(Queries, Status):
    """Configuration, database connection and models, each made on first use and then kept;
    every capability of local-rag as a method."""


__all__ = ["RagService", "confluence_source", "database_errors", "default_source_name", "folder_source",
           "git_source", "known_languages", "providers", "search_result"]
