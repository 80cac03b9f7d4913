"""The evaluation-set builders' parsing and the peer baselines of ``make eval`` (eval/), on
tiny inline fixtures: JSDoc stripping and spans (TypeScript, JavaScript), reST sections, man pages
as Markdown, Markdown titles and HTML tables of contents, window BM25 (English and Russian, 40-line windows), naive RRF and the margin over the best peer. Nothing is downloaded."""

import hashlib
import io
import tarfile
from pathlib import Path

import common
import pytest
from build_rst_docs import file_cases, leaf_sections, plain, titles
from build_ru_docs import without_contents
from build_ru_man import option_cases, page_case, sentences
from jsdoc import first_paragraph, strip_jsdoc
from man_markdown import man_to_markdown
from peers import (
    BM25_MODE,
    RRF_MODE,
    SEED_MODE,
    Window,
    bm25_rankings,
    line_windows,
    rrf,
    score_window_rankings,
)
from run_eval import margin, summary
from title_cases import file_cases as title_file_cases
from title_cases import title_query, unique_queries

from rag.evaluation import Answer, EvalCase, Metrics

# --- JSDoc ----------------------------------------------------------------------

TS = """import { x } from './x';

/**
 * Emits only the first `count` values, see {@link take} and
 * {@link Observable | the observable}.
 *
 * <span class="informal">Like Array.slice(0, count).</span>
 * @param count How many.
 */
export function first<T>(count: number): T[] {
  return [];
}

/** @deprecated use first */
export function head(): void {}

/**
 * Overload signatures have no body and give no case.
 */
export function over(a: string): string;
export function over(a: any): any {
  return a;
}

export class Queue<T> {
  /**
   * Adds an item at the end of the queue.
   */
  push(item: T): void {
    this.items.push(item);
  }
  private items: T[] = []; /** not alone on its line, kept */
}
"""

JS = """var baseSlice = require('./_baseSlice');

/**
 * Creates an array of elements split into groups the length of `size`.
 *
 * @static
 * @example
 * _.chunk(['a', 'b'], 1);
 */
function chunk(array, size) {
  return baseSlice(array, 0, size);
}

/**
 * Checks if value is classified as an Array object.
 */
var isArray = Array.isArray;

module.exports = chunk;
"""


def test_first_paragraph_stops_at_blank_line_or_tag_and_drops_markup() -> None:
    assert first_paragraph("/**\n * Adds one, see {@link add}.\n * @returns a number\n */") == "Adds one, see add."
    assert first_paragraph("/** @deprecated old */") == ""
    assert first_paragraph("/**\n * <b>Bold</b> &lt;T&gt; `code`\n *\n * more\n */") == "Bold <T> code"


def test_strip_jsdoc_typescript_spans_and_queries() -> None:
    text, definitions = strip_jsdoc(TS, "typescript")
    lines = text.split("\n")
    assert "/**" not in text.replace("/** not alone on its line, kept */", "")
    assert "/** not alone on its line, kept */" in text
    found = {d.name: d for d in definitions}
    assert set(found) == {"first", "push"}, "tag-only comments and overload signatures give no case"
    assert found["first"].query == "Emits only the first count values, see take and the observable."
    assert lines[found["first"].start - 1] == "export function first<T>(count: number): T[] {"
    assert found["first"].end - found["first"].start == 2
    push = found["push"]
    assert (lines[push.start - 1].strip(), lines[push.end - 1].strip()) == ("push(item: T): void {", "}")
    assert push.query == "Adds an item at the end of the queue."


def test_strip_jsdoc_javascript_functions_and_variables() -> None:
    text, definitions = strip_jsdoc(JS, "javascript")
    lines = text.split("\n")
    assert [(d.name, lines[d.start - 1], d.end - d.start) for d in definitions] == [
        ("chunk", "function chunk(array, size) {", 2),
        ("isArray", "var isArray = Array.isArray;", 0),
    ]
    assert definitions[0].query == "Creates an array of elements split into groups the length of size."
    assert "_.chunk" not in text, "the whole comment goes, examples included"


