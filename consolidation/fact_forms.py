"""Sentence forms the LLM-free fact extractor (:mod:`.facts`) reads besides ``<subject>
<verb> <object>``: possessives, dated events, and the surface forms of more verbs.

- Possessive: ``<S>'s <attribute> is|are [not] <O>`` and ``The <attribute> of <S> is|are
  [not] <O>`` -> ``(S, <attribute>, O)``, the attribute's slug joined by ``_`` as the
  predicate (``"Acme's payment terms are net-30"`` -> ``(Acme, payment_terms, net-30)``).
  The attribute is at most 3 words; the subject a name of at most 6.
- Dated: ``<S> [aux] [not] <verb> on|in|since|until|by <date>`` -> ``(S, <verb>_<prep>,
  <ISO date>)`` where the verb is one word ending in ``-ed``/``-s`` or ``due``/``born``/
  ``scheduled``/``open``/``closed``, aux one of is/are/was/were/has/have/had/will (be)
  (``"Initech was founded in March 1999"`` -> ``(Initech, founded_in, 1999-03)``). Dates:
  ``2024-05-03``, ``2024-05``, ``May 3, 2024``, ``3 May 2024``, ``May 2024``, ``2024``.
- More verbs (:data:`EXTRA_VERBS`): preferences (``likes``; ``switched to`` is a new
  ``prefers``; ``dislikes``/``hates``/``no longer likes`` negate ``likes``), places
  (``moved to``, ``relocated to``, ``is based in``, ``is located in`` are ``lives_in``),
  ``became``/``is now`` (``is``), ``stopped using`` (negated ``uses``) and quantities
  (``costs``, ``weighs``, ``employs``, ``owes``, ``earns``, ``charges``; the object keeps
  its number and unit as written).
"""

from __future__ import annotations

import re

from .text import slug

__all__ = ["EXTRA_VERBS", "dated", "iso_date", "possessive"]

#: surface form -> (canonical predicate, negated), merged into the extractor's verbs.
EXTRA_VERBS: dict[str, tuple[str, bool]] = {}
for _canon, _pos, _neg in (
    # Not the plural "like": it is far more often a preposition ("looks like a bank").
    ("likes", ("likes", "loves", "enjoys"),
     ("does not like", "doesn't like", "do not like", "don't like", "dislikes", "dislike",
      "hates", "hate", "no longer likes", "no longer like")),
    ("prefers", ("switched to", "has switched to", "have switched to"), ()),
    ("lives_in", ("moved to", "has moved to", "have moved to", "relocated to",
                  "is based in", "are based in", "is located in", "are located in"),
     ("is not based in", "isn't based in", "is no longer based in",
      "is not located in", "isn't located in")),
    ("is", ("became", "has become", "have become", "is now", "are now"), ()),
    ("uses", ("stopped using",), ()),
    ("costs", ("costs", "cost"), ()),
    ("weighs", ("weighs", "weigh"), ()),
    ("employs", ("employs", "employ"), ()),
    ("owes", ("owes", "owe"), ()),
    ("earns", ("earns", "earn"), ()),
    ("charges", ("charges", "charge"), ()),
):
    for _f in _pos:
        EXTRA_VERBS[_f] = (_canon, False)
    for _f in _neg:
        EXTRA_VERBS[_f] = (_canon, True)
EXTRA_VERBS["stopped using"] = ("uses", True)

