"""bench/rouge.py: LCS-based ROUGE-L F1 on hand-checked cases."""

from __future__ import annotations

import pytest

from bench.rouge import lcs_length, rouge_l, tokens


def test_lcs_length_is_the_longest_common_subsequence() -> None:
    assert lcs_length(list("abcbdab"), list("bdcaba")) == 4  # the textbook case (CLRS)
    assert lcs_length([], ["a"]) == 0
    assert lcs_length(["a", "b"], ["b", "a"]) == 1


def test_rouge_l_f1() -> None:
    # LCS "the cat on the mat" (5 of 6 words each side): P = R = F1 = 5/6
    assert rouge_l("the cat sat on the mat", "the cat was on the mat") == pytest.approx(5 / 6)
    assert rouge_l("a b c d", "a b c d") == pytest.approx(1.0)
    # LCS a c (2): P = 2/2, R = 2/4 -> F1 = 2/3
    assert rouge_l("a c", "a b c d") == pytest.approx(2 / 3)
    assert rouge_l("", "a b") == 0.0
    assert rouge_l("x y", "a b") == 0.0


def test_tokens_ignore_case_and_punctuation() -> None:
    assert tokens("Caroline's LGBTQ group, 8 May!") == ["caroline", "s", "lgbtq", "group",
                                                        "8", "may"]