# --- reStructuredText -------------------------------------------------------------

RST = """.. _guide:

=========
The Guide
=========

Intro paragraph.

Installing the package
----------------------

Run pip install with the name of the package and a version pin, in a virtual
environment of its own, so nothing else changes when it updates.

Configuring it
--------------

Parent text.

Short one
~~~~~~~~~

Too short.

Environment variables
~~~~~~~~~~~~~~~~~~~~~

Every option can also come from an environment variable named after it with a
prefix, which is handy in containers and on CI machines that set them.

::

    Not a title
    -----------

----

Trailing text after a transition that is long enough to be a body of twenty words
or more, so the last section has a case of its own here.
"""


def test_titles_and_leaf_sections() -> None:
    lines = RST.split("\n")
    assert [(t.text, t.style) for t in titles(lines)] == [
        ("The Guide", ("=", True)), ("Installing the package", ("-", False)), ("Configuring it", ("-", False)),
        ("Short one", ("~", False)), ("Environment variables", ("~", False)),
    ], "indented lines and transitions are no titles"
    assert [s.title.text for s in leaf_sections(lines)] == ["Installing the package", "Short one",
                                                            "Environment variables"]
    assert plain(":func:`run <app.run>` with ``debug`` and *care*") == "run with debug and care"


def test_rst_file_cases_remove_titles_and_point_at_bodies() -> None:
    text, cases = file_cases(RST, "guide.rst")
    lines = text.split("\n")
    assert [c["query"] for c in cases] == ["Installing the package", "Environment variables"]
    assert "Installing the package" not in text and "Environment variables" not in text
    assert "Configuring it" in text and "Short one" in text, "only the cases' titles are removed"
    first, second = (c["relevant"][0] for c in cases)
    assert lines[first["startLine"] - 1].startswith("Run pip install")
    assert lines[first["endLine"] - 1].startswith("environment of its own")
    assert lines[second["startLine"] - 1].startswith("Every option")
    assert lines[second["endLine"] - 1].startswith("or more, so the last"), "a body runs to the next title"
    assert file_cases(RST, "CHANGES.rst")[1] == []


# --- the peers ------------------------------------------------------------------


def test_bm25_rankings_keep_only_matching_windows() -> None:
    windows = [Window("a", 1, 1, "the cat sat on the mat"), Window("b", 1, 1, "a dog barks"),
               Window("c", 1, 1, "cat and dog and dog")]
    # "dog" and "cat" are as rare; the shorter window "b" wins; stop words and unknown words match nothing
    assert bm25_rankings(windows, ["cat dog zebra", "the and", "zebra"]) == [[2, 1, 0], [], []]
    assert bm25_rankings(windows, ["dog"], depth=1) == [[2]]


def test_rrf_sums_reciprocal_ranks() -> None:
    # 0: 1/61; 1: 2/62; 2: 1/63 + 1/61; 3: 1/62 (only in the second list)
    assert rrf([[[0, 1, 2]], [[2, 1, 3]]]) == [[2, 1, 0, 3]]
    assert rrf([[[5]], [[]]]) == [[5]]


