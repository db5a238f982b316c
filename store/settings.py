"""Settings of the store package (pydantic-settings; read when instantiated, never at import)."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class StoreSettings(BaseSettings):
    """``REDIS_URL`` (default ``redis://127.0.0.1:6379/0``) and ``KARTY_PREFIX`` (key prefix, ``karty``)."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    redis_url: str = Field(
        "redis://127.0.0.1:6379/0", validation_alias=AliasChoices("REDIS_URL", "redis_url")
    )
    prefix: str = Field("karty", validation_alias=AliasChoices("KARTY_PREFIX", "prefix"))
