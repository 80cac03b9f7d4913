"""rag.search's ranking step (sql/036_ranking.sql) on small indexed projects: a query naming a
definition puts it first, tests are demoted yet reachable on purpose, prose and release notes
yield to code unless a query asks for them, one file does not fill the top k, path classes, the
priors' overrides and their errors, and the files arm (modules by the mean of their chunk vectors)."""

import json
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from fakes import HashEmbedder
from psycopg.rows import dict_row

from rag import db
from rag.config import ChunkSettings, SearchConfig, SourceSpec
from rag.indexer import index_source
from rag.providers.rerankers import NoReranker
from rag.search import Searcher, SearchRequest


def rows(target: db.DatabaseTarget, query: str, *params: Any) -> list[dict[str, Any]]:
    with psycopg.connect(target.url, row_factory=dict_row, autocommit=True) as conn:
        return conn.execute(query.encode(), params or None).fetchall()


def index_tree(target: db.DatabaseTarget, root: Path, files: dict[str, str], max_tokens: int = 60) -> HashEmbedder:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    embedder = HashEmbedder()
    with db.connect(target) as conn:
        index_source(conn, SourceSpec("p", "local", str(root)), root, embedder, ChunkSettings(max_tokens, 0))
    return embedder


def search(target: db.DatabaseTarget, embedder: HashEmbedder, query: str, top_k: int = 10,
           **options: Any) -> list[dict[str, Any]]:
    """rag.search hybrid (the query's HashEmbedder vector) with these options (rag.search_options), each
    chunk a hit of its own unless mergeAdjacent is given (the ranking step is what is tested)."""
    vector = "[" + ",".join(map(str, embedder.embed_query(query))) + "]"
    return rows(target, "SELECT * FROM rag.search(%s, %s::vector, %s, options => %s)", query, vector, top_k,
                json.dumps({"mergeAdjacent": {"documents": False, "code": False}, **options}))


# A class split into chunks (its header, then its methods), and code using it everywhere.
CART = (
    "class ShoppingCart:\n"
    "    '''A shopping cart holding items.'''\n\n"
    "    def __init__(self):\n        self.items = []\n\n"
    + "".join(f"    def add_{n}(self, item):\n        '''ShoppingCart add {n}.'''\n"
              f"        self.items.append(item)\n        return ShoppingCart\n\n" for n in range(6))
)
USES = "from shop.cart import ShoppingCart\n\n\ndef checkout(cart: ShoppingCart) -> ShoppingCart:\n" \
       "    '''ShoppingCart ShoppingCart ShoppingCart.'''\n    return ShoppingCart()\n"
TESTS = "from shop.cart import ShoppingCart\n\n\ndef test_cart_total():\n" \
        "    cart = ShoppingCart()\n    assert ShoppingCart and cart.items == []\n"


@pytest.fixture
def shop(rag_db: db.DatabaseTarget, tmp_path: Path) -> HashEmbedder:
    return index_tree(rag_db, tmp_path / "shop", {
        "shop/cart.py": CART, "shop/checkout.py": USES, "tests/test_cart.py": TESTS,
        "shop/__init__.py": "from shop.cart import ShoppingCart\nfrom shop.checkout import checkout\n",
    })


def test_a_symbol_query_puts_its_definition_first(rag_db: db.DatabaseTarget, shop: HashEmbedder) -> None:
    for query in ("ShoppingCart", "shop.cart.ShoppingCart", "shop/cart.ShoppingCart", "ShoppingCart()",
                  "shoppingcart"):
        found = search(rag_db, shop, query)
        assert (found[0]["path"], found[0]["fqn"]) == ("shop/cart.py", "ShoppingCart"), query
    plain = {r["chunk_id"]: r["score"] for r in search(rag_db, shop, "ShoppingCart", priors={"definition": 0})}
    boosted = search(rag_db, shop, "ShoppingCart")
    # The definition gains twice the best fused score (the best here: nothing outranks it unboosted).
    assert boosted[0]["score"] == pytest.approx(plain[boosted[0]["chunk_id"]] + 2 * max(plain.values()))
    assert all(plain[r["chunk_id"]] == r["score"] for r in boosted[1:]), "nothing else is boosted"
    method = search(rag_db, shop, "ShoppingCart.add_3")
    assert method[0]["fqn"] == "ShoppingCart.add_3"


def test_a_definition_the_arms_missed_is_added(rag_db: db.DatabaseTarget, shop: HashEmbedder) -> None:
    """Found by name though neither arm ranks it: one candidate per arm here."""
    found = search(rag_db, shop, "ShoppingCart", retrieveTopK=1, top_k=1)
    assert found[0]["fqn"] == "ShoppingCart" and found[0]["bm25_rank"] is None
    other_source = rows(rag_db, """SELECT count(*) AS n FROM rag.search('ShoppingCart', filters => '{"pathPrefix": "tests/"}',
                                                                options => '{"vectorWeight": 0}')""")
    assert other_source[0]["n"] == 1, "filters hold for added definitions too"


