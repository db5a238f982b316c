"""The Mini App's files as the app serves them (issue 25, item 11; webapp.assets): versioned
URLs cached for a year, index.html revalidated, precompressed gzip and brotli, the whole
module graph preloaded and every import pointing at a versioned URL."""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import brotli
import pytest

from webapp.app import STATIC_DIR
from webapp.assets import IMMUTABLE, Assets
from webapp.keys import ASSETS

SPEC_RE = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.\.?/[^"']+)["']""")
MODULE_SRC_RE = re.compile(r"""<script\b[^>]*type="module"[^>]*src="([^"]+)\"""")
PRELOAD_RE = re.compile(r"""<link rel="modulepreload" href="([^"]+)\"""")
STATIC_IMPORT_RE = re.compile(r"""(?:\bfrom\s*|\bimport\s+)["']\./([^"'?]+)""")


def raw_static_graph(entry: str) -> set[str]:
    """The modules ``entry`` imports statically, directly or not, read from the files on disk."""
    seen, todo = set(), [entry]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += STATIC_IMPORT_RE.findall((STATIC_DIR / name).read_text(encoding="utf-8"))
    return seen - {entry}


async def test_index_is_revalidated_by_etag_and_304(web_client) -> None:
    client = await web_client()
    resp = await client.get("/")
    assert resp.status == 200 and resp.content_type == "text/html"
    assert resp.headers["Cache-Control"] == "no-cache"
    etag = resp.headers["ETag"]
    for path in ("/", "/?table=T1", "/index.html"):
        again = await client.get(path, headers={"If-None-Match": etag, "Accept-Encoding": resp.headers.get(
            "Content-Encoding", "identity")})
        assert again.status == 304, path
        assert again.headers["ETag"] == etag and again.headers["Cache-Control"] == "no-cache"
    # index.html stays no-cache even when asked for "at a version"
    resp = await client.get("/index.html?v=" + client.app[ASSETS].versions["index.html"])
    assert resp.headers["Cache-Control"] == "no-cache"
    other = await client.get("/", headers={"If-None-Match": '"something-else"'})
    assert other.status == 200


async def test_versioned_files_are_immutable_and_others_revalidated(web_client) -> None:
    client = await web_client()
    assets = client.app[ASSETS]
    for name in ("main.js", "style.css", "favicon.svg", "i18n_texts.js"):
        version = assets.versions[name]
        for prefix in ("/", "/static/"):
            resp = await client.get(f"{prefix}{name}?v={version}")
            assert resp.status == 200, name
            assert resp.headers["Cache-Control"] == IMMUTABLE == "public, max-age=31536000, immutable"
            assert resp.headers["ETag"]
        for url in (f"/{name}", f"/{name}?v=0000000000000000"):  # unversioned, or a version not this one
            resp = await client.get(url)
            assert resp.status == 200 and resp.headers["Cache-Control"] == "no-cache", url
            assert (await client.get(url, headers={"If-None-Match": resp.headers["ETag"]})).status == 304
    head = await client.head(f"/main.js?v={assets.versions['main.js']}")
    assert head.status == 200 and head.headers["Cache-Control"] == IMMUTABLE


async def test_text_files_are_served_precompressed(web_client) -> None:
    client = await web_client()
    for name in ("main.js", "style.css", "i18n_texts.js", "index.html"):
        url = "/" if name == "index.html" else f"/{name}"
        plain = await client.get(url, headers={"Accept-Encoding": "identity"})
        body = await plain.read()
        assert "Content-Encoding" not in plain.headers and plain.headers["Vary"] == "Accept-Encoding"
        for accept, coding, decode in (("gzip, deflate, br", "br", brotli.decompress), ("gzip", "gzip", gzip.decompress),
                                       ("br;q=0, gzip;q=0.5", "gzip", gzip.decompress)):
            resp = await client.get(url, headers={"Accept-Encoding": accept}, auto_decompress=False)
            assert resp.headers["Content-Encoding"] == coding, (name, accept)
            assert resp.headers["Vary"] == "Accept-Encoding"
            packed = await resp.read()
            assert len(packed) < len(body) / 2, (name, coding, len(packed), len(body))
            assert decode(packed) == body
            assert resp.headers["ETag"] != plain.headers["ETag"]  # one ETag per representation
            assert (await client.get(url, headers={"Accept-Encoding": accept, "If-None-Match": resp.headers["ETag"]},
                                     auto_decompress=False)).status == 304
    # compressed once, when the app was built: the same bytes object every time
    assets = client.app[ASSETS]
    assert assets.get("main.js").bodies["br"] is assets.get("main.js").bodies["br"]


async def test_every_module_import_resolves_to_a_versioned_url(web_client) -> None:
    """From index.html down: every script, preload and import names ``?v=<its version>``,
    and each of them answers 200 with the year-long immutable cache."""
    client = await web_client(local_play=True, bot_token=None)
    assets = client.app[ASSETS]
    html = await (await client.get("/")).text()
    entries = MODULE_SRC_RE.findall(html)
    assert entries and all("?v=" in e for e in entries)
    preloads = PRELOAD_RE.findall(html)
    todo = list(entries) + preloads
    for ref in re.findall(r'\b(?:src|href)="([^"#:]+)"', html):
        assert ref.split("?")[0] not in assets.versions or "?v=" in ref, ref
    checked: set[str] = set()
    while todo:
        url = todo.pop()
        if url in checked:
            continue
        checked.add(url)
        name, _, query = url.partition("?v=")
        assert query == assets.versions[name], url
        resp = await client.get("/" + url)
        assert resp.status == 200 and resp.headers["Cache-Control"] == IMMUTABLE, url
        if name.endswith(".js"):
            specs = SPEC_RE.findall(await resp.text())
            for spec in specs:
                assert "?v=" in spec, (name, spec)
                todo.append(spec.removeprefix("./"))
    reached = {u.partition("?")[0] for u in checked}
    assert {m for m in reached if m.endswith(".js")} == {p.name for p in STATIC_DIR.glob("*.js")}  # none left out


async def test_the_whole_static_module_graph_is_preloaded(web_client) -> None:
    for local, extra in ((False, set()), (True, {"tg-local.js"})):
        client = await web_client(local_play=local, bot_token=None if local else "1:x")
        html = await (await client.get("/")).text()
        preloaded = {u.partition("?")[0] for u in PRELOAD_RE.findall(html)}
        assert preloaded == raw_static_graph("main.js") | extra
        assert html.index("modulepreload") < html.index("</head>")


def test_versions_change_with_a_file_and_with_what_it_imports(tmp_path: Path) -> None:
    root = tmp_path / "static"
    shutil.copytree(STATIC_DIR, root)
    before = Assets(root)
    cards = root / "cards.js"
    cards.write_text(cards.read_text(encoding="utf-8") + "\n// changed\n", encoding="utf-8")
    after = Assets(root)
    changed = {name for name in before.versions if before.versions[name] != after.versions[name]}
    # cards.js and everything importing it, directly or not; the page names the new URLs
    assert {"cards.js", "render.js", "main.js", "screens.js"} <= changed
    assert before.get("index.html").etag != after.get("index.html").etag
    assert {"clock.js", "i18n.js", "i18n_texts.js", "style.css", "state.js", "api.js", "tg.js"}.isdisjoint(changed)
    assert f'href="cards.js?v={after.versions["cards.js"]}"' in after.get("index.html").bodies[""].decode()
    assert f'"./cards.js?v={after.versions["cards.js"]}"' in after.get("render.js").bodies[""].decode()
    assert before.versions["cards.js"] not in after.get("render.js").bodies[""].decode()
    style = root / "style.css"
    style.write_text(style.read_text(encoding="utf-8") + "\n/* changed */\n", encoding="utf-8")
    third = Assets(root)
    assert third.versions["style.css"] != after.versions["style.css"]
    assert third.versions["main.js"] == after.versions["main.js"]


@pytest.mark.parametrize("bad", ["/static/../app.py", "/static/%2e%2e/app.py", "/../app.py", "/.hidden",
                                 "/nope.js", "/static/", "/static/main.js%00", "/main.js/x"])
async def test_only_the_folders_own_files_are_served(web_client, bad) -> None:
    client = await web_client()
    assert (await client.get(bad)).status == 404


COMPOSITED = {"opacity", "transform"}  # what the compositor animates without a repaint per frame


def test_endless_animations_change_only_composited_properties() -> None:
    """An animation that runs the whole turn (the stock's pulse, «ОДНА КАРТА!»'s glow, the
    spinner) may change only opacity and transform: a box-shadow or filter pulse repainted
    every frame and kept a phone's main thread busy (Lighthouse: seconds of blocking time)."""
    css = (STATIC_DIR / "style.css").read_text(encoding="utf-8")
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    keyframes = {}
    for m in re.finditer(r"@keyframes\s+([\w-]+)\s*\{((?:[^{}]*\{[^{}]*\})*)\s*\}", css):
        props = set(re.findall(r"([\w-]+)\s*:", re.sub(r"^[^{]*\{|\}[^{]*\{", ";", m[2])))
        keyframes[m[1]] = props
    endless = set()
    for decl in re.findall(r"animation(?:-name)?\s*:\s*([^;}]+)", css):
        if "infinite" in decl:
            endless |= {w for w in re.findall(r"[\w-]+", decl) if w in keyframes}
    assert {"pulse", "ready-pulse", "spin"} <= endless
    wrong = {name: keyframes[name] - COMPOSITED for name in endless if keyframes[name] - COMPOSITED}
    assert not wrong, wrong


@pytest.mark.parametrize("local", [True, False])
async def test_local_play_serves_an_edited_file_at_once_the_service_at_its_restart(web_client, tmp_path,
                                                                                  monkeypatch, local) -> None:
    """`make run` is where the page is edited: a reload shows the edit (new versions). The
    service reads its files once: a deploy restarts it."""
    import webapp.app

    root = tmp_path / "static"
    shutil.copytree(STATIC_DIR, root)
    monkeypatch.setattr(webapp.app, "STATIC_DIR", root)
    client = await web_client(local_play=local, bot_token=None if local else "1:x")
    first = await (await client.get("/")).text()
    cards = root / "cards.js"
    cards.write_text(cards.read_text(encoding="utf-8") + "\n// edited\n", encoding="utf-8")
    second = await (await client.get("/")).text()
    served = await (await client.get("/cards.js")).text()
    assert (first != second) is local
    assert served.endswith("// edited\n") is local
