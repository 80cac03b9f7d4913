"""An incremental run leaves the code graph a fresh index would build: after each
edit, the resolved edges (by path, line and fqn, not ids) equal those of a
``--force`` run, and no resolution points at a definition that is gone."""

from collections.abc import Callable

import pytest
from graphdb import Graph

# Graphs come through graph_of, which the automatic db marker cannot see.
pytestmark = pytest.mark.db

# Every resolved, ambiguous or unresolved reference with what it leads to, by content.
FINGERPRINT = """
SELECT r.path, r.line, r.kind, r.name, r.status, r.resolved_by, r.candidates,
       t.fqn || '@' || tf.path AS target,
       ARRAY(SELECT s.fqn || '@' || sf.path FROM rag.ref_candidates c
             JOIN rag.symbols s ON s.id = c.symbol_id JOIN rag.files sf ON sf.id = s.file_id
             WHERE c.ref_id = r.id ORDER BY 1) AS candidates_at
FROM rag.ref_status r
LEFT JOIN rag.symbols t ON t.id = r.target_id LEFT JOIN rag.files tf ON tf.id = t.file_id
ORDER BY 1, 2, 3, 4
"""
# References whose resolution or candidates name a definition that no longer exists.
DANGLING = """
SELECT r.path, r.line, r.name FROM rag.ref_status r
WHERE EXISTS (SELECT 1 FROM rag.ref_resolution x WHERE x.ref_id = r.id AND x.target_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM rag.symbols s WHERE s.id = x.target_id))
   OR EXISTS (SELECT 1 FROM rag.ref_candidates x WHERE x.ref_id = r.id
              AND NOT EXISTS (SELECT 1 FROM rag.symbols s WHERE s.id = x.symbol_id))
"""

ALIASED: dict[str, str | None] = {  # the fault campaign's case: a call through an alias of a package's re-export
    "alias/pkg/__init__.py": "from .impl import work\n",
    "alias/pkg/impl.py": "def work():\n    return 1\n",
    "alias/caller.py": "from alias.pkg import work as _w\n\n\ndef run():\n    return _w()\n",
}


def assert_incremental_is_fresh(graph: Graph, step: int = 0) -> None:
    """The graph as the last incremental run left it, then as a forced run builds it."""
    incremental = graph.rows(FINGERPRINT)
    assert graph.rows(DANGLING) == [], f"after edit {step}"
    graph.index(force=True)
    fresh = graph.rows(FINGERPRINT)
    assert [row for row in incremental if row not in fresh] == [row for row in fresh if row not in incremental], (
        f"after edit {step}: incremental rows, then fresh ones")


def test_an_aliased_re_export_keeps_its_callers_after_an_edit(graph_of: Callable[[str], Graph]) -> None:
    made = graph_of("reexport_py")
    made.write(ALIASED)
    made.index()
    assert made.names("callers", "alias/pkg/impl.py:work") == {("run", False)}
    made.write({"alias/pkg/impl.py": str(ALIASED["alias/pkg/impl.py"]) + "\n\ndef other():\n    return 2\n"})
    made.index()
    assert made.names("callers", "alias/pkg/impl.py:work") == {("run", False)}
    assert_incremental_is_fresh(made)


EDITS: list[dict[str, str | None]] = [
    ALIASED,
    # a function appended to the module a re-export (QuerySet as Manager) takes from
    {"pkg/models/query.py": "class QuerySet:\n    def all(self):\n        return []\n\n\ndef extra():\n    pass\n"},
    # the aliased definition goes, then comes back in another file the package re-exports
    {"alias/pkg/impl.py": "def other():\n    return 2\n"},
    {"alias/pkg/more.py": "def work():\n    return 3\n",
     "alias/pkg/__init__.py": "from .impl import other\nfrom .more import work\n"},
    # an alias of an alias: the caller's name is two hops from the definition
    {"alias/chain.py": "from alias.pkg import work as job\n",
     "alias/user.py": "from alias.chain import job as j\n\n\ndef go():\n    return j()\n"},
    {"alias/pkg/more.py": "def helper():\n    pass\n\n\ndef work():\n    return 4\n"},
    # an alias of a name its module does not define yet, then does
    {"alias/direct.py": "from alias.pkg.impl import later as soon\n\n\ndef wait():\n    return soon()\n"},
    {"alias/pkg/impl.py": "def other():\n    return 2\n\n\ndef later():\n    return 5\n"},
    # a base class's module edited, a file deleted, a re-export redirected
    {"pkg/models/base.py": "class Model:\n    def save(self):\n        pass\n\n    def check(self):\n        return []\n"},
    {"pkg/mixed/two.py": None},
    {"pkg/models/__init__.py": "from .base import Model\nfrom .fields import *\nfrom .base import Model as Manager\n"},
    {"alias/pkg/more.py": None},
]


def test_every_edit_leaves_the_graph_a_fresh_index_builds(graph_of: Callable[[str], Graph]) -> None:
    made = graph_of("reexport_py")
    for step, edit in enumerate(EDITS):
        made.write(edit)
        made.index()
        assert_incremental_is_fresh(made, step)
