"""The web application's settings (pydantic-settings, read from the environment).

Nothing is read at import time: the entry point (``python -m webapp``) builds one
:class:`WebSettings` and hands it to :func:`webapp.app.create_app`; tests build their own.
"""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class WebSettings(BaseSettings):
    """Settings of the aiohttp application.

    Environment variables (all optional): ``HOST`` (127.0.0.1), ``PORT`` (8080),
    ``REDIS_URL`` (redis://127.0.0.1:6379/0), ``PUBLIC_URL`` (the https origin the
    Mini App is served at, for links), ``LOCAL_PLAY`` (local sign-in and tables with
    computer players; ignored whenever ``BOT_TOKEN`` is set), ``BOT_TOKEN`` (the bot's
    token: initData is checked against it), ``BOT_USERNAME`` and ``WEBAPP_SHORT_NAME``
    (given to the front end by ``/api/config`` for direct links).
    """

    model_config = SettingsConfigDict(env_prefix="", extra="ignore", case_sensitive=False, populate_by_name=True)

    host: str = Field("127.0.0.1", alias="HOST")
    port: int = Field(8080, alias="PORT", ge=0, le=65535)
    redis_url: str = Field("redis://127.0.0.1:6379/0", alias="REDIS_URL")
    public_url: str | None = Field(None, alias="PUBLIC_URL")
    local_play: bool = Field(False, alias="LOCAL_PLAY")
    bot_token: SecretStr | None = Field(None, alias="BOT_TOKEN")
    bot_username: str | None = Field(None, alias="BOT_USERNAME")
    webapp_short_name: str | None = Field(None, alias="WEBAPP_SHORT_NAME")

    # Limits (seldom changed; tests lower some of them).
    init_data_max_age: int = Field(24 * 3600, alias="INIT_DATA_MAX_AGE", description="seconds")
    session_ttl: int = Field(12 * 3600, alias="SESSION_TTL", ge=2,
                             description="seconds a server-issued session lasts (renewed while in use)")
    client_max_size: int = Field(16 * 1024, alias="CLIENT_MAX_SIZE", description="bytes per request body")
    action_rate: float = Field(10.0, alias="ACTION_RATE", description="actions per second per user (all processes)")
    action_burst: int = Field(20, alias="ACTION_BURST", description="token bucket size")
    # Request limits of one process (webapp.ratelimit.RequestLimits; in memory: a refusal costs no Redis).
    read_rate: float = Field(20.0, alias="READ_RATE", gt=0, description="GET requests per second per user")
    read_burst: int = Field(60, alias="READ_BURST", ge=1, description="token bucket size")
    write_rate: float = Field(10.0, alias="WRITE_RATE", gt=0,
                              description="other requests (POST…) per second per user")
    write_burst: int = Field(30, alias="WRITE_BURST", ge=1, description="token bucket size")
    address_rate: float = Field(100.0, alias="ADDRESS_RATE", gt=0,
                                description="/api requests and socket handshakes per second per client address "
                                            "(signed in or not; several users may share one behind a NAT)")
    address_burst: int = Field(300, alias="ADDRESS_BURST", ge=1, description="token bucket size")
    health_rate: float = Field(20.0, alias="HEALTH_RATE", gt=0, description="/healthz per second per address")
    health_burst: int = Field(50, alias="HEALTH_BURST", ge=1, description="token bucket size")
    limit_delay: float = Field(0.25, alias="LIMIT_DELAY", ge=0, le=5,
                               description="seconds a refused request waits for its 429: a flood on kept-alive "
                                           "connections gets 1/LIMIT_DELAY answers per connection and second")
    trusted_proxies: str = Field("", alias="TRUSTED_PROXIES",
                                 description="comma-separated addresses of reverse proxies whose X-Forwarded-For "
                                             "names the client (empty: the peer address is the client)")
    ws_frame_rate: float = Field(2.0, alias="WS_FRAME_RATE", gt=0, description="client frames per second per socket")
    ws_frame_burst: int = Field(20, alias="WS_FRAME_BURST", ge=1, description="token bucket size")
    ws_max_msg_size: int = Field(8 * 1024, alias="WS_MAX_MSG_SIZE")
    ws_auth_timeout: float = Field(10.0, alias="WS_AUTH_TIMEOUT", description="seconds to send the auth message")
    ws_idle_timeout: float = Field(90.0, alias="WS_IDLE_TIMEOUT", description="seconds without a client message")
    ws_heartbeat: float = Field(25.0, alias="WS_HEARTBEAT", description="protocol-level ping interval")
    ws_send_queue: int = Field(8, alias="WS_SEND_QUEUE", description="messages queued per socket before collapsing")
    ws_send_timeout: float = Field(15.0, alias="WS_SEND_TIMEOUT", description="a send stuck longer closes the socket")
    ws_per_user: int = Field(12, alias="WS_PER_USER", description="open sockets per user (all processes)")
    presence_ttl: int = Field(30, alias="PRESENCE_TTL")
    presence_flush: float = Field(0.25, alias="PRESENCE_FLUSH", description="seconds between presence batches")
    admit_limit: int = Field(64, alias="ADMIT_LIMIT", ge=1, description="requests served at once per process")
    admit_queue: int = Field(256, alias="ADMIT_QUEUE", ge=0, description="requests waiting for a slot at most")
    admit_wait: float = Field(0.25, alias="ADMIT_WAIT", ge=0, description="seconds a request may wait for a slot")
    admit_max_lag: float | None = Field(None, alias="ADMIT_MAX_LAG", gt=0,
                                        description="event-loop lateness (s) beyond which new requests are "
                                                    "refused; unset: off (a machine of the service's own: 0.5)")
    run_worker: bool = Field(True, alias="RUN_WORKER", description="run store.run_worker in this process")
    # Operating (issue 26: webapp.metrics, webapp.logs, webapp.drain).
    metrics_token: SecretStr | None = Field(None, alias="METRICS_TOKEN",
                                            description="a bearer token that may read GET /metrics from anywhere "
                                                        "(unset: loopback and TRUSTED_PROXIES only)")
    log_format: str = Field("text", alias="LOG_FORMAT", pattern="^(text|json)$",
                            description="text (for people) or json (one object a line, for machines)")
    access_log: bool | None = Field(None, alias="ACCESS_LOG",
                                    description="one log line per request (unset: off in local play, else on)")
    log_repeat_interval: float = Field(60.0, alias="LOG_REPEAT_INTERVAL", gt=0,
                                       description="seconds a repeated failure is counted instead of logged")
    drain_seconds: float = Field(10.0, alias="DRAIN_SECONDS", gt=0,
                                 description="seconds from SIGTERM to exit at most (webapp.drain)")
    metrics_sample: float = Field(5.0, alias="METRICS_SAMPLE", ge=0,
                                  description="seconds between reads of the outbox backlog and due timers "
                                              "for /metrics (0: off)")

    @property
    def token(self) -> str | None:
        """The bot token as plain text, or None (no bot: local play only)."""
        return self.bot_token.get_secret_value() if self.bot_token else None

    @property
    def local(self) -> bool:
        """True when local play is on: asked for and no real bot token configured (S9)."""
        return self.local_play and not self.token
