"""Text to index terms: bm25s's tokenizer (lowercase, ``\\w\\w+`` tokens, English stopwords)
and the PyStemmer Snowball stemmer."""

from __future__ import annotations

import threading
from functools import lru_cache

import bm25s
import Stemmer

__all__ = ["Analyzer"]


class Analyzer:
    """Turns texts into lists of stemmed terms, exactly as ``bm25s.tokenize`` would with the
    same stopwords and stemmer (so an index built here matches a bm25s one)."""

    def __init__(self, stopwords: str | list[str] = "en", language: str = "english") -> None:
        self.stopwords = stopwords
        self.language = language
        # PyStemmer objects are not thread-safe; one per thread
        self._local = threading.local()

    def _stemmer(self) -> Stemmer.Stemmer:
        st = getattr(self._local, "stemmer", None)
        if st is None:
            st = self._local.stemmer = Stemmer.Stemmer(self.language)
        return st

    def terms(self, texts: list[str]) -> list[list[str]]:
        """The stemmed, stopword-free terms of each text (duplicates kept, in order)."""
        if not texts:
            return []
        out = bm25s.tokenize(
            texts,
            stopwords=self.stopwords,
            stemmer=self._stemmer(),
            return_ids=False,
            show_progress=False,
        )
        return [list(t) for t in out]

    def query_terms(self, text: str) -> tuple[str, ...]:
        """The terms of one query (cached: queries repeat)."""
        return _cached_query_terms(self, text)


@lru_cache(maxsize=4096)
def _cached_query_terms(analyzer: Analyzer, text: str) -> tuple[str, ...]:
    return tuple(analyzer.terms([text])[0])
