"""Settings of the store package (pydantic-settings; read when instantiated, never at import)."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class StoreSettings(BaseSettings):
    """``REDIS_URL`` (default ``redis://127.0.0.1:6379/0``; ``redis+cluster://h1:7000,h2:7001`` for a
    Redis Cluster), ``REDIS_CLUSTER`` (``1``: treat ``REDIS_URL`` as one node of a cluster; see
    :mod:`store.connect`), ``KARTY_PREFIX`` (key prefix, ``karty``) and the service's bounds
    on Redis: ``REDIS_POOL_SIZE`` connections per process (48), ``REDIS_TIMEOUT`` s per read
    or write (2.0), ``REDIS_POOL_TIMEOUT`` s waiting for a free connection (0.5); past a
    bound a call fails and the web app answers 503. ``REDIS_WAIT_REPLICAS``: replicas that
    must have a commit before the player hears it was made (default 1 on a cluster, 0 on
    one Redis; :mod:`store.durable`). ``REDIS_SCHED_SHARDS``: shards of the deadline set and the
    bot's outbox (default 1 on one Redis, 8 on a cluster; the same in every process).
    """

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    redis_url: str = Field(
        "redis://127.0.0.1:6379/0", validation_alias=AliasChoices("REDIS_URL", "redis_url")
    )
    redis_cluster: bool = Field(False, validation_alias=AliasChoices("REDIS_CLUSTER", "redis_cluster"))
    prefix: str = Field("karty", validation_alias=AliasChoices("KARTY_PREFIX", "prefix"))
    pool_size: int = Field(48, ge=2, validation_alias=AliasChoices("REDIS_POOL_SIZE", "pool_size"))
    timeout: float = Field(2.0, gt=0, validation_alias=AliasChoices("REDIS_TIMEOUT", "timeout"))
    pool_timeout: float = Field(0.5, gt=0, validation_alias=AliasChoices("REDIS_POOL_TIMEOUT", "pool_timeout"))

    wait_replicas: int | None = Field(None, ge=0, validation_alias=AliasChoices("REDIS_WAIT_REPLICAS",
                                                                               "wait_replicas"))

    sched_shards: int | None = Field(None, ge=1, le=1024, validation_alias=AliasChoices("REDIS_SCHED_SHARDS",
                                                                                        "sched_shards"))

    def bounds(self) -> dict[str, float | int]:
        """The keyword arguments of :meth:`store.Store.from_url` for these bounds."""
        out: dict[str, float | int] = {"pool_size": self.pool_size, "timeout": self.timeout,
                                       "pool_timeout": self.pool_timeout}
        if self.wait_replicas is not None:
            out["replicas"] = self.wait_replicas
        if self.sched_shards is not None:
            out["shards"] = self.sched_shards
        return out