_MONTHS = {m: i + 1 for i, m in enumerate((
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december"))}
_MONTHS |= {m[:3]: i for m, i in list(_MONTHS.items())} | {"sept": 9}
_MON = "|".join(sorted(_MONTHS, key=lambda m: (-len(m), m)))
_DATES = (
    re.compile(r"^(?P<y>\d{4})-(?P<m>\d{1,2})(?:-(?P<d>\d{1,2}))?$"),
    re.compile(rf"^(?P<mon>{_MON})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})$"),
    re.compile(rf"^(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MON})\.?,?\s+(?P<y>\d{{4}})$"),
    re.compile(rf"^(?P<mon>{_MON})\.?,?\s+(?P<y>\d{{4}})$"),
    re.compile(r"^(?P<y>\d{4})$"),
)


def iso_date(text: str) -> str | None:
    """``"March 3, 2024"`` -> ``"2024-03-03"``; a month without a day -> ``"2024-03"``, a
    year alone -> ``"2024"``; None when ``text`` is not one of the documented forms or not
    a real date."""
    t = " ".join(text.strip(" .,").split()).casefold()
    for rx in _DATES:
        m = rx.match(t)
        if m is None:
            continue
        g = m.groupdict()
        y = int(g["y"])
        mon = _MONTHS[g["mon"]] if g.get("mon") else (int(g["m"]) if g.get("m") else None)
        day = int(g["d"]) if g.get("d") else None
        if mon is None:
            return f"{y:04d}"
        if not 1 <= mon <= 12 or (day is not None and not 1 <= day <= _days(y, mon)):
            return None
        return f"{y:04d}-{mon:02d}" + (f"-{day:02d}" if day is not None else "")
    return None


def _days(y: int, m: int) -> int:
    if m == 2:
        return 29 if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0) else 28
    return 30 if m in (4, 6, 9, 11) else 31


_W = "[\\w-]+"
_NAME = rf"{_W}(?:\s+{_W}){{0,5}}?"
_ATTR = rf"{_W}(?:\s+{_W}){{0,2}}"
_OBJ = rf"{_W}(?:[\s,]+{_W}){{0,7}}"
_COP = r"(?P<v>is not|isn't|are not|aren't|is no longer|are no longer|is|are)"
_POSSESSIVE = (
    re.compile(rf"^(?P<s>{_NAME})'s?\s+(?P<a>{_ATTR}?)\s+{_COP}\s+(?P<o>{_OBJ})\s*[.!]?$", re.I),
    re.compile(rf"^the\s+(?P<a>{_ATTR}?)\s+of\s+(?P<s>{_NAME})\s+{_COP}\s+(?P<o>{_OBJ})\s*[.!]?$",
               re.I),
)
_AUX = r"(?:is|are|was|were|has|have|had|will|will be|has been|have been|had been)"
_DATED = re.compile(
    rf"^(?P<s>{_NAME})\s+(?:(?P<aux>{_AUX})\s+)?(?P<neg>not\s+|never\s+)?"
    r"(?P<v>[a-z]+(?:ed|s)|due|born|scheduled|open|closed)\s+"
    r"(?P<p>on|in|since|until|by)\s+(?P<d>[\w ,.-]+?)\s*[.!]?$",
    re.I,
)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I)


def _clean(part: str) -> str:
    return _ARTICLE.sub("", " ".join(part.strip(" ,.!").split()))


def possessive(sentence: str) -> tuple[str, str, str, bool] | None:
    """``(subject, attribute predicate, object, negated)`` of a possessive sentence."""
    for rx in _POSSESSIVE:
        m = rx.match(sentence)
        if m is None:
            continue
        subj, attr, obj = _clean(m["s"]), slug(m["a"]).replace("-", "_"), _clean(m["o"])
        if slug(subj) and attr and slug(obj):
            v = m["v"].casefold()
            return subj, attr, obj, "not" in v or "n't" in v or "no longer" in v
    return None


def dated(sentence: str) -> tuple[str, str, str, bool] | None:
    """``(subject, <verb>_<prep>, ISO date, negated)`` of a dated sentence."""
    m = _DATED.match(sentence)
    if m is None:
        return None
    when = iso_date(m["d"])
    subj = _clean(m["s"])
    if when is None or not slug(subj):
        return None
    return subj, f"{m['v'].casefold()}_{m['p'].casefold()}", when, m["neg"] is not None
