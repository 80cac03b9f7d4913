"""Russian lemmas for the keyword index (``search.lemmas``; decision 033): the optional
lemmatizer (pymorphy3 with its Russian dictionary, ``pip install 'local-rag[ru]'``) and the
word -> lemma rows it gives the database.

The database owns the rule (``rag._prose_term`` in ``sql/015_keywords.sql``): a Cyrillic word
of a document or of a query found in ``rag.lemmas`` is posted and looked up by the Snowball stem
of its lemma, any other word by its own stem. This module only fills the table: before a batch of
chunks is stored, ``fill`` asks SQL which of their words lack a row and adds theirs, so a stored
document never posts a word the table learns later. Without the package, or with
``search.lemmas: false``, nothing here runs and the keyword index is Snowball's alone.

A verb's lemma is its infinitive, and the two verbs of an aspect pair have two (удалять/удалить);
an imperfective whose perfective partner differs from it only after the perfective's Snowball stem
(удаля-ть, удал-ить; создава-ть, созда-ть) takes the partner's as its lemma, so "удаляет" and
"удалить" post one stem (``perfective``; decision 033, session 32). Beside the table, the verb of
each verbal noun among the lemmas (``verb``: переименование -> переименовать) goes to
``rag.verbal_nouns``: a query beginning with such a noun, a title, looks up its verb too.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

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
    """Whether the lemmatizer, its Russian dictionary and Snowball's stemmer are installed."""
    return all(importlib.util.find_spec(name) is not None
               for name in (PACKAGE, "pymorphy3_dicts_ru", "snowballstemmer"))


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

    def __init__(self, forms: bool = False, aspects: bool = True) -> None:
        import pymorphy3

        self._morph = pymorphy3.MorphAnalyzer(lang="ru")
        self.forms = forms  # also give the other forms of each word's lexeme (decision 033)
        self.aspects = aspects  # an imperfective verb's lemma: its perfective partner's (``perfective``)
        self._partners: dict[str, str | None] = {}

    def lemma(self, word: str) -> str:
        if not _WORD.match(word) or len(word) > MAX_WORD:
            return word
        try:
            parses = self._morph.parse(word)
            found = _folded(str(parses[0].normal_form if parses else word).lower())
            if self.aspects and parses and parses[0].tag.POS in _VERB_FORMS:
                found = self.perfective(found) or found
        except Exception:  # (an odd word is posted by its own stem: it never fails a run)
            return word
        return found if found and len(found) <= MAX_WORD else word

    def perfective(self, infinitive: str) -> str | None:
        """The perfective partner of an imperfective infinitive, where the two differ only after the
        partner's Snowball stem (удалять -> удалить, создавать -> создать, открываться ->
        открыться); None for any other verb (показывать: показа- does not begin it) or word. A
        candidate made by the regular suffix rules counts only where pymorphy3 knows it as a
        perfective infinitive (делать -> делить is imperfective: no partner)."""
        if infinitive not in self._partners:
            self._partners[infinitive] = self._find_perfective(infinitive)
        return self._partners[infinitive]

    def _find_perfective(self, infinitive: str) -> str | None:
        reflexive = infinitive[-2:] if infinitive.endswith(("ся", "сь")) else ""
        base = infinitive.removesuffix(reflexive)
        if not self._is_infinitive(infinitive, "impf"):
            return None
        for candidate in _perfective_candidates(base):
            partner = candidate + reflexive
            if infinitive.startswith(_stem(partner)) and self._is_infinitive(partner, "perf"):
                return None if self._has_rival(base, candidate) else partner
        return None

    def _has_rival(self, imperfective: str, perfective: str) -> bool:
        """Whether a perfective in -ить made from an imperfective in -ать has its own in -ять
        (начинать -> начинить, whose imperfective is начинять)."""
        return (perfective.endswith("ить") and imperfective.endswith("ать")
                and self._is_infinitive(perfective[:-3] + "ять", "impf"))

    def _is_infinitive(self, word: str, aspect: str) -> bool:
        return self._morph.word_is_known(word) and any(
            p.tag.POS == "INFN" and aspect in p.tag and p.normal_form == word and p.score >= _MIN_SCORE
            for p in self._morph.parse(word))

    def verb(self, noun: str) -> str | None:
        """The lemma of the verb of a verbal noun in -ние/-тие (удаление -> удалить, использование
        -> использовать, развитие -> развить), None for any other word: candidates by the regular
        suffix rules (-ение -> -ить/-ять/-еть, a consonant alternation undone: добавление ->
        добавить, освобождение -> освободить; -ание/-яние/-тие -> -ть), the first that pymorphy3
        knows as an infinitive; its lemma as ``lemma`` gives it (the perfective partner's)."""
        try:
            if not any(p.tag.POS == "NOUN" and p.normal_form == noun for p in self._morph.parse(noun)):
                return None
            for candidate in _verb_candidates(noun):
                if self._is_infinitive(candidate, "perf") or self._is_infinitive(candidate, "impf"):
                    return self.lemma(candidate)
        except Exception:  # (as ``lemma``: an odd word never fails a run)
            return None
        return None

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