def test_tests_are_demoted_and_reachable_on_purpose(rag_db: db.DatabaseTarget, shop: HashEmbedder) -> None:
    def test_rank(**args: Any) -> int:
        found = search(rag_db, shop, "cart items", top_k=20, **args)
        return next(i for i, r in enumerate(found) if r["path"] == "tests/test_cart.py")

    def test_score(**args: Any) -> float:
        found = search(rag_db, shop, "cart items", top_k=20, **args)
        return next(r["score"] for r in found if r["path"] == "tests/test_cart.py")

    assert test_score(includeTests=True) == pytest.approx(10 * test_score())
    assert test_score(priors={"test": 0.05}) == pytest.approx(0.5 * test_score())
    assert test_rank(includeTests=True) <= test_rank()
    about_tests = search(rag_db, shop, "cart items tests", top_k=20)
    worded = next(r["score"] for r in about_tests if r["path"] == "tests/test_cart.py")
    assert worded == pytest.approx(next(r["score"] for r in search(
        rag_db, shop, "cart items tests", top_k=20, includeTests=True) if r["path"] == "tests/test_cart.py")), \
        "a query about tests takes them at full weight"


def test_one_file_does_not_fill_the_top_k(rag_db: db.DatabaseTarget, shop: HashEmbedder) -> None:
    def cart_chunks(found: list[dict[str, Any]]) -> int:
        return sum(r["path"] == "shop/cart.py" for r in found[:4])

    free = search(rag_db, shop, "add item append", perFile=100)
    assert cart_chunks(free) == 4, "the arms alone: one file fills the top 4"
    assert cart_chunks(search(rag_db, shop, "add item append", priors={"decay": 0})) == 3
    # Each chunk of a file after its first per_file (3) is worth decay (0.8) times the one before.
    decayed = {r["chunk_id"]: r["score"] for r in search(rag_db, shop, "add item append")}
    in_cart = [r for r in free if r["path"] == "shop/cart.py"]
    assert [decayed[r["chunk_id"]] for r in in_cart] == pytest.approx(
        [r["score"] * 0.8 ** max(0, i - 2) for i, r in enumerate(in_cart)])
    assert cart_chunks(search(rag_db, shop, "add item append", perFile=2, priors={"decay": 0})) == 2


def test_a_query_asking_how_parts_fit_spreads_over_files(rag_db: db.DatabaseTarget, shop: HashEmbedder) -> None:
    """A question of how something is built wants a set of files: from a file's second chunk on, each is
    worth spread (0.3) of the one before, where a plain query keeps three chunks of a file whole."""
    def files_in_top(found: list[dict[str, Any]], k: int) -> int:
        return len({r["path"] for r in found[:k]})

    plain, built = "add item append ShoppingCart", "how does ShoppingCart add item append"
    assert files_in_top(search(rag_db, shop, plain), 3) == 1, "a plain query: one file fills the top 3"
    assert files_in_top(search(rag_db, shop, built), 3) >= 2, "how it is built: two files in the top 3"
    free = search(rag_db, shop, built, perFile=100, priors={"spread": 1})
    spread = {r["chunk_id"]: r["score"] for r in search(rag_db, shop, built, top_k=20)}
    in_cart = [r for r in free if r["path"] == "shop/cart.py"]
    assert [spread[r["chunk_id"]] for r in in_cart if r["chunk_id"] in spread] == pytest.approx(
        [r["score"] * 0.3 ** i for i, r in enumerate(in_cart) if r["chunk_id"] in spread])
    # spread 1 is off: the plain decay (perFile 3, decay 0.8) again
    off = {r["chunk_id"]: r["score"] for r in search(rag_db, shop, built, top_k=20, priors={"spread": 1})}
    assert [off[r["chunk_id"]] for r in in_cart if r["chunk_id"] in off] == pytest.approx(
        [r["score"] * 0.8 ** max(0, i - 2) for i, r in enumerate(in_cart) if r["chunk_id"] in off])


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("how does Execute find the subcommand to run", True),
        ("How are a parent's persistent flags merged into a subcommand's flags?", True),
        ("where are the private keys of a logger defined", True),
        ("which modules parse the request body", True),
        ("in which order do the pre-run and post-run hooks execute", True),
        ("what is the public API the package exposes", True),
        ("how can a handler veto a change before it is applied", True),
        ("what does the package export at its entry point", True),
        ("which options does stringify accept, and how are bad ones rejected", True),
        ("как устроен роутер запросов", True),
        ("где определены внутренние ключи логгера", True),
        ("какие модули разбирают тело запроса", True),
        ("how do I write my own field type", False),
        ("where do I put the settings file", False),
        ("Check fields, names, and conditions of indexes.", False),
        ("Returns the number of matches of the pattern", False),
        ("restart the server when a source file changes", False),
        ("how to register a custom field", False),
        ("как настроить прокси для клиента", False),
        ("перезапустить сервер при изменении файла", False),
    ],
)
def test_queries_asking_how_parts_fit(rag_db: db.DatabaseTarget, query: str, expected: bool) -> None:
    assert rows(rag_db, "SELECT rag._asks_how_built(%s) AS b", query)[0]["b"] is expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what does the package export at its entry point", True),
        ("what is the public API the package exposes at its entry point", True),
        ("which functions are exported by the library", True),
        ("where is the entry point of the cli", True),
        ("how are the parsers exposed to users", True),
        ("что экспортирует пакет", True),
        ("где точка входа приложения", True),
        ("какой публичный API у библиотеки", True),
        ("This is the entry point for the update query.", False),
        ("Used for internal testing purposes only. Do not export from library.", False),
        ("export the table as csv", False),
        ("what does the parser return for an empty string", False),
        ("экспортировать таблицу в csv", False),
    ],
)
def test_queries_asking_what_a_package_exports(rag_db: db.DatabaseTarget, query: str, expected: bool) -> None:
    assert rows(rag_db, "SELECT rag._asks_for_exports(%s) AS e", query)[0]["e"] is expected


