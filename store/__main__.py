"""Command line: ``python -m store rebuild-leaderboards`` and ``python -m store export TABLE``.

Connects with :class:`store.StoreSettings` (``REDIS_URL``, ``KARTY_PREFIX``) unless
``--redis-url`` / ``--prefix`` are given.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from store.settings import StoreSettings
from store.store import Store


async def _run(args: argparse.Namespace) -> int:
    settings = StoreSettings()
    store = Store.from_url(args.redis_url or settings.redis_url, prefix=args.prefix or settings.prefix)
    try:
        if args.command == "rebuild-leaderboards":
            n = await store.rebuild_leaderboards()
            print(f"rebuilt the leaderboards from {n} rated matches")
        elif args.command == "export":
            print(json.dumps(await store.export_case(args.table), ensure_ascii=False, indent=1))
        return 0
    finally:
        await store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m store", description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default=None, help="default: REDIS_URL or redis://127.0.0.1:6379/0")
    parser.add_argument("--prefix", default=None, help="key prefix (default: KARTY_PREFIX or karty)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("rebuild-leaderboards", help="recompute every leaderboard from the ledger")
    exp = sub.add_parser("export", help="print a table's game as a replay case (python -m engine replay)")
    exp.add_argument("table")
    args = parser.parse_args(argv)
    return asyncio.run(_run(args))


if __name__ == "__main__":
    sys.exit(main())