# The parses whose normal form is an infinitive: verbs, participles, gerunds.
_VERB_FORMS = frozenset({"INFN", "VERB", "PRTF", "PRTS", "GRND"})
_MIN_SCORE = 0.3  # a candidate's perfective-infinitive parse at least this likely
# An imperfective's suffix and what its perfective ends in instead (удал-ять, удал-ить). Only
# partners whose Snowball stem begins the imperfective count, so the rules that change the root
# (показывать/показать, выводить/вывести, начинать/начать) are left out.
_SUFFIXES = (("ывать", ("ать", "ить", "ыть")), ("ивать", ("ать", "ить", "еть")), ("ять", ("ить", "еть")),
             ("ать", ("ить", "нуть")))
# The л after a labial before -ять (добавл-ять, добав-ить).
_ALTERNATIONS = (("вл", "в"), ("бл", "б"), ("пл", "п"), ("мл", "м"), ("фл", "ф"))


def _perfective_candidates(infinitive: str) -> list[str]:
    """Perfective infinitives an imperfective may pair with by the regular suffix rules; which of
    them is a word, and of that aspect, the dictionary says."""
    out: list[str] = []
    if infinitive.endswith("вать") and len(infinitive) > 5 and infinitive[-5] in "аеиоуыэюя":
        out.append(infinitive[:-4] + "ть")  # создавать -> создать, открывать -> открыть
    for suffix, endings in _SUFFIXES:
        if infinitive.endswith(suffix):
            stem = infinitive[:-len(suffix)]
            stems = [stem, *(stem[:-len(a)] + b for a, b in _ALTERNATIONS if stem.endswith(a))]
            out += [s + ending for s in stems for ending in endings]
    return list(dict.fromkeys(c for c in out if c != infinitive))


# A verbal noun's stem end and its verb's before the suffix (добавл-ение, добав-ить).
_NOUN_ALTERNATIONS = (("вл", "в"), ("бл", "б"), ("пл", "п"), ("мл", "м"), ("ж", "з"), ("ж", "д"), ("жд", "д"),
                      ("щ", "ст"), ("щ", "т"), ("ч", "т"), ("ш", "с"))
NOUN_ENDINGS = ("ние", "тие")


def _verb_candidates(noun: str) -> list[str]:
    """Infinitives a verbal noun may come from by the regular suffix rules."""
    if noun.endswith("ение"):
        stem = noun[:-4]
        stems = [stem, *(stem[:-len(a)] + b for a, b in _NOUN_ALTERNATIONS if stem.endswith(a))]
        return [s + ending for s in stems for ending in ("ить", "ять", "еть")]
    if noun.endswith(("ание", "яние", "тие")):
        return [noun[:-3] + "ть"]  # использование -> использовать, влияние -> влиять, развитие -> развить
    return []


@lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    return str(_snowball().stemWord(word))


@lru_cache(maxsize=1)
def _snowball() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("russian")


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
    lemmas = lemmas or lemmatizer()
    words, found = lemmas.rows(missing)
    added = sqlapi.add_lemmas(conn, words, found)
    _add_verbs(conn, [lemma for lemma in dict.fromkeys(found) if lemma.endswith(NOUN_ENDINGS)], lemmas)
    return added


def _add_verbs(conn: Conn, nouns: list[str], lemmas: Lemmatizer) -> None:
    """Store the verb of each verbal noun among ``nouns`` (lemmas), NULL for the others: the
    verb a query beginning with one looks up too (rag._title_verb)."""
    if nouns:
        sqlapi.add_verbal_nouns(conn, nouns, [lemmas.verb(noun) for noun in nouns])


def apply(conn: Conn, setting: bool | str, languages: list[str]) -> None:
    """Make ``search.lemmas`` the keyword index's: turning it on lemmatizes the stored documents'
    words first, then re-posts every chunk (both in one transaction); turning it off re-posts them
    by their stems."""
    from rag import db

    enabled = wanted(setting, languages)
    if sqlapi.keyword_lemmas(conn) == enabled:
        # An index lemmatized before rag.verbal_nouns gets its nouns' verbs, once (the dictionary
        # is loaded only then: a search never pays for it).
        nouns = sqlapi.underived_nouns(conn) if enabled else []
        if nouns:
            with conn.transaction():
                _add_verbs(conn, nouns, lemmatizer())
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