PACKAGE = {
    "package.json": '{\n  "name": "shop",\n  "main": "lib/index.js",\n  "types": "types/shop.d.ts"\n}\n',
    "lib/index.js": "'use strict'\nmodule.exports = {\n  cart: require('./cart'),\n"
                    "  price: require('./price')\n}\n",
    "lib/cart.js": "// The package exports a cart: add items, export them at checkout.\n"
                   "function cart () {\n  return { items: [] }\n}\nmodule.exports = cart\n",
    "lib/price.js": "function price (items) {\n  return items.length\n}\nmodule.exports = price\n",
    "lib/unused.js": "function unused () {\n  return 0\n}\nmodule.exports = unused\n",
    "examples/demo/package.json": '{"name": "demo", "main": "main.js"}\n',
    "examples/demo/main.js": "// What the demo package exports at its entry point.\nmodule.exports = 1\n",
}


def test_a_question_about_what_a_package_exports_finds_its_entry_files(
    rag_db: db.DatabaseTarget, tmp_path: Path,
) -> None:
    """package.json's main (lib/index.js) gets a share of the best fused score when the query asks what
    the package exports, even where the arms missed it; types/shop.d.ts is not in the tree, and an
    example's package is not the project's; another query, or the entry prior 0, leaves it where the
    arms put it."""
    embedder = index_tree(rag_db, tmp_path / "p", PACKAGE)
    query = "what does the package export at its entry point"
    assert search(rag_db, embedder, query)[0]["path"] == "lib/index.js"
    entries = rows(rag_db, "SELECT f.path FROM rag._entry_chunks('{}', '{}', NULL, NULL, NULL, NULL) e"
                           " JOIN rag.chunks c ON c.id = e.chunk_id JOIN rag.files f ON f.id = c.file_id")
    assert [r["path"] for r in entries] == ["lib/index.js"], "an example package's entries are not the package's"
    assert search(rag_db, embedder, query, priors={"entry": 0})[0]["path"] != "lib/index.js"
    assert search(rag_db, embedder, "cart items export checkout")[0]["path"] == "lib/cart.js"


PRICING = "".join(f"def rule_{n}(order):\n    return order.total * {n}\n\n\n" for n in range(4))
PRICING_TESTS = "from shop.pricing import rule_1\n\n\ndef test_discount_coupon():\n" \
                "    # A discount coupon lowers the price.\n    assert rule_1(discount_coupon()) < 10\n"


