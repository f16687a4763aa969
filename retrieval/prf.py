"""Pseudo-relevance feedback: the best first-pass hits refine the query (pure numpy).

- dense (Rocchio): the query vector moves toward the mean of the feedback documents';
- BM25 (RM-style term selection): the terms that weigh most in the feedback documents
  (term frequency times idf), absent from the query, join it;
- second hop: the names (people, places) the feedback messages mention and the query does
  not join it, so evidence about them is searched too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from .embedders.base import l2_normalise

__all__ = ["entities", "expansion_terms", "rocchio"]

Vec = npt.NDArray[np.float32]


def rocchio(qvec: Vec, doc_vecs: npt.NDArray[np.float32], weight: float) -> Vec:
    """``normalise(qvec + weight * mean(doc_vecs))`` (unit); ``qvec`` when there are none."""
    if not len(doc_vecs) or weight == 0.0:
        return qvec
    v = np.asarray(qvec, np.float32) + weight * np.asarray(doc_vecs, np.float32).mean(axis=0)
    return l2_normalise(v[None, :])[0]


def expansion_terms(
    docs: Sequence[Sequence[str]], query_terms: Sequence[str], n: int,
    idf: Callable[[str], float],
) -> list[str]:
    """The ``n`` terms of ``docs`` (analysed terms) with the largest summed
    ``tf / len(doc) * idf(term)``, leaving out the query's own terms; ties by term."""
    if n <= 0 or not docs:
        return []
    skip = set(query_terms)
    w: dict[str, float] = {}
    for d in docs:
        if not d:
            continue
        for t, c in Counter(d).items():
            if t not in skip:
                w[t] = w.get(t, 0.0) + c / len(d) * idf(t)
    return [t for t, _ in sorted(w.items(), key=lambda x: (-x[1], x[0]))[:n]]


_NAME = re.compile(r"\b[A-Z][a-zA-Z'-]+")
# Capitalised for grammar, not because they name something.
_NOT_NAMES = frozenset((
    "i", "i'm", "i've", "i'll", "i'd", "the", "a", "an", "and", "but", "so", "oh", "wow",
    "yeah", "yes", "no", "hey", "hi", "it", "it's", "that", "this", "what", "when", "where",
    "who", "why", "how", "my", "we", "you", "thanks", "thank", "that's", "there", "they",
    "he", "she", "his", "her", "is", "was", "are", "do", "did", "have", "has", "had", "can",
    "will", "would", "could", "should", "just", "really",
))


def entities(texts: Sequence[str], query: str, exclude: Sequence[str], n: int) -> list[str]:
    """The ``n`` capitalised names most frequent in ``texts`` (ties: first seen) that the
    query does not already say, leaving out ``exclude`` (e.g. the speakers) and words
    capitalised only by grammar: the entities a second hop searches for."""
    if n <= 0:
        return []
    said = {w.lower() for w in _NAME.findall(query)} | {w.lower() for w in query.split()}
    skip = said | {w.lower() for x in exclude for w in x.split()} | _NOT_NAMES
    count: dict[str, int] = {}
    for t in texts:
        for w in _NAME.findall(t):
            if w.lower() not in skip:
                count[w] = count.get(w, 0) + 1
    return sorted(count, key=lambda w: -count[w])[:n]
