"""Credentials out of what people read: Redis URLs with their password masked.

Every place that prints or logs a URL, or an error message that may quote one (redis-py
and our own messages do), goes through :func:`mask_url` / :func:`redact`.
"""

from __future__ import annotations

import re

__all__ = ["MASK", "mask_url", "redact"]

MASK = "***"

_URL = re.compile(r"\b([a-z][a-z0-9+.-]*://)(\S+)", re.IGNORECASE)
# redis-py also reads ``?password=`` from the query string.
_QUERY_PW = re.compile(r"([?&]password=)[^&\s]*", re.IGNORECASE)


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (the user name stays: it says who);
    also for a URL missing its scheme (``user:pw@host:port``), which users do type."""
    if "://" not in url:
        return _mask_rest("", url)
    return redact(url)


def redact(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@host`` in it masked."""
    return _URL.sub(_mask_match, text)


def _mask_match(m: re.Match[str]) -> str:
    return _mask_rest(m.group(1), m.group(2))


def _mask_rest(scheme: str, rest: str) -> str:
    rest = _QUERY_PW.sub(rf"\g<1>{MASK}", rest)
    if "@" in rest:
        # The password runs from the first ':' of the userinfo to the last '@' (it may
        # itself hold ':' or '@').
        cred, host = rest.rsplit("@", 1)
        if ":" in cred:
            rest = f"{cred.split(':', 1)[0]}:{MASK}@{host}"
    return scheme + rest