def test_tests_lift_the_module_they_are_named_after(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    """Only the test has the query's words; its module's chunk nearest the query gains tested (0.1)
    times the test's fused score, and nothing else moves. In another language: nothing."""
    embedder = index_tree(rag_db, tmp_path / "shop", {
        "shop/pricing.py": PRICING, "tests/test_pricing.py": PRICING_TESTS, "web/pricing.js": "var rule = 1;\n"})
    query = "discount coupon"
    lifted = {r["chunk_id"]: r["score"] for r in search(rag_db, embedder, query)}
    plain = {r["chunk_id"]: r["score"] for r in search(rag_db, embedder, query, priors={"tested": 0})}
    test_fused = next(r["score"] for r in search(rag_db, embedder, query, includeTests=True)
                      if r["path"] == "tests/test_pricing.py")
    vector = "[" + ",".join(map(str, embedder.embed_query(query))) + "]"
    nearest = rows(rag_db, "SELECT c.id FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id "
                           "JOIN rag.embeddings e ON e.content_hash = c.content_hash "
                           "WHERE f.path = 'shop/pricing.py' ORDER BY e.embedding <=> %s::vector, c.id LIMIT 1",
                   vector)[0]["id"]
    assert lifted[nearest] == pytest.approx(plain.get(nearest, 0) + 0.1 * test_fused)
    assert {k: v for k, v in lifted.items() if k != nearest} == {k: v for k, v in plain.items() if k != nearest}


def test_modules_sharing_a_tested_name_split_the_vote(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    embedder = index_tree(rag_db, tmp_path / "shop", {
        "shop/pricing.py": PRICING, "admin/pricing.py": PRICING, "tests/test_pricing.py": PRICING_TESTS})
    query = "discount coupon"
    lifted = {r["chunk_id"]: r for r in search(rag_db, embedder, query)}
    plain = {r["chunk_id"]: r["score"] for r in search(rag_db, embedder, query, priors={"tested": 0})}
    test_fused = next(r["score"] for r in search(rag_db, embedder, query, includeTests=True)
                      if r["path"] == "tests/test_pricing.py")
    gains = {r["path"]: r["score"] - plain.get(chunk, 0) for chunk, r in lifted.items()
             if r["score"] != plain.get(chunk)}
    assert gains == pytest.approx({"shop/pricing.py": 0.05 * test_fused, "admin/pricing.py": 0.05 * test_fused})


@pytest.mark.parametrize(
    ("path", "stem"),
    [
        ("tests/test_fields.py", "fields"),
        ("tornado/test/web_test.py", "web"),
        ("pkg/client_test.go", "client"),
        ("web/src/app.spec.ts", "app"),
        ("src/app.test.jsx", "app"),
        ("src/test/java/CartTest.java", "cart"),
        ("spec/cart_spec.rb", "cart"),
        ("test/parse.js", "parse"),
    ],
)
def test_the_module_a_test_is_named_after(rag_db: db.DatabaseTarget, path: str, stem: str) -> None:
    assert rows(rag_db, "SELECT rag._tested_stem(%s) AS s", path)[0]["s"] == stem


@pytest.mark.parametrize(
    ("path", "content", "expected"),
    [
        ("src/app.py", "x = 1", None),
        ("tests/test_app.py", "", "test"),
        ("pkg/app_test.go", "", "test"),
        ("web/src/app.spec.ts", "", "test"),
        ("src/__tests__/app.js", "", "test"),
        ("src/main/java/AppTest.java", "", "test"),
        ("tests/fixtures/data.py", "", "fixture"),
        ("examples/hello.py", "", "example"),
        ("benchmarks/run.py", "", "benchmark"),
        ("eval/run_eval.py", "", "benchmark"),
        ("vendor/lib/x.go", "", "vendored"),
        ("node_modules/lodash/map.js", "", "vendored"),
        ("static/app.min.js", "", "generated"),
        ("proto/api_pb2.py", "", "generated"),
        ("typings/index.d.ts", "", "stub"),
        ("pkg/core.pyi", "", "stub"),
        ("pkg/_compat.py", "", "compat"),
        ("CHANGELOG.md", "", "changelog"),
        ("HISTORY.rst", "", "changelog"),
        ("docs/change_log.md", "", "changelog"),
        ("docs/releases/v6.3.0.rst", "", "changelog"),
        ("NEWS", "", "changelog"),
        ("src/history.py", "", None),
        ("releases/build.py", "", None),
        ("docs/testing.md", "", None),
        ("latest/contest.py", "", None),
    ],
)
def test_path_classes(rag_db: db.DatabaseTarget, path: str, content: str, expected: str | None) -> None:
    assert rows(rag_db, "SELECT rag.path_class(%s) AS c", path)[0]["c"] == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("how do I write my own field type", True),
        ("How can we pass context to fields", True),
        ("what is the best way to deploy", True),
        ("what changed when upgrading to 3.0", True),
        ("deprecated options of the parser", True),
        ("how do url patterns map to handlers", False),
        ("restart the server when a source file changes", False),
        ("sign a cookie so the client cannot tamper with it", False),
        ("Как настроить прокси для клиента", True),
        ("как мне добавить свой тип поля", True),
        ("можно ли передать контекст в поля", True),
        ("что изменилось в релизе 3.0", True),
        ("устаревшие параметры парсера", True),
        ("как устроен роутер запросов", False),
        ("подписать cookie, чтобы клиент не мог её подменить", False),
    ],
)
def test_queries_asking_for_prose(rag_db: db.DatabaseTarget, query: str, expected: bool) -> None:
    assert rows(rag_db, "SELECT rag._asks_for_prose(%s) AS p", query)[0]["p"] is expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("where are the tests for redirects", True),
        ("pytest fixture for a temporary app", True),
        ("Тесты для редиректов", True),
        ("фикстура временного приложения", True),
        ("как устроено тестирование", True),
        ("retry the request when the connection drops", False),
        ("latest contest results", False),
        ("повторить запрос при обрыве соединения", False),
    ],
)
def test_queries_asking_about_tests(rag_db: db.DatabaseTarget, query: str, expected: bool) -> None:
    assert rows(rag_db, "SELECT (rag.parse_query(%s)).asks_for_tests AS t", query)[0]["t"] is expected


