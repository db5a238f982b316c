"""Command line: the operator's tools on the store.

``python -m store show TABLE`` (versions, seats, deadline, watchers: :func:`store.operate.describe`),
``python -m store tables CHAT_ID`` (a chat's tables), ``python -m store end TABLE [--reason …]``
(end an abandoned table without rating it: :func:`store.operate.end_table`),
``python -m store rebuild-leaderboards`` and ``python -m store export TABLE``. ``--json`` prints
``show``/``tables`` as JSON. Exit status 1 with a message for an unknown table or a refused end.

Connects with :class:`store.StoreSettings` (``REDIS_URL``, ``KARTY_PREFIX``) unless
``--redis-url`` / ``--prefix`` are given.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime

from store.settings import StoreSettings
from store.store import Store


async def _run(args: argparse.Namespace) -> int:
    settings = StoreSettings()
    store = Store.from_url(args.redis_url or settings.redis_url, prefix=args.prefix or settings.prefix)
    try:
        if args.command in ("show", "tables", "end"):
            return await _operate(store, args)
        if args.command == "rebuild-leaderboards":
            n = await store.rebuild_leaderboards()
            print(f"rebuilt the leaderboards from {n} rated matches")
        elif args.command == "export":
            print(json.dumps(await store.export_case(args.table), ensure_ascii=False, indent=1))
        return 0
    finally:
        await store.close()


def _when(at: float | None) -> str:
    if at is None:
        return "-"
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


async def _operate(store: Store, args: argparse.Namespace) -> int:
    from store import operate
    from store.models import StoreError

    try:
        if args.command == "show":
            info = await operate.describe(store, args.table)
            if args.json:
                print(json.dumps(info, ensure_ascii=False, indent=1))
                return 0
            print(f"table {info['id']}  {info['game']}  chat {info['chat_id']}")
            print(f"  version {info['version']} (stored {info['stored_version']}, {info['log_entries']} log entries)"
                  f"  rated {info['rated']}")
            if info["ended"]:
                why = f" (abandoned: {info['abandoned']['reason']})" if info["abandoned"] else ""
                print(f"  ended {_when(info['ended'])}{why}")
            print(f"  deadline {_when(info['deadline'])}  next due {_when(info['next_due'])}"
                  f"  expires in {info['expires_in']} s")
            for seat in info["seats"]:
                who = "computer " + (seat["level"] or "regular") if seat["computer"] else f"user {seat['user_id']}"
                extra = (" left" if seat.get("left") else "") + (" auto" if seat["auto"] else "")
                extra += f" strikes {seat['strikes']}" if seat["strikes"] else ""
                print(f"  seat {seat['seat']}: {seat['name']} ({who}){extra}")
            print(f"  watched by {len(info['watching_processes'])} processes; open by users {info['present']}")
        elif args.command == "tables":
            rows = await operate.chat_summaries(store, args.chat_id)
            if args.json:
                print(json.dumps(rows, ensure_ascii=False, indent=1))
                return 0
            for row in rows:
                state = "over" if row["over"] else "live"
                print(f"{row['id']}  {row['game']:5}  v{row['version']:<4} {state:4}  {', '.join(row['seats'])}")
            if not rows:
                print(f"no tables kept for chat {args.chat_id}")
        else:
            version = await operate.end_table(store, args.table, args.reason)
            print(f"table {args.table} ended unrated at version {version} ({args.reason})")
        return 0
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m store", description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default=None, help="default: REDIS_URL or redis://127.0.0.1:6379/0")
    parser.add_argument("--prefix", default=None, help="key prefix (default: KARTY_PREFIX or karty)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("rebuild-leaderboards", help="recompute every leaderboard from the ledger")
    exp = sub.add_parser("export", help="print a table's game as a replay case (python -m engine replay)")
    exp.add_argument("table")
    show = sub.add_parser("show", help="a table: versions, seats, deadline, watchers")
    show.add_argument("table")
    show.add_argument("--json", action="store_true", help="print JSON")
    tables = sub.add_parser("tables", help="a chat's tables (live, or finished within 7 days)")
    tables.add_argument("chat_id", type=int)
    tables.add_argument("--json", action="store_true", help="print JSON")
    end = sub.add_parser("end", help="end an abandoned table without rating it")
    end.add_argument("table")
    end.add_argument("--reason", default="abandoned", help="kept with the table (default: abandoned)")
    args = parser.parse_args(argv)
    return asyncio.run(_run(args))


if __name__ == "__main__":
    sys.exit(main())
