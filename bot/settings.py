"""The bot's settings (pydantic-settings, read from the environment when constructed)."""

from __future__ import annotations

import hashlib

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class BotSettings(BaseSettings):
    """Environment: ``BOT_TOKEN``, ``WEBAPP_SHORT_NAME``, ``PUBLIC_URL``, ``WEBHOOK_URL``,
    ``WEBHOOK_PATH`` (default ``/telegram/webhook``), ``WEBHOOK_SECRET``, ``TELEGRAM_API_URL``.

    * ``webhook_url``: the full public URL Telegram posts updates to (it should end
      with ``webhook_path``). Unset → long polling.
    * ``webhook_secret``: Telegram's ``X-Telegram-Bot-Api-Secret-Token``; when unset a
      secret is derived from the token (see :meth:`secret_token`).
    * ``telegram_api_url``: another Bot API server (a local one, or a fake in tests).
    * ``public_url``: where the Mini App is served (``<public_url>/?table=<id>``).
    * Tuning (tests shrink them): ``lobby_edit_delay`` (s, debounce of lobby edits),
      ``rate_global`` (msg/s), ``rate_chat`` (msg/s per chat), ``rate_group_per_minute`` (per ``rate_group_period`` s),
      ``send_retries`` (how often one send is retried after ``retry_after``),
      ``inbox_claim_seconds`` (a kept update whose handler is silent this long is handled again).
    """

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    bot_token: str = ""
    webapp_short_name: str | None = None
    public_url: str = "http://127.0.0.1:8080"
    webhook_url: str | None = None
    webhook_path: str = "/telegram/webhook"
    webhook_secret: str | None = None
    telegram_api_url: str | None = None

    lobby_edit_delay: float = Field(default=1.0, ge=0)
    rate_global: float = Field(default=30.0, gt=0)
    rate_chat: float = Field(default=1.0, gt=0)
    rate_group_per_minute: float = Field(default=20.0, gt=0)
    rate_group_period: float = Field(default=60.0, gt=0)
    send_retries: int = Field(default=5, ge=0)
    notifier_consumer: str = "bot"
    inbox_claim_seconds: int = Field(default=15, ge=1)

    def secret_token(self) -> str:
        """``webhook_secret`` or, when unset, 48 hex chars derived from the token (allowed by Telegram)."""
        if self.webhook_secret:
            return self.webhook_secret
        return hashlib.sha256(("karty-webhook:" + self.bot_token).encode()).hexdigest()[:48]

    def table_url(self, table_id: str) -> str:
        """The Mini App URL of a table: ``<public_url>/?table=<id>``."""
        return f"{self.public_url.rstrip('/')}/?table={table_id}"