def test_prose_and_release_notes_yield_to_code_unless_asked_for(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    """A guide page and the changelog talk about what the code does: a behaviour question wants the code,
    a how-to question the guide, a question about releases the changelog."""
    embedder = index_tree(rag_db, tmp_path / "p", {
        "pkg/cookies.py": "def sign_cookie(value, secret):\n    return hmac(secret, value)  # sign a cookie\n",
        "docs/cookies.md": "# Cookies\n\nSign a cookie with sign_cookie and a secret so that the client "
                           "cannot tamper with it.\n",
        "CHANGELOG.md": "# Changelog\n\n## 2.0\n\nsign_cookie signs a cookie with a secret.\n",
    })

    def scores(query: str, **args: Any) -> dict[str, float]:
        return {r["path"]: r["score"] for r in search(rag_db, embedder, query, **args)}

    neutral = {"docs": 1, "changelog": 1}
    behaviour, plain = scores("sign a cookie secret"), scores("sign a cookie secret", priors=neutral)
    assert behaviour["docs/cookies.md"] == pytest.approx(0.5 * plain["docs/cookies.md"])
    assert behaviour["CHANGELOG.md"] == pytest.approx(0.5 * plain["CHANGELOG.md"]), "its class prior alone"
    assert behaviour["pkg/cookies.py"] == pytest.approx(plain["pkg/cookies.py"])
    how_to = "how do I sign a cookie secret"
    assert scores(how_to)["docs/cookies.md"] == pytest.approx(scores(how_to, priors=neutral)["docs/cookies.md"])
    releases = "sign a cookie secret release"
    assert scores(releases)["CHANGELOG.md"] == pytest.approx(scores(releases, priors=neutral)["CHANGELOG.md"])


@pytest.mark.parametrize(
    ("path", "content", "expected"),
    [
        ("pkg/__init__.py", "from .a import A\nfrom .b import (\n    B,\n    C,\n)\n__all__ = ['A', 'B']\n", True),
        ("pkg/__init__.py", "from .a import A\n\ndef helper():\n    return A()\n", False),
        ("src/index.ts", "export { a } from './a';\nexport * from './b';\nexport type { T } from './t';\n", True),
        ("src/index.ts", "export function a() { return 1; }\n", False),
        ("src/a.py", "from .a import A\n", False),
    ],
)
def test_reexport_files(rag_db: db.DatabaseTarget, path: str, content: str, expected: bool) -> None:
    assert rows(rag_db, "SELECT rag._reexports_only(%s, %s) AS r", path, content)[0]["r"] is expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("ShoppingCart", [(None, "ShoppingCart")]),
        ("Cart.total", [(None, "Cart.total"), ("Cart", "total")]),
        ("A::B", [(None, "A.B"), ("A", "B")]),
        ("django.db.models.QuerySet", [(None, "django.db.models.QuerySet"), ("django", "db.models.QuerySet"),
                                       ("django/db", "models.QuerySet"), ("django/db/models", "QuerySet")]),
        ("pkg/mod.Name", [("pkg/mod", "Name")]),
        ("shop/cart.py:Cart.total", [("shop/cart", "Cart.total")]),
        ("total()", [(None, "total")]),
        ("how does combineLatest emit values", []),
        ("where is the server started", []),
    ],
)
def test_query_names(rag_db: db.DatabaseTarget, query: str, expected: list[tuple[Any, ...]]) -> None:
    found = rows(rag_db, "SELECT module, fqn FROM rag._query_names(%s) ORDER BY module NULLS FIRST", query)
    assert [(r["module"], r["fqn"]) for r in found] == expected


