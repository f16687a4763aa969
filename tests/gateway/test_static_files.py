"""The dashboard's static files answered from memory (gateway/static_files.py): the same
answers as Starlette's StaticFiles, and an edited file served as edited."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.testclient import TestClient

from gateway.routes.dashboard import STATIC
from gateway.static_files import MemoryStaticFiles


def _clients(directory: Path) -> tuple[TestClient, TestClient]:
    def app(cls: type[StaticFiles]) -> TestClient:
        return TestClient(Starlette(routes=[Mount("/ui", cls(directory=directory))]))

    return app(MemoryStaticFiles), app(StaticFiles)


def _same(a: httpx.Response, b: httpx.Response) -> None:
    assert a.status_code == b.status_code
    assert a.headers.multi_items() == b.headers.multi_items()
    assert a.content == b.content


@pytest.mark.parametrize("path", ["/ui/js/map.js", "/ui/app.css", "/ui/js/nope.js", "/ui/js",
                                  "/ui/../index.html", "/ui/js/app.js"])
def test_same_answers_as_static_files(path: str) -> None:
    mem, plain = _clients(STATIC)
    for _ in range(2):  # the first read fills the cache, the second answers from it
        _same(mem.get(path), plain.get(path))
        _same(mem.head(path), plain.head(path))
        _same(mem.get(path, headers={"Range": "bytes=0-9"}),
              plain.get(path, headers={"Range": "bytes=0-9"}))


def test_conditional_requests_answer_304() -> None:
    mem, plain = _clients(STATIC)
    first = mem.get("/ui/js/map.js")
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    for headers in ({"If-None-Match": etag}, {"If-None-Match": f'W/{etag}, "x"'},
                    {"If-Modified-Since": modified}, {"If-None-Match": '"other"'}):
        got, want = mem.get("/ui/js/map.js", headers=headers), plain.get("/ui/js/map.js",
                                                                         headers=headers)
        _same(got, want)
    assert mem.get("/ui/js/map.js", headers={"If-None-Match": etag}).status_code == 304


def test_an_edited_file_is_served_as_edited(tmp_path: Path) -> None:
    f = tmp_path / "a.js"
    f.write_text("one")
    mem, plain = _clients(tmp_path)
    assert mem.get("/ui/a.js").text == "one"
    f.write_text("two, longer")  # another size
    _same(mem.get("/ui/a.js"), plain.get("/ui/a.js"))
    assert mem.get("/ui/a.js").text == "two, longer"
    st = f.stat()  # the same size and modification time, another inode: another file
    f2 = tmp_path / "b.js"
    f2.write_text("ten, longer")
    os.utime(f2, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(f2, f)
    assert mem.get("/ui/a.js").text == "ten, longer"
    f.unlink()
    assert mem.get("/ui/a.js").status_code == 404
