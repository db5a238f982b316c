"""The bot's Prometheus metrics (issue 26): Telegram calls, 429s, "your turn" delay, the outbox handled.

In ``prometheus_client``'s default registry, exposed by the web app at ``GET /metrics``
(:mod:`webapp.metrics`). Labels are bounded: a Bot API method's name (the few the bot
calls) and an outcome; never a chat or user id.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import Counter, Histogram

TELEGRAM_CALLS = Counter("karty_telegram_calls_total", "Bot API requests, by method and outcome (ok, "
                         "retry_after: a 429, forbidden, bad_request, not_modified, migrated, network, "
                         "withdrawn: not sent as no longer wanted, error)", ["method", "outcome"])
TELEGRAM_RETRY_AFTER = Counter("karty_telegram_retry_after_seconds_total",
                               "Seconds of retry_after the Bot API asked for in its 429s (the chat's or the "
                               "bot's sending paused that long)")
TURN_DELAY = Histogram("karty_turn_notice_delay_seconds", "From a turn's start (its outbox entry written with "
                       "the commit) to its \"your turn\" message being handed to the Bot API",
                       buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0))
OUTBOX_HANDLED = Counter("karty_outbox_handled_total", "Outbox entries the notifier handled, by kind", ["kind"])

KINDS = frozenset({"turn", "start", "round", "end", "lobby"})


def call(method: Any, outcome: str) -> None:
    """Count one Bot API request of ``method`` (an aiogram method or its name) with ``outcome``."""
    name = getattr(method, "__api_method__", None) or str(method)
    TELEGRAM_CALLS.labels(name[:40], outcome).inc()


def retry_after(seconds: float) -> None:
    """Count a 429 and the ``retry_after`` seconds it asked for."""
    TELEGRAM_RETRY_AFTER.inc(max(0.0, float(seconds)))


def entry_age(entry_id: Any, now: float | None = None) -> float | None:
    """Seconds since the outbox entry ``entry_id`` (``"<ms>-<seq>"`` or ``"<shard>/<ms>-<seq>"``) was written."""
    try:
        ms = int(str(entry_id).rsplit("/", 1)[-1].split("-", 1)[0])
    except ValueError:
        return None
    return max(0.0, (time.time() if now is None else now) - ms / 1000.0)


def turn_notice(entry: dict[str, Any]) -> None:
    """A "your turn" message of ``entry`` (with its ``_id``) is being sent: observe its delay."""
    age = entry_age(entry.get("_id")) if entry.get("_id") else None
    if age is not None:
        TURN_DELAY.observe(age)


def handled(entry: dict[str, Any]) -> None:
    """An outbox entry was handled (and will be acknowledged)."""
    kind = entry.get("kind")
    OUTBOX_HANDLED.labels(kind if kind in KINDS else "other").inc()
