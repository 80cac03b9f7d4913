"""Module-level variables whose type is written (``current_app: Flask = LocalProxy(...)``,
``request = cast("Request", ...)``, ``LocalProxy[Flask]``) type their uses in other modules, as a parameter's
annotation types its uses: Flask's ``helpers.url_for`` calls ``Flask.url_for``."""

from collections.abc import Callable

import pytest
from graphdb import Graph

# Graphs come through graph_of, which the automatic db marker cannot see.
pytestmark = pytest.mark.db

FILES: dict[str, str | None] = {
    "flaskish/__init__.py": "",
    "flaskish/app.py": "class Flask:\n    def url_for(self, endpoint):\n        return endpoint\n\n\n"
                       "class Request:\n    def get_json(self):\n        return {}\n",
    "flaskish/globals.py": "import typing as t\n\nif t.TYPE_CHECKING:\n    from .app import Flask\n"
                           "    from .app import Request\n\n"
                           "current_app: Flask = LocalProxy(_cv_app, 'app')\n"
                           "request = t.cast('Request', LocalProxy(_cv_req, 'request'))\n"
                           "g: 'Flask'\n"
                           "app_proxy: LocalProxy[Flask] = LocalProxy(_cv_app, 'app')\n",
    "flaskish/helpers.py": "from .globals import app_proxy, current_app, g, request\n\n\n"
                           "def url_for(endpoint):\n    return current_app.url_for(endpoint)\n\n\n"
                           "def payload():\n    return request.get_json()\n\n\n"
                           "def again(endpoint):\n    return g.url_for(endpoint)\n\n\n"
                           "def proxied(endpoint):\n    return app_proxy.url_for(endpoint)\n",
}


def test_a_declared_module_variable_types_its_uses_elsewhere(graph_of: Callable[[str], Graph]) -> None:
    made = graph_of("python")
    made.write(FILES)
    made.index()
    assert made.names("callers", "flaskish/app.py:Flask.url_for") == {
        ("url_for", False), ("again", False), ("proxied", False)}
    assert made.names("callers", "flaskish/app.py:Request.get_json") == {("payload", False)}
    assert made.outcomes("flaskish/helpers.py", "url_for", 5) == [("resolved", "Flask.url_for")]
