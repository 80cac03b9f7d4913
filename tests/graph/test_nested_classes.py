"""A class defined inside a function is its own definition (``outer.<locals>.Inner``,
as Python's ``__qualname__``): subclasses and inherits list it, never the function
around it (Flask's test functions were listed as subclasses of SessionInterface)."""

from collections.abc import Callable, Iterator

import pytest
from graphdb import Graph, mcp_harness
from plugins.mcp import Harness

# Graphs come through graph_of, which the automatic db marker cannot see.
pytestmark = pytest.mark.db

FILES: dict[str, str | None] = {
    "flaskish/sessions.py": "class SessionInterface:\n    def open_session(self, app, request):\n"
                            "        return None\n",
    "tests/test_session.py": (
        "from flaskish.sessions import SessionInterface\n\n\n"
        "def test_session_error_pops_context(app):\n"
        "    class FailingSessionInterface(SessionInterface):\n"
        "        def open_session(self, app, request):\n"
        "            return self.fail()\n\n"
        "        def fail(self):\n"
        "            raise Exception('test')\n\n"
        "    app.session_interface = FailingSessionInterface()\n"
    ),
}
INNER = "test_session_error_pops_context.<locals>.FailingSessionInterface"


@pytest.fixture(scope="module")
def nested(graph_of: Callable[[str], Graph]) -> Graph:
    made = graph_of("python")
    made.write(FILES)
    made.index()
    return made


def test_a_class_in_a_function_is_the_subclass_not_the_function(nested: Graph) -> None:
    assert nested.names("subtypes", "SessionInterface") == {(INNER, False)}
    assert nested.names("supertypes", f"tests/test_session.py:{INNER}") == {("SessionInterface", False)}
    # Its methods are its own: self.fail() resolves in the class; the function constructs it.
    assert nested.outcomes("tests/test_session.py", "fail", 7) == [("resolved", f"{INNER}.fail")]
    assert nested.names("callers", f"tests/test_session.py:{INNER}") == {("test_session_error_pops_context", False)}


@pytest.fixture
def harness(nested: Graph, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    with mcp_harness(nested, monkeypatch) as h:
        yield h


def test_traverse_graph_lists_the_nested_class_as_the_subclass(harness: Harness) -> None:
    found = harness.ok("traverse_graph", {"symbol": "SessionInterface", "relation": "inherits"})["results"]
    assert [(r["fqn"], r["kind"], r["startLine"], r["endLine"]) for r in found] == [(INNER, "CLASS", 5, 10)]
