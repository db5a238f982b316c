"""webapp package (see DESIGN.md): one aiohttp application for the Mini App.

* :mod:`webapp.app` — ``create_app(settings, store)``: static files, API, WebSocket.
* :mod:`webapp.settings` — ``WebSettings`` (pydantic-settings).
* :mod:`webapp.auth` — Telegram initData checks (and signing, for local play).
* :mod:`webapp.api`, :mod:`webapp.local` — the JSON API (CONTRACTS §3).
* :mod:`webapp.ws` — ``/ws/tables/{id}`` and its per-table fan-out.
* :mod:`webapp.errors` — domain errors mapped to HTTP in one middleware.
* :mod:`webapp.openapi` — ``/api/openapi.json``.
* ``python -m webapp [--local]`` — the process entry point (:mod:`webapp.__main__`).
"""
