"""The code graph of a Python fixture project: each reference kind resolved, ambiguity kept."""

from collections.abc import Callable

import pytest
from graphdb import Graph, graph_of

__all__ = ["graph_of"]


@pytest.fixture(scope="module")
def shop(graph_of: Callable[[str], Graph]) -> Graph:
    return graph_of("python")


def test_dump(shop: Graph) -> None:
    for row in shop.rows("SELECT f.path, r.line, r.kind, r.name, r.status, r.resolved_by, r.candidates, t.fqn FROM rag.refs r JOIN rag.files f ON f.id=r.file_id LEFT JOIN rag.symbols t ON t.id = r.target_id ORDER BY 1,2"):
        print(row)
    assert False
