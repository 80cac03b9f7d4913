"""Russian lemmas for the keyword index (``search.lemmas``; decision 033): the optional
lemmatizer (pymorphy3 with its Russian dictionary, ``pip install 'local-rag[ru]'``) and the
word -> lemma rows it gives the database.

The database owns the rule (``rag._prose_term`` in ``sql/015_keywords.sql``): a Cyrillic word
of a document or of a query found in ``rag.lemmas`` is posted and looked up by the Snowball stem
of its lemma, any other word by its own stem. This module only fills the table: before a batch of
chunks is stored, ``fill`` asks SQL which of their words lack a row and adds theirs, so a stored
document never posts a word the table learns later. Without the package, or with
``search.lemmas: false``, nothing here runs and the keyword index is Snowball's alone.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rag import sqlapi
from rag.errors import ConfigError, IndexingError

if TYPE_CHECKING:
    from rag.db import Conn

log = logging.getLogger(__name__)

PACKAGE = "pymorphy3"
INSTALL_HINT = "pip install 'local-rag[ru]'"
# A word of Cyrillic letters (with inner hyphens: "какой-то"), as long as the tokenizer keeps.
_WORD = re.compile(r"^[\u0400-\u04ff]+(?:-[\u0400-\u04ff]+)*$")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
MAX_WORD = 64  # characters: longer terms are dropped by the tokenizer (rag.term_frequencies)


def available() -> bool:
    """Whether the lemmatizer and its Russian dictionary are installed."""
    return all(importlib.util.find_spec(name) is not None for name in (PACKAGE, "pymorphy3_dicts_ru"))


def wanted(setting: bool | str, languages: list[str]) -> bool:
    """Whether documents should post Russian lemmas: ``search.lemmas`` (true, false or auto: when
    installed) where Russian is one of ``search.languages``."""
    russian = any(language.removesuffix("_stem") == "russian" for language in languages)
    if setting is True:
        if not russian:
            raise ConfigError("search.lemmas is true, but search.languages does not name russian")
        if not available():
            raise ConfigError(f"search.lemmas is true, but {PACKAGE} is not installed: {INSTALL_HINT}")
        return True
    return setting == "auto" and russian and available()


class Lemmatizer:
    """pymorphy3's most likely lemma of a word, the word itself where it has none or fails."""

    def __init__(self, forms: bool = False) -> None:
        import pymorphy3

        self._morph = pymorphy3.MorphAnalyzer(lang="ru")
        self.forms = forms  # also give the other forms of each word's lexeme (decision 033)

    def lemma(self, word: str) -> str:
        if not _WORD.match(word) or len(word) > MAX_WORD:
            return word
        try:
            parses = self._morph.parse(word)
            found = parses[0].normal_form if parses else word
        except Exception:  # (an odd word is posted by its own stem: it never fails a run)
            return word
        found = _folded(str(found).lower())
        return found if found and len(found) <= MAX_WORD else word

    def rows(self, words: Iterable[str]) -> tuple[list[str], list[str]]:
        """The (words, lemmas) to store for ``words``: each word's lemma, and with ``forms``
        every form of its lexeme (which no stored document holds yet) mapped to the same lemma."""
        out: dict[str, str] = {}
        for word in words:
            lemma = self.lemma(word)
            out[word] = lemma
            if self.forms:
                for form in self._lexeme(word):
                    out.setdefault(form, lemma)
        return list(out), list(out.values())

    def _lexeme(self, word: str) -> list[str]:
        try:
            parses = self._morph.parse(word)
            return [f for f in (_folded(str(p.word).lower()) for p in parses[0].lexeme)
                    if _WORD.match(f) and len(f) <= MAX_WORD] if parses else []
        except Exception:
            return []


_shared: Lemmatizer | None = None
_shared_lock = threading.Lock()


def lemmatizer() -> Lemmatizer:
    """The process's lemmatizer, loaded on first use (the dictionary: ~0.1 s, ~15 MB)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            if not available():
                raise IndexingError(f"the keyword index holds Russian lemmas (search.lemmas), but {PACKAGE} "
                                    f"is not installed: {INSTALL_HINT}, or set search.lemmas: false")
            _shared = Lemmatizer()
        return _shared


def _folded(word: str) -> str:
    return word.replace("ё", "е")


def has_cyrillic(text: str) -> bool:
    return _CYRILLIC.search(text) is not None


def fill(conn: Conn, texts: list[str], lemmas: Lemmatizer | None = None) -> int:
    """Store the lemmas of the Cyrillic words of ``texts`` (chunks' indexed texts, about to be
    stored) that the table lacks: how many rows were added."""
    texts = [t for t in texts if has_cyrillic(t)]
    if not texts:
        return 0
    missing = sqlapi.unlemmatized_words(conn, texts)
    return _add(conn, missing, lemmas)


def _add(conn: Conn, missing: list[str], lemmas: Lemmatizer | None) -> int:
    if not missing:
        return 0
    words, found = (lemmas or lemmatizer()).rows(missing)
    return sqlapi.add_lemmas(conn, words, found)


def apply(conn: Conn, setting: bool | str, languages: list[str]) -> None:
    """Make ``search.lemmas`` the keyword index's: turning it on lemmatizes the stored documents'
    words first, then re-posts every chunk (both in one transaction); turning it off re-posts them
    by their stems."""
    from rag import db

    enabled = wanted(setting, languages)
    if sqlapi.keyword_lemmas(conn) == enabled:
        return
    if sqlapi.has_chunks(conn):  # (said first: the re-posting takes a while)
        log.warning("search.lemmas is now %s: posting the keywords of every indexed chunk again "
                    "(once; minutes on a large index)", "on" if enabled else "off")
    with conn.transaction():
        if enabled:
            _add(conn, sqlapi.stored_unlemmatized_words(conn), None)
        changed = sqlapi.set_lemmas(conn, enabled)
    if changed:
        db.vacuum_postings(conn)

