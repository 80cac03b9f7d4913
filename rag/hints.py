"""What to do next, said in the words of the interface the user is in.

A ``Hint`` is an action and its argument; ``Hint.render`` is the one place that writes it as
a command line (``rag graph find X``), an MCP tool call (``find_symbol(name="X")``) or a SQL
call (``rag.find_symbols('X')``). Errors carry their hint (``RagError.hint``) and the front end
that shows the error renders it; the service renders the hints of the text it returns
(warnings, status) for the interface it serves.

SQL functions raise with ``USING HINT =`` the SQL rendering, which is what a psql user reads;
``from_sql`` turns it back into a ``Hint`` for the other interfaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

NOTHING_INDEXED = "no sources indexed yet"  # said by `rag list` and by a search of an empty index
Interface = Literal["cli", "mcp", "sql"]
Action = Literal["find_symbol", "list_sources", "pass_source", "index", "index_folder", "index_all", "remove",
                 "multilingual"]
# How to search other languages by meaning: said by a search or an index run whose model cannot read them.
MULTILINGUAL_FIX = ("for meaning-based search in other languages set a multilingual embedding model: "
                    "embeddings.local.model (e.g. intfloat/multilingual-e5-small, "
                    "with embeddings.local.languages), "
                    "embeddings.provider: jina (jina-embeddings-v3), or an OpenAI-compatible embedder "
                    "(embeddings.provider: openai with embeddings.openai.baseUrl)")

# action: (cli, mcp, sql); {arg} is the hint's argument.
_FORMS: dict[Action, tuple[str, str, str]] = {
    "find_symbol": ("try: rag graph find {arg}", 'try: find_symbol(name="{arg}")',
                    "try: rag.find_symbols('{arg}')"),
    "list_sources": ("rag list shows the sources", "list_sources shows the sources",
                     "rag.list_sources() shows the sources"),
    "pass_source": ("pass --source", "pass source", "pass source"),
    "index": ("rag index {arg} applies it", 'index(source="{arg}") applies it', "rag index {arg} applies it"),
    "remove": ("rag remove {arg} drops this copy", 'remove_source(name="{arg}") drops this copy',
               "rag.remove_source('{arg}') drops this copy"),
    "index_folder": ("try: rag index --path . --name my-project", 'try: index(path="/path/to/project")',
                     "try: rag index --path . --name my-project"),
    # (the SQL rendering is the short one rag.search's NOTICE carries)
    "multilingual": (MULTILINGUAL_FIX, MULTILINGUAL_FIX,
                     "set a multilingual embedding model to search them by meaning"),
    "index_all": ("index again (rag index --all) to embed with it",
                  'index each source again (index(source="...")) to embed with it',
                  "index again (rag index --all) to embed with it"),
}


@dataclass(frozen=True)
class Hint:
    action: Action
    arg: str = ""

    def render(self, interface: Interface) -> str:
        cli, mcp, sql = _FORMS[self.action]
        form = {"cli": cli, "mcp": mcp, "sql": sql}[interface]
        return form.format(arg=self.arg)


def with_hint(message: str, hint: Hint | None, interface: Interface) -> str:
    """``message`` followed by ``hint`` as ``interface`` says it."""
    return f"{message}; {hint.render(interface)}" if hint is not None else message


_SQL_HINTS: list[tuple[re.Pattern[str], Action]] = [
    (re.compile(r"try: rag\.find_symbols\('((?:[^']|'')*)'\)"), "find_symbol"),
    (re.compile(r"rag\.list_sources\(\) shows the sources"), "list_sources"),
    (re.compile(r"pass source"), "pass_source"),
    (re.compile(r"index again \(rag index --all\) to embed with it"), "index_all"),
    (re.compile(r"try: rag index --path \. --name my-project"), "index_folder"),
    (re.compile(r"set a multilingual embedding model to search them by meaning"), "multilingual"),
]


def from_sql(text: str | None) -> Hint | None:
    """The hint a ``rag.*`` function raised (its SQL rendering), None when it is not one of ours."""
    for pattern, action in _SQL_HINTS:
        match = pattern.fullmatch((text or "").strip())
        if match:
            return Hint(action, match.group(1).replace("''", "'") if match.groups() else "")
    return None
