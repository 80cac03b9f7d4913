"""Fixtures of the code graph tests, shared by every module here."""

import shutil
from collections.abc import Callable

import pytest
from graphdb import FIXTURES, Graph

from rag import db


@pytest.fixture(scope="module")
def graph_of(rag_dbs: Callable[[], db.DatabaseTarget],
             tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Graph]:
    """Copies a fixture project (a folder of ``fixtures/``), indexes it into a
    fresh database: ``graph_of("python")``."""

    def make(project: str) -> Graph:
        root = tmp_path_factory.mktemp(project) / project
        shutil.copytree(FIXTURES / project, root)
        graph = Graph(rag_dbs(), root, project)
        graph.index()
        return graph

    return make
