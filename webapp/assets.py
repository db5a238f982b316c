"""The Mini App's static files (``webapp/static``), read, versioned and compressed once at start.

:class:`Assets` reads every file of the folder when the app is built and keeps, per file:

* its **version**: 16 hex digits of a SHA-256 over the file *and every file it imports,
  directly or not* (its closure in the module graph, so import cycles are fine). A change
  anywhere below a module changes that module's version too, so a cached copy never imports
  a stale one;
* its **body** as served: in JavaScript every relative module specifier (``from "./x.js"``,
  ``import "./x.js"``, ``import("./x.js")``) gets ``?v=<version of x.js>``; ``index.html``
  gets ``?v=`` on every ``src``/``href`` naming a file of the folder and a generated
  ``<link rel="modulepreload" fetchpriority="low">`` for every module its module scripts
  import (the whole static graph, plus ``extra_preloads``), so the browser fetches the graph
  at once instead of discovering it one import after another; at low priority, as index.html's
  module script is (issue 25): the stylesheet and the page's own first paint (its static
  shell) do not wait for them. Modules imported only by ``import()`` are not preloaded;
* its **gzip** (level 9) and, with the ``brotli`` package, **br** (quality 11) bodies, for
  text types only and only where smaller. Nothing is compressed per request.

Serving (:meth:`Assets.response`): ``?v=`` equal to the file's version → ``Cache-Control:
public, max-age=31536000, immutable``; no ``v`` or another one (a page of an older deploy) →
``no-cache``: revalidated by ``ETag`` (``If-None-Match`` → 304). ``index.html`` is always
``no-cache``, so a deploy is seen at the next open. Compressed bodies go to clients whose
``Accept-Encoding`` takes them (``Vary: Accept-Encoding``; one ETag per encoding). CSS is
not rewritten (it names no files today); a file it would name is served ``no-cache``.

The folder is read once, when the app is built; in local play (``make run``, where the files
are being edited) :func:`webapp.app.index` reads it again (:meth:`Assets.reload`) when a file has changed since, so a
reload shows the edit.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from aiohttp import web

try:  # optional at import, a dependency in pyproject.toml: without it only gzip is served
    import brotli
except ImportError:  # pragma: no cover - the package is in the project's dependencies
    brotli = None

log = logging.getLogger(__name__)

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
MAX_FILE = 8 * 1024**2  # bytes; larger files are not kept in memory (none is near it)

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".webmanifest": "application/manifest+json; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
}
COMPRESSIBLE = frozenset({".html", ".js", ".mjs", ".css", ".json", ".webmanifest", ".svg", ".txt", ".ico", ".ttf"})
MODULES = frozenset({".js", ".mjs"})

# A relative module specifier in JavaScript: `from "./x.js"`, `import "./x.js"`, `import("./x.js")`.
IMPORT_RE = re.compile(r"""(?P<lead>\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(?P<q>["'])(?P<spec>\.\.?/[^"'?#\s]+)(?P=q)""")
DYNAMIC_LEAD = re.compile(r"\bimport\s*\(")
# src="…" / href="…" in index.html naming a file of the folder (relative, no scheme).
ATTR_RE = re.compile(r"""\b(?P<attr>src|href)=(?P<q>["'])(?P<ref>(?!\w+:|/|#)[^"'?#]+)(?P=q)""")
MODULE_SCRIPT_RE = re.compile(r"""<script\b[^>]*\btype=["']module["'][^>]*\bsrc=["'](?P<ref>[^"'?#]+)""")


@dataclass(frozen=True)
class Asset:
    """One file as served: ``bodies`` maps an encoding (``""`` = identity, ``gzip``, ``br``) to bytes."""

    path: str
    content_type: str
    version: str
    bodies: dict[str, bytes]
    etag: str  # the identity body's; an encoded body's ETag adds "-gzip" / "-br"

    def etag_for(self, encoding: str) -> str:
        return f'"{self.etag}-{encoding}"' if encoding else f'"{self.etag}"'


def _resolve(importer: str, spec: str) -> str | None:
    """``spec`` (relative to ``importer``, both POSIX paths in the folder) as a folder path."""
    parts: list[str] = list(PurePosixPath(importer).parent.parts)
    for part in PurePosixPath(spec).parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


_COMPRESSED: dict[bytes, dict[str, bytes]] = {}  # sha256 of a body -> its smaller encodings


def _compressed(data: bytes) -> dict[str, bytes]:
    """``data`` as gzip (level 9) and br (quality 11) where smaller; kept per content for the
    process (brotli at 11 takes ~0.1 s for the folder: an app built again, as tests do, reuses it)."""
    key = hashlib.sha256(data).digest()
    found = _COMPRESSED.get(key)
    if found is None:
        found = {}
        gz = gzip.compress(data, compresslevel=9, mtime=0)
        if len(gz) < len(data):
            found["gzip"] = gz
        if brotli is not None:
            br = brotli.compress(data, quality=11)
            if len(br) < len(data):
                found["br"] = br
        if len(_COMPRESSED) > 512:  # bounded: a process serves one folder
            _COMPRESSED.clear()
        _COMPRESSED[key] = found
    return found


def _accepts(header: str) -> set[str]:
    """The codings ``Accept-Encoding`` takes (q > 0), lower case."""
    taken = set()
    for item in header.split(","):
        name, _, params = item.strip().partition(";")
        q = 1.0
        for p in params.split(";"):
            k, _, v = p.strip().partition("=")
            if k == "q":
                try:
                    q = float(v)
                except ValueError:
                    q = 0.0
        if name and q > 0:
            taken.add(name.strip().lower())
    return taken


class Assets:
    """Every file of ``root`` (hidden files and folders left out), ready to serve.

    ``extra_preloads``: dynamically imported modules that ``index.html`` preloads too (local
    play always imports ``tg-local.js``). A missing folder or file serves 404
    (:meth:`get` returns None); an import naming no file of the folder is logged and left as is.
    """

    def __init__(self, root: Path, *, extra_preloads: tuple[str, ...] = ()) -> None:
        self.root = root
        self.extra_preloads = extra_preloads
        self.stamp = self._stamp()
        raw: dict[str, bytes] = {}
        if root.is_dir():
            for path in sorted(root.rglob("*")):
                rel = path.relative_to(root).as_posix()
                if any(p.startswith(".") for p in rel.split("/")) or not path.is_file():
                    continue
                if path.stat().st_size > MAX_FILE:
                    log.warning("static file %s is over %d bytes: not served", rel, MAX_FILE)
                    continue
                raw[rel] = path.read_bytes()
        self.imports: dict[str, dict[str, str]] = {}  # module -> {specifier: folder path}
        self.static_imports: dict[str, list[str]] = {}  # module -> folder paths, static imports only
        for rel, data in raw.items():
            if PurePosixPath(rel).suffix.lower() in MODULES:
                self._scan(rel, data.decode("utf-8"), raw)
        self.versions = {rel: self._version(rel, raw) for rel in raw}
        self.assets: dict[str, Asset] = {}
        for rel, data in raw.items():
            suffix = PurePosixPath(rel).suffix.lower()
            if suffix in MODULES:
                data = self._rewrite_module(rel, data.decode("utf-8")).encode("utf-8")
            elif rel == "index.html":
                data = self._rewrite_index(data.decode("utf-8"), extra_preloads).encode("utf-8")
            self.assets[rel] = self._asset(rel, suffix, data)

    def _stamp(self) -> tuple:
        """What the folder holds now: (path, size, mtime) of every file (for :meth:`changed`)."""
        if not self.root.is_dir():
            return ()
        return tuple((p.as_posix(), st.st_size, st.st_mtime_ns) for p in sorted(self.root.rglob("*"))
                     if p.is_file() and (st := p.stat()))

    def changed(self) -> bool:
        """Whether a file of the folder was added, removed or changed since this was built."""
        return self._stamp() != self.stamp

    def reload(self) -> None:
        """Read the folder again, in place (unchanged files reuse their compressed bodies)."""
        self.__init__(self.root, extra_preloads=self.extra_preloads)

    # ------------------------------------------------------------------ building

    def _scan(self, rel: str, text: str, raw: dict[str, bytes]) -> None:
        found: dict[str, str] = {}
        static: list[str] = []
        for m in IMPORT_RE.finditer(text):
            target = _resolve(rel, m["spec"])
            if target is None or target not in raw:
                log.warning("%s imports %s, which is not in %s", rel, m["spec"], self.root)
                continue
            found[m["spec"]] = target
            if not DYNAMIC_LEAD.match(m["lead"]) and target not in static:
                static.append(target)
        self.imports[rel] = found
        self.static_imports[rel] = static

    def closure(self, rel: str, *, static_only: bool = False) -> list[str]:
        """``rel`` and every module it imports, directly or not, in breadth-first order."""
        seen = [rel]
        i = 0
        while i < len(seen):
            edges = self.static_imports.get(seen[i], []) if static_only else self.imports.get(seen[i], {}).values()
            for target in edges:
                if target not in seen:
                    seen.append(target)
            i += 1
        return seen

    def _version(self, rel: str, raw: dict[str, bytes]) -> str:
        digest = hashlib.sha256()
        for name in sorted(self.closure(rel)):
            digest.update(name.encode() + b"\0" + hashlib.sha256(raw[name]).digest())
        return digest.hexdigest()[:16]

    def url(self, rel: str) -> str:
        """``rel``'s versioned name, e.g. ``main.js?v=0123456789abcdef``."""
        return f"{rel}?v={self.versions[rel]}"

    def _rewrite_module(self, rel: str, text: str) -> str:
        found = self.imports.get(rel, {})

        def versioned(m: re.Match[str]) -> str:
            target = found.get(m["spec"])
            if target is None:
                return m[0]
            return f"{m['lead']}{m['q']}{m['spec']}?v={self.versions[target]}{m['q']}"

        return IMPORT_RE.sub(versioned, text)

    def _rewrite_index(self, text: str, extra_preloads: tuple[str, ...]) -> str:
        def versioned(m: re.Match[str]) -> str:
            ref = m["ref"]
            if ref not in self.versions:
                return m[0]
            return f"{m['attr']}={m['q']}{self.url(ref)}{m['q']}"

        entries = [m["ref"] for m in MODULE_SCRIPT_RE.finditer(text) if m["ref"] in self.versions]
        preload: list[str] = []
        for entry in entries:
            for rel in self.closure(entry, static_only=True)[1:]:
                if rel not in preload and rel not in entries:
                    preload.append(rel)
        for rel in extra_preloads:
            if rel in self.versions and rel not in preload:
                preload.append(rel)
        text = ATTR_RE.sub(versioned, text)
        if preload:
            # fetchpriority="low": the stylesheet (render-blocking) and index.html's own first
            # paint come first; the modules follow at once, as the module script itself does
            links = "".join(f'    <link rel="modulepreload" href="{self.url(rel)}" fetchpriority="low" />\n'
                            for rel in preload)
            at = text.find("</head>")
            if at >= 0:
                line = text.rfind("\n", 0, at) + 1
                text = text[:line] + "    <!-- generated at start by webapp.assets: the whole module graph -->\n" \
                    + links + text[line:]
        return text

    def _asset(self, rel: str, suffix: str, data: bytes) -> Asset:
        bodies = {"": data}
        if suffix in COMPRESSIBLE and len(data) > 256:
            bodies.update(_compressed(data))
        return Asset(
            path=rel,
            content_type=CONTENT_TYPES.get(suffix, "application/octet-stream"),
            version=self.versions[rel],
            bodies=bodies,
            etag=hashlib.sha256(data).hexdigest()[:24],
        )

    # ------------------------------------------------------------------ serving

    def get(self, rel: str) -> Asset | None:
        return self.assets.get(rel)

    def response(self, request: web.Request, asset: Asset) -> web.Response:
        """``asset`` for ``request``: its encoding, cache headers, 304 on a matching ``If-None-Match``."""
        encoding = ""
        if len(asset.bodies) > 1:
            taken = _accepts(request.headers.get("Accept-Encoding", ""))
            for name in ("br", "gzip"):
                if name in asset.bodies and name in taken:
                    encoding = name
                    break
        etag = asset.etag_for(encoding)
        versioned = asset.path != "index.html" and request.query.get("v") == asset.version
        headers = {"Cache-Control": IMMUTABLE if versioned else REVALIDATE, "ETag": etag}
        if len(asset.bodies) > 1:
            headers["Vary"] = "Accept-Encoding"
        inm = request.headers.get("If-None-Match")
        if inm is not None:
            tags = {t.strip().removeprefix("W/") for t in inm.split(",")}
            if etag in tags or "*" in tags:
                return web.Response(status=304, headers=headers)
        if encoding:
            headers["Content-Encoding"] = encoding
        content_type, _, charset = asset.content_type.partition("; charset=")
        return web.Response(body=asset.bodies[encoding], headers=headers, content_type=content_type,
                            charset=charset or None)