def test_score_window_rankings_and_margin(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    windows = [Window("a.py", 1, 1, "x = 1"), Window("a.py", 2, 2, "y = 2")]
    cases = [EvalCase("1", "x", (Answer("a.py", 1, 1),)), EvalCase("2", "y", (Answer("a.py", 2, 2),))]
    metrics = score_window_rankings(tmp_path, windows, cases, [[1, 0], [1, 0]])
    assert (metrics.recall[1], metrics.mrr) == (0.5, 0.75)
    assert metrics.within_budget == 1.0, "two 3-token windows: both answers within 1,000 tokens"

    def mrr(value: float) -> Metrics:
        return Metrics(2, {1: value, 5: value, 10: value}, value, value, value)

    table = {"hybrid": mrr(0.5), SEED_MODE: mrr(0.3), BM25_MODE: mrr(0.45), RRF_MODE: mrr(0.4)}
    best, lead = margin(table)  # type: ignore[misc]
    assert best == BM25_MODE and lead == pytest.approx(0.05)
    assert margin({"hybrid": mrr(0.5)}) is None
    line = summary({"md": {**table, "hybrid-scores": mrr(0.6)}}).splitlines()[1].split()
    assert line[-3:] == ["hybrid-scores", "0.600", "+0.150"], "the other fusion's MRR@10 and margin"
    assert len(summary({"md": table}).splitlines()[1].split()) == 8


# --- Russian man pages ---------------------------------------------------------------

LS_ROFF = r""".\" -*- coding: UTF-8 -*-
.TH LS 1 "April 2025" "GNU coreutils 9.7" "Команды пользователя"
.SH НАИМЕНОВАНИЕ
ls \- выводит список содержимого каталога
.SH ОПИСАНИЕ
.PP
Выводит информацию о \fBФАЙЛАХ\fP (текущий каталог по умолчанию).
.TP
\fB\-a\fP, \fB\-\-all\fP
не скрывать файлы, начинающиеся с точки. Полезно, т. е. иногда.
.TP
\fB\-l\fP
.TQ
\fB\-\-long\fP
выводить в длинном формате
.nf
ls \-l /tmp
.fi
.SS Окружение
.TP
.B COLUMNS
ширина \(em в колонках
"""


def test_man_pages_become_markdown_with_option_sections() -> None:
    markdown = man_to_markdown(LS_ROFF)
    assert markdown.split("\n")[:6] == ["# LS(1)", "", "## НАИМЕНОВАНИЕ", "", "ls - выводит список содержимого каталога", ""]
    assert "### -a, --all\n\nне скрывать файлы, начинающиеся с точки. Полезно, т. е. иногда.\n" in markdown
    assert "### -l, --long\n\nвыводить в длинном формате\n\n```\nls -l /tmp\n```\n" in markdown
    assert "### Окружение\n\n#### COLUMNS\n\nширина — в колонках\n" in markdown
    assert "Выводит информацию о ФАЙЛАХ (текущий каталог по умолчанию)." in markdown


def test_ru_man_cases_remove_the_description_and_the_first_sentence() -> None:
    lines = man_to_markdown(LS_ROFF).split("\n")
    assert page_case("man1/ls.1.md", lines) == {"id": "man1/ls.1.md description",
                                                "query": "выводит список содержимого каталога"}
    assert lines[4] == "ls"
    lines = man_to_markdown(LS_ROFF).split("\n")
    [(header_path, query, _, _)] = option_cases("man1/ls.1.md", lines)  # -l has one sentence: no case
    assert (header_path, query) == ("# LS(1) > ## ОПИСАНИЕ > ### -a, --all",
                                    "не скрывать файлы, начинающиеся с точки.")
    assert "Полезно, т. е. иногда." in lines and sentences("Да, т. е. нет. Два.") == ["Да, т. е. нет.", "Два."]


def test_the_russian_bm25_peer_stems_both_languages_and_drops_stop_words() -> None:
    windows = [Window("a.md", 1, 1, "Резервное копирование баз данных"), Window("b.md", 1, 1, "как и на в"),
               Window("c.md", 1, 1, "Restoring backups")]
    assert bm25_rankings(windows, ["резервную копию", "как", "restored backup"], russian=True) == [[0], [], [2]]
    assert bm25_rankings(windows, ["резервную копию"]) == [[]]  # the English peer: exact words


# --- pinned downloads -------------------------------------------------------------


def _ar(members: dict[str, bytes]) -> bytes:
    """An ar archive (the container of a .deb) holding ``members``."""
    out = b"!<arch>\n"
    for name, data in members.items():
        out += f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode() + data
        out += b"\n" if len(data) % 2 else b""
    return out


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_fetch_debian_unpacks_a_deb_and_a_source_tarball_and_checks_the_sha256(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "EVAL_HOME", tmp_path / "eval")
    served = tmp_path / "served"
    served.mkdir()
    deb = served / "pkg-dev_1.0-1_all.deb"
    deb.write_bytes(_ar({"debian-binary": b"2.0\n", "control.tar.gz": _tar({"control": b"x"}),
                         "data.tar.gz": _tar({"usr/share/src/pkg/a.go": b"package a\n"})}))
    orig = served / "pkg_1.0.orig.tar.gz"
    orig.write_bytes(_tar({"pkg-1.0/src/A.java": b"class A {}\n"}))

    def digest(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    tree = common.fetch_debian(deb.as_uri(), digest(deb))
    assert (tree / "usr/share/src/pkg/a.go").read_text() == "package a\n"
    assert (common.fetch_debian(orig.as_uri(), digest(orig)) / "pkg-1.0/src/A.java").exists()
    other = served / "other_1.0.orig.tar.gz"
    other.write_bytes(orig.read_bytes())
    with pytest.raises(SystemExit, match="sha256 differs"):
        common.fetch_debian(other.as_uri(), "0" * 64)
    assert not (tmp_path / "eval" / "downloads" / other.name).exists()


# --- Markdown titles (md-titles, ru-docs) ---------------------------------------

MD = """# Руководство

Вступление к руководству.

## 2.1. Установка пакета :material-download:{: .icon}

Установите пакет командой apt install, затем проверьте, что он работает: вызовите его с ключом
--version и сравните номер версии с указанным на странице проекта, как описано ниже в тексте.

## Short

Too short a body.

## Настройка

### Переменные &amp; окружения

Каждый параметр можно задать переменной окружения с префиксом RAG, например RAG_HOME задаёт
каталог данных, а RAG_DATABASE_URL адрес сервера базы данных, если он не встроенный и свой.
"""


def test_title_cases_remove_headers_strip_numbering_and_point_at_bodies() -> None:
    text, cases = title_file_cases(MD, "guide.md")
    lines = text.split("\n")
    assert [c["query"] for c in cases] == ["Установка пакета", "Переменные & окружения"]
    assert "Установка пакета" not in text and "Переменные" not in text
    assert "## Short" in text and "## Настройка" in text, "only the cases' headers are removed"
    first, second = (c["relevant"][0] for c in cases)
    assert lines[first["startLine"] - 1].startswith("Установите пакет")
    assert lines[first["endLine"] - 1].startswith("--version")
    assert lines[second["startLine"] - 1].startswith("Каждый параметр")
    assert title_file_cases(MD, "about/releases/7.0.md")[1] == [], "release notes give no cases"
    assert title_query("### 5.3. Описание элементов - Меню¶") == "Описание элементов - Меню"


def test_unique_queries_drop_titles_found_in_the_copy() -> None:
    cases = [{"query": "Install the Package"}, {"query": "Configure it"}]
    texts = {"index.md": "- [Install  the **package**](install.md)", "other.md": "nothing"}
    assert unique_queries(cases, texts) == [{"query": "Configure it"}]


def test_tables_of_contents_leave_html_pages() -> None:
    page = """<?xml version="1.0" encoding="utf-8"?><html><body>
<div class="toc"><p>Содержание</p><a href="#a">1. Первая</a></div>
<dl><dt>1. <a href="#a">Первая</a></dt><dd><dl><dt>1.1. <a href="#b">Вторая</a></dt></dl></dd></dl>
<ul><li><a href="x.html">Ссылка</a> и текст после неё</li></ul>
<h2 id="a">1. Первая</h2><p>Текст.</p></body></html>"""
    kept = without_contents(page)
    assert "Содержание" not in kept and kept.count("Первая") == 1 and "Вторая" not in kept
    assert "и текст после неё" in kept, "a list of more than links stays"


def test_line_windows_cut_every_forty_lines() -> None:
    text = "\n".join(f"line {n}" for n in range(1, 91))
    windows = line_windows(text, "a.md")
    assert [(w.start_line, w.end_line) for w in windows] == [(1, 40), (41, 80), (81, 90)]
    assert windows[1].text.split("\n")[0] == "line 41"
