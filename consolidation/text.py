"""Text helpers shared by the transformers: entry text, sentences, tokens, slugs, TF-IDF.

An entry's text here is its main text, :func:`retrieval.text.entry_text` with ``main``
(why that differs from the indexed text is said there).

The tokenizer is deliberately simple so budgets are reproducible without a model: a
token is a run of word characters (``\\w+``) or one punctuation character. On English
prose this counts roughly 1.1-1.3 tokens per word, close to BPE tokenizers.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np

from blackboard import Entry
from retrieval.text import entry_text as _entry_text

__all__ = [
    "MAX_TAGS",
    "count_tokens",
    "entry_text",
    "l2_normalise",
    "normalise_text",
    "slug",
    "split_sentences",
    "tfidf_matrix",
    "truncate_tokens",
    "union_tags",
    "words",
]

MAX_TAGS = 64  # mirrors blackboard.validation.MAX_TAGS: a draft must stay writable
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_WORD_RE = re.compile(r"\w+")
_SENT_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "i",
        "we",
        "you",
        "he",
        "she",
        "they",
        "them",
        "our",
        "your",
        "their",
        "not",
        "no",
        "but",
        "if",
        "then",
        "so",
        "do",
        "does",
    ]
)


def entry_text(entry: Entry) -> str:
    """The main text of an entry (:func:`retrieval.text.entry_text` with ``main``): every
    entry has some, its canonical JSON at worst."""
    return _entry_text(entry, main=True)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: cut after ``.``, ``!``, ``?`` followed by space, and at newlines."""
    return [s.strip() for s in _SENT_RE.split(text) if s and s.strip()]


def count_tokens(text: str) -> int:
    """Tokens of ``text`` under the module tokenizer (word runs and single punctuation)."""
    return len(_TOKEN_RE.findall(text))


def truncate_tokens(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` tokens, with an ellipsis when cut."""
    spans = list(_TOKEN_RE.finditer(text))
    if len(spans) <= limit:
        return text
    return text[: spans[limit - 1].end()].rstrip() + "…"


def words(text: str, *, drop_stopwords: bool = False) -> list[str]:
    """Lowercased word tokens, optionally without English stopwords."""
    if text.isascii():  # casefold is lower on ASCII and cannot move a word boundary there
        ws = _WORD_RE.findall(text.lower())
    else:
        ws = [w.casefold() for w in _WORD_RE.findall(text)]
    return [w for w in ws if w not in _STOPWORDS] if drop_stopwords else ws


class _PunctToSpace(dict[int, str]):
    """``str.translate`` table mapping punctuation and symbols (Unicode categories P*, S*)
    to a space and every other character to itself, filled as characters are met: a full
    table would classify all 1.1M code points up front. Only the first 64k code points are
    remembered, which bounds the table at a few MB whatever text passes through."""

    def __missing__(self, cp: int) -> str:
        c = chr(cp)
        out = " " if unicodedata.category(c)[0] in "PS" else c
        if cp < 0x10000:
            self[cp] = out
        return out


_PUNCT_TO_SPACE = _PunctToSpace()
_ASCII_PUNCT_TO_SPACE = str.maketrans({c: " " for c in string.punctuation})


def normalise_text(text: str) -> str:
    """Text as compared for exact duplicates: NFKC, casefolded, punctuation and symbols
    dropped, whitespace collapsed."""
    if text.isascii():  # NFKC is the identity on ASCII; all ASCII P/S are string.punctuation
        t = text.lower().translate(_ASCII_PUNCT_TO_SPACE)
    else:
        t = unicodedata.normalize("NFKC", text).casefold().translate(_PUNCT_TO_SPACE)
    return " ".join(t.split())


def slug(text: str) -> str:
    """A stem-free slug: ASCII-folded, lowercase, punctuation dropped, words joined by ``-``.

    Example: ``"  The Café's  Owner!"`` -> ``"the-cafes-owner"`` (apostrophes vanish
    rather than splitting a word).
    """
    t = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    t = re.sub(r"['`]", "", t)  # curly quotes are already gone with the ASCII folding
    return "-".join(re.findall(r"[a-z0-9]+", t))


def union_tags(tag_sets: Iterable[frozenset[str]], extra: Iterable[str] = ()) -> frozenset[str]:
    """Union of tag sets plus ``extra``, capped at :data:`MAX_TAGS`.

    When the union is too large, ``extra`` is kept first, then the most frequent tags
    (ties by name), so the result stays deterministic and writable.
    """
    counts: dict[str, int] = {}
    for ts in tag_sets:
        for t in ts:
            counts[t] = counts.get(t, 0) + 1
    keep = list(dict.fromkeys(extra))
    if len(counts) + len(keep) <= MAX_TAGS:
        return frozenset(keep) | frozenset(counts)
    ranked = sorted((t for t in counts if t not in keep), key=lambda t: (-counts[t], t))
    return frozenset(keep + ranked[: max(0, MAX_TAGS - len(keep))])


def tfidf_matrix(texts: Sequence[str]) -> np.ndarray:
    """L2-normalised TF-IDF rows, shape ``(len(texts), vocabulary)``, float64.

    Stopwords are dropped; idf is smoothed (``ln((1 + n) / (1 + df)) + 1``) so a word in
    every text still counts a little. A text with no content word is a zero row.
    """
    docs = [words(t, drop_stopwords=True) for t in texts]
    vocab = {w: i for i, w in enumerate(sorted({w for d in docs for w in d}))}
    width = max(1, len(vocab))
    # Term counts by one bincount over flat (row * width + column) cells: a Python loop of
    # numpy item updates cost more than the rest of the summarizer.
    cells = [r * width + vocab[w] for r, d in enumerate(docs) for w in d]
    m = np.bincount(np.asarray(cells, dtype=np.int64), minlength=len(docs) * width)
    m = m.reshape(len(docs), width).astype(np.float64)
    df = (m > 0).sum(axis=0)
    idf = np.log((1.0 + len(docs)) / (1.0 + df)) + 1.0
    m *= idf
    return l2_normalise(m)


def l2_normalise(m: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float64."""
    m = np.asarray(m, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)
