"""The dashboard's static files (``/ui``), answered from memory.

Every dashboard page load fetches its ~25 modules and stylesheet. Starlette's
:class:`StaticFiles` serves each through four hops to a worker thread (stat, open, read,
close): measured, about 2 ms of the gateway's CPU per file, half of what a page load of
the memory map cost it. :class:`MemoryStaticFiles` still looks the file up on each request
(one ``stat``, on the event loop: microseconds for a file of the installed package) and
answers from memory while it is unchanged (same inode, size and modification time): an
edited file is read again on its next request, as before. The answer is the one
:class:`StaticFiles` gives (:class:`FileResponse`'s headers, the 304 on ``If-None-Match``
or ``If-Modified-Since``); a ``HEAD``, a ``Range`` request, a missing file or anything but
a regular file is left to :class:`StaticFiles` itself.
"""

from __future__ import annotations

import stat
from typing import Any

import anyio
from starlette.datastructures import Headers
from starlette.responses import FileResponse, Response
from starlette.staticfiles import NotModifiedResponse, StaticFiles
from starlette.types import Scope

__all__ = ["MemoryStaticFiles"]


class _Cached(Response):
    """A file's bytes, sent with the headers :class:`FileResponse` gave it."""

    def __init__(self, body: bytes, raw_headers: list[tuple[bytes, bytes]]) -> None:
        self.status_code = 200
        self.background = None
        self.body = body
        self.raw_headers = list(raw_headers)


class MemoryStaticFiles(StaticFiles):
    """:class:`StaticFiles` answering unchanged files from memory (module docstring). It
    holds one copy of each file of its directory that was asked for."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        # full path -> ((inode, size, mtime ns), bytes, FileResponse headers)
        self._files: dict[str, tuple[tuple[int, int, int], bytes, Headers]] = {}

    async def get_response(self, path: str, scope: Scope) -> Response:
        request = Headers(scope=scope)
        if scope["method"] != "GET" or "range" in request:
            return await super().get_response(path, scope)
        try:
            full_path, st = self.lookup_path(path)
        except (OSError, ValueError):  # StaticFiles answers these (401, 404)
            return await super().get_response(path, scope)
        if st is None or not stat.S_ISREG(st.st_mode):
            return await super().get_response(path, scope)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        got = self._files.get(full_path)
        if got is None or got[0] != stamp:
            body = await anyio.to_thread.run_sync(_read, full_path)
            if len(body) != st.st_size:  # changed while read: let StaticFiles serve it
                return await super().get_response(path, scope)
            got = (stamp, body, FileResponse(full_path, stat_result=st).headers)
            self._files[full_path] = got
        _, body, headers = got
        if self.is_not_modified(headers, request):
            return NotModifiedResponse(headers)
        return _Cached(body, headers.raw)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