def test_a_sql_definition_question(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    """A question about a SQL function (the fusion of this repository) finds its definition."""
    sql = Path(__file__).resolve().parents[1] / "sql" / "034_fusion.sql"
    embedder = index_tree(rag_db, tmp_path / "repo", {
        "sql/034_fusion.sql": sql.read_text(),
        "tests/test_fusion.py": "def test_fused_candidates_combine_keyword_and_vector_rankings():\n"
                                "    '''combine keyword and vector rankings: rrf fusion of both arms'''\n"
                                "    assert rag._fused_candidates('combine keyword vector rankings')\n",
    }, max_tokens=256)
    found = search(rag_db, embedder, "_fused_candidates")
    assert found[0]["path"] == "sql/034_fusion.sql" and "FUNCTION rag._fused_candidates" in found[0]["content"]


@pytest.mark.parametrize(
    ("priors", "message"),
    [
        ("'{\"tests\": 0.5}'", "unknown prior 'tests'; known: benchmark,"),
        ("'{\"test\": -1}'", "priors must be numbers of 0 or more, not test: -1"),
        ("'{\"test\": \"low\"}'", "not test: \"low\""),
        ("'[1]'", "priors must be a JSON object"),
    ],
)
def test_bad_priors_are_named(rag_db: db.DatabaseTarget, priors: str, message: str) -> None:
    with pytest.raises(psycopg.Error) as err:
        rows(rag_db, "SELECT * FROM rag.search('x', options => jsonb_build_object('priors', %s::jsonb))",
             priors.strip("'"))
    assert message in str(err.value)
    with pytest.raises(psycopg.Error, match="option perFile must be a whole number of at least 1, not 0"):
        rows(rag_db, """SELECT * FROM rag.search('x', options => '{"perFile": 0}')""")


def test_searcher_passes_config_priors_and_per_file(rag_db: db.DatabaseTarget, shop: HashEmbedder) -> None:
    with db.connect(rag_db) as conn:
        def paths(settings: SearchConfig, **request: Any) -> list[str]:
            found = Searcher(conn, settings, shop, NoReranker()).search(SearchRequest("cart items", top_k=20, **request))
            return [h.path for h in found.hits]

        default = paths(SearchConfig())
        assert paths(SearchConfig(priors={"test": 0.1})) == default
        buried = paths(SearchConfig(priors={"test": 0.0}))
        assert buried[-1] == "tests/test_cart.py" != paths(SearchConfig(priors={"test": 1.0}))[-1]
        assert paths(SearchConfig(priors={"test": 0.0}), include_tests=True) == paths(
            SearchConfig(priors={"test": 1.0}))
        one = paths(SearchConfig(per_file=1))
        assert paths(SearchConfig(), per_file=1) == one


# Four code modules of two chunks each, prose, and a test: the files arm ranks the modules alone.
MODULES = {f"pkg/mod_{n}.py": "".join(f"def f{n}_{m}(x):\n    return x + {m} * {n}\n\n\n" for m in range(2))
           for n in range(4)}
BESIDE = {"README.md": "# Guide\n\nreturn x plus one\n", "tests/test_mod_0.py": "def test_f():\n    assert f0_0(1)\n"}


def vector_of(text: str) -> np.ndarray:
    return np.array(json.loads(text))


def file_vectors(target: db.DatabaseTarget) -> dict[str, np.ndarray]:
    return {r["path"]: vector_of(r["embedding"]) for r in rows(
        target, "SELECT f.path, v.embedding::text FROM rag.file_vectors v JOIN rag.files f ON f.id = v.file_id")}


def chunk_vectors(target: db.DatabaseTarget, path: str) -> dict[int, np.ndarray]:
    return {r["id"]: vector_of(r["embedding"]) for r in rows(
        target, "SELECT c.id, e.embedding::text FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id "
                "JOIN rag.embeddings e ON e.content_hash = c.content_hash WHERE f.path = %s", path)}


def files_by_distance(target: db.DatabaseTarget, query_vector: np.ndarray) -> list[str]:
    """The modules by the cosine distance of the mean of their chunk vectors to the query's, nearest first."""
    def distance(path: str) -> float:
        mean = np.mean(list(chunk_vectors(target, path).values()), axis=0)
        return 1 - float(mean @ query_vector / np.linalg.norm(mean) / np.linalg.norm(query_vector))
    return sorted(MODULES, key=distance)


def test_file_vectors_are_the_mean_of_their_chunks_and_follow_edits(rag_db: db.DatabaseTarget,
                                                                    tmp_path: Path) -> None:
    root = tmp_path / "p"
    index_tree(rag_db, root, {**MODULES, **BESIDE}, max_tokens=12)
    stored = file_vectors(rag_db)
    # Code files in no path class only: a test is not a module the arm may lift, and a package
    # shipping more tests than modules (pino: 136 beside 23) filled its nearest files with tests.
    assert set(stored) == set(MODULES)
    for path in MODULES:
        assert stored[path] == pytest.approx(np.mean(list(chunk_vectors(rag_db, path).values()), axis=0))

    (root / "pkg/mod_0.py").write_text("def g(y):\n    return y\n")
    (root / "pkg/mod_1.py").unlink()
    index_tree(rag_db, root, {}, max_tokens=12)
    edited = file_vectors(rag_db)
    assert "pkg/mod_1.py" not in edited
    assert edited["pkg/mod_0.py"] == pytest.approx(np.mean(list(chunk_vectors(rag_db, "pkg/mod_0.py").values()), axis=0))
    assert edited["pkg/mod_0.py"] != pytest.approx(stored["pkg/mod_0.py"])
    assert edited["pkg/mod_2.py"] == pytest.approx(stored["pkg/mod_2.py"])
    source_id = rows(rag_db, "SELECT id FROM rag.sources WHERE name = 'p'")[0]["id"]
    assert rows(rag_db, "SELECT rag.refresh_file_vectors(%s, 'test@8') AS n", source_id)[0]["n"] == 0, "none missing"


def test_the_files_arm_lifts_each_near_modules_best_candidate(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    """The nth nearest module's best candidate gains files_weight (0.4) / (rrf_k + n); prose and
    tests gain nothing, and files_weight 0 turns the arm off."""
    embedder = index_tree(rag_db, tmp_path / "p", {**MODULES, **BESIDE}, max_tokens=12)
    query = "return x"
    priors = {"tested": 0}  # (the test would lift its module too)
    plain = {r["chunk_id"]: r for r in search(rag_db, embedder, query, top_k=20, priors=priors, filesWeight=0)}
    lifted = {r["chunk_id"]: r["score"] for r in search(rag_db, embedder, query, top_k=20, priors=priors)}
    assert len(plain) == 10, "every chunk is a candidate: two per module"
    expected = {chunk: r["score"] for chunk, r in plain.items()}
    for rank, path in enumerate(files_by_distance(rag_db, np.array(embedder.embed_query(query))), start=1):
        best = max((r for r in plain.values() if r["path"] == path), key=lambda r: (r["score"], -r["chunk_id"]))
        expected[best["chunk_id"]] += 0.4 / (10 + rank)
    assert lifted == pytest.approx(expected)
    assert {r["chunk_id"]: r["score"] for r in search(rag_db, embedder, query, top_k=20, priors=priors,
                                                      filesWeight=0.0)} == pytest.approx(
        {chunk: r["score"] for chunk, r in plain.items()})


def test_a_module_without_candidates_lifts_its_chunk_nearest_the_query(rag_db: db.DatabaseTarget,
                                                                       tmp_path: Path) -> None:
    embedder = index_tree(rag_db, tmp_path / "p", {**MODULES, **BESIDE}, max_tokens=12)
    query = np.array(embedder.embed_query("return x"))
    literal = "[" + ",".join(map(str, query)) + "]"
    candidate = min(chunk_vectors(rag_db, "pkg/mod_0.py"))  # the one candidate, of mod_0

    def lifts(fusion: str = "rrf", **filters: str) -> dict[int, float]:
        named = "".join(f", {name} => {value}" for name, value in filters.items())
        return {r["chunk_id"]: r["lift"] for r in rows(
            rag_db, f"SELECT * FROM rag._file_lifts(%s::bigint[], %s::float8[], %s::vector, 'test@8', 0.3, 10, %s{named})",
            [candidate], [1.0], literal, fusion)}

    order = files_by_distance(rag_db, query)
    expected = {}
    for rank, path in enumerate(order, start=1):
        chunks = chunk_vectors(rag_db, path)
        chosen = candidate if path == "pkg/mod_0.py" else max(chunks, key=lambda c: (chunks[c] @ query, -c))
        expected[chosen] = 0.3 / (10 + rank)
    assert lifts() == pytest.approx(expected)
    spread = lifts("scores")
    assert sorted(spread.values()) == pytest.approx([0, *sorted(spread.values())[1:3], 0.3]), "0 .. weight"
    only = lifts(path_prefix="'pkg/mod_2'")
    assert list(only.values()) == pytest.approx([0.3 / 11]) and set(only) <= set(chunk_vectors(rag_db, "pkg/mod_2.py"))
    assert lifts(source_types="ARRAY['markdown']") == {}
    assert len(lifts(sources="ARRAY['p']", languages="ARRAY['python']")) == 4


def test_files_weight_is_checked_and_passed_from_config(rag_db: db.DatabaseTarget, shop: HashEmbedder) -> None:
    with pytest.raises(psycopg.Error, match="option filesWeight must be a number of at least 0, not -1"):
        rows(rag_db, """SELECT * FROM rag.search('x', options => '{"filesWeight": -1}')""")
    with db.connect(rag_db) as conn:
        def scores(settings: SearchConfig) -> list[float]:
            found = Searcher(conn, settings, shop, NoReranker()).search(SearchRequest("cart items", top_k=20))
            return sorted(h.score for h in found.hits)

        assert scores(SearchConfig(files_weight=0)) != scores(SearchConfig()) == scores(SearchConfig(files_weight=0.4))


@pytest.mark.parametrize(
    ("path", "folder"),
    [
        ("pydantic/v1/main.py", "pydantic/v1/"),
        ("pydantic/v1/sub/deep.py", "pydantic/v1/"),
        ("v2/client.go", "v2/"),
        ("api/v1/handlers/users.py", "api/v1/"),
        ("gen/api_v1/x.py", "gen/api_v1/"),
        ("pkg/legacy/parse.py", "pkg/legacy/"),
        ("pydantic/deprecated/json.py", "pydantic/deprecated/"),
        ("a/v1/b/old/c.py", "a/v1/b/old/"),  # (the innermost)
        ("uuid/src/v1.ts", None),  # files, not folders
        ("uuid/src/v4.ts", None),
        ("src/dev2/x.py", None),
        ("src/kv1/x.py", None),
        ("src/oldest/x.py", None),
        ("src/main.py", None),
    ],
)
def test_folders_that_may_hold_an_older_copy(rag_db: db.DatabaseTarget, path: str, folder: str | None) -> None:
    assert rows(rag_db, "SELECT rag._copy_folder(%s) AS f", path)[0]["f"] == folder


OLD_AND_NEW = {
    # pydantic's shape: the v1 API shipped inside the v2 package
    "pyd/__init__.py": "", "pyd/main.py": "def create_model(name):\n    return name\n",
    "pyd/v1/__init__.py": "", "pyd/v1/main.py": "def create_model(name):\n    return [name]\n",
    "pyd/v1/only_here.py": "def helper():\n    return 1\n",
    # a web API's only version, sharing nothing but a package front with its parent
    "api/__init__.py": "", "api/v1/__init__.py": "", "api/v1/handlers.py": "def users():\n    return []\n",
    # versions side by side; numbers, not text, compare (v9 < v10)
    "svc/v1/a.py": "A = 1\n", "svc/v2/a.py": "A = 2\n",
    "web/v9/a.py": "A = 9\n", "web/v10/a.py": "A = 10\n",
    "gen/api_v1/x.py": "X = 1\n", "gen/api_v2/x.py": "X = 2\n",
    # Go's major-version folder repeats the module above it and is the current one
    "mod/client.go": "package mod\n\nfunc Get() int { return 1 }\n",
    "mod/v2/client.go": "package mod\n\nfunc Get() int { return 2 }\n",
    # legacy/ and deprecated/ are older whatever lies beside them
    "lib/legacy/parse.py": "def parse(s):\n    return s\n",
    "lib/deprecated/parse.py": "def parse(s):\n    return s.strip()\n",
    # uuid's v1.ts ... v4.ts are files
    "uuid/v1.ts": "export function v1() { return 1; }\n", "uuid/v4.ts": "export function v4() { return 4; }\n",
}


@pytest.mark.parametrize(
    ("folder", "older"),
    [
        ("pyd/v1/", True),
        ("api/v1/", False),
        ("svc/v1/", True),
        ("svc/v2/", False),
        ("web/v9/", True),
        ("web/v10/", False),
        ("gen/api_v1/", True),
        ("gen/api_v2/", False),
        ("mod/v2/", False),
        ("lib/legacy/", True),
        ("lib/deprecated/", True),
        (None, False),
    ],
)
def test_older_copies_are_decided_by_the_tree(rag_db: db.DatabaseTarget, tmp_path: Path, folder: str | None,
                                              older: bool) -> None:
    index_tree(rag_db, tmp_path / "p", OLD_AND_NEW)
    source_id = rows(rag_db, "SELECT id FROM rag.sources WHERE name = 'p'")[0]["id"]
    assert rows(rag_db, "SELECT rag._older_copy(%s, %s) AS o", source_id, folder)[0]["o"] is older


@pytest.mark.parametrize(
    ("query", "folder", "expected"),
    [
        ("create_model", "pyd/v1/", False),
        ("create_model in pydantic v1", "pyd/v1/", True),
        ("version 1 create_model", "pyd/v1/", True),
        ("create_model v10", "pyd/v1/", False),
        ("the deprecated json encoder", "pyd/deprecated/", True),
        ("deprecation warnings", "pyd/deprecated/", True),
        ("legacy parser", "lib/legacy/", True),
        ("устаревший парсер", "lib/legacy/", True),
        ("parse a string", "lib/legacy/", False),
    ],
)
def test_queries_naming_an_older_copy(rag_db: db.DatabaseTarget, query: str, folder: str, expected: bool) -> None:
    assert rows(rag_db, "SELECT rag._names_copy(%s, %s) AS n", query, folder)[0]["n"] is expected


def test_an_older_copy_yields_to_the_current_unless_named(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    """A name defined in the current package and in its v1 copy: the copy's chunks are worth the older
    prior (0.5) unless the query names v1; the copy's files get no file vector (the files arm's)."""
    embedder = index_tree(rag_db, tmp_path / "p", OLD_AND_NEW)
    for query in ("create_model", "create_model of v1"):
        plain = {r["path"]: r["score"] for r in search(rag_db, embedder, query, priors={"older": 1})}
        ranked = {r["path"]: r["score"] for r in search(rag_db, embedder, query)}
        named = "v1" in query
        assert ranked["pyd/v1/main.py"] == pytest.approx(plain["pyd/v1/main.py"] * (1 if named else 0.5))
        assert ranked["pyd/main.py"] == pytest.approx(plain["pyd/main.py"])
    assert search(rag_db, embedder, "create_model")[0]["path"] == "pyd/main.py"
    stored = {r["path"] for r in rows(rag_db, "SELECT f.path FROM rag.file_vectors v JOIN rag.files f ON f.id = v.file_id")}
    assert "pyd/main.py" in stored and "svc/v2/a.py" in stored and "mod/v2/client.go" in stored
    assert not stored & {"pyd/v1/main.py", "pyd/v1/only_here.py", "svc/v1/a.py", "lib/legacy/parse.py"}
