"""ROUGE-L (Lin, 2004): the F1 of the longest common subsequence of word tokens.

Lowercase word tokens (letters and digits), no stemming and no stopword removal: the
figure compares our summaries with LoCoMo's gold ones under one fixed rule, not with
published ROUGE numbers (which stem).
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence, one row of the DP table at a time
    (O(len(a) * len(b)) time, O(len(b)) memory: summaries run to a few hundred words)."""
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        row = [0]
        for j, y in enumerate(b):
            row.append(prev[j] + 1 if x == y else max(prev[j + 1], row[j]))
        prev = row
    return prev[-1]


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 (beta 1) of ``candidate`` against ``reference``; 0.0 when either is empty."""
    c, r = tokens(candidate), tokens(reference)
    lcs = lcs_length(c, r)
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(c), lcs / len(r)
    return 2 * p * rec / (p + rec)
