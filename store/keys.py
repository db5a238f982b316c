"""Every Redis key name Karty uses, in one place (STYLE.md, store/).

Keys are hash-tagged so each script touches one cluster slot:

=============================================  =========  ==========================================
key                                            type       contents / lifetime
=============================================  =========  ==========================================
``P:{g:<table>}:table``                        hash       ``version`` (int), ``doc`` (table JSON, ``schema``, the last ``move``); 48 h, 7 d once over (S7)
``P:{g:<table>}:log``                          list       one entry per committed action (version *n* at index *n-1*): ``<JSON>\t<events JSON>``,
                                                          only ``<JSON>`` once the game is over (compacted); same TTL
``P:{g:<table>}:cids``                         hash       ``<seat>|<client_action_id>`` → the version it committed; same TTL
``P:{g:<table>}:events``                       channel    pub/sub: every commit's version, document and seats' messages (``store.live.pack``)
``P:{g:<table>}:table:sync``                   string     a marker written so ``WAIT`` confirms a repeated commit's answer; seconds
``P:{g:<table>}:here:<user>``                  string     presence heartbeat, short TTL (default 30 s)
``P:{l:<lobby>}:lobby``                        hash       ``version``, ``doc`` (lobby JSON); 1 h since the last change (S1)
``P:{g:<table>}:rematch``                      string     the id of the finished table's "Play again" lobby; as long as the table
``P:{c:<chat>}:lobbies`` / ``:tables``         zset       lobby / table ids of a chat, score = created (epoch s); stale ids pruned on read, 90 d trimmed
``P:{u:<user>}:tables``                        zset       table ids of a user, score = created
``P:{u:<user>}:notice``                        string     the user's live "your turn" message: ``{message_id, tables, at}`` JSON; 48 h
``P:{u:<user>}:rate``                          hash       the user's action token bucket ``t``, ``at`` (all processes); expires once full
``P:{u:<user>}:sockets``                       zset       the user's open WebSockets, socket id → lease end (epoch s)
``P:{c:<chat>}:members``                       zset       user ids seen in the chat, score = when last seen; 90 d
``P:chats:languages``                          hash       chat id → the language a chat admin chose for its posts (durable)
``P:chats:titles``                             hash       chat id → the group's title as the bot last saw it ("My tables" names the chat)
``P:chats:moves``                              hash       old chat id → new chat id (a group upgraded to a supergroup; durable)
``P:chats:moved:<old chat>``                   string     set once that migration was carried out (durable)
``P:{bot}:inbox``                              hash       update id → ``{update, at}``: webhook updates answered 200, not yet handled
``P:{bot}:inbox:claim:<update>`` / ``:done:``  string     a handler's claim (15 s, renewed) / a handled update id (1 d)
``P:{bot}:lobby_edits``                        zset       lobby ids whose last change is not shown yet, score = when changed
``P:users``                                    hash       user id → User JSON (no TTL)
``P:unreachable``                              set        user ids that blocked the bot
``P:flags:<name>``                             set        durable membership flags (e.g. ``lang_explicit``: users who chose via /lang)
``P:once:<name>:<id>``                         string     "done once" markers with a TTL (e.g. the bot's update ids, sent notices)
``P:{sched}:deadlines``                        zset       table id → epoch s when the worker must look at it (S4); shard 0 of
                                                          ``Store.shards`` (1 on one Redis, 8 on a cluster): shard k ≥ 1 is
                                                          ``P:{sched:k}:…``, a table's shard ``crc32(id) % shards`` (:func:`shard_of`)
``P:{sched}:versions``                         hash       table id → version its due time was computed from; ``-<version>`` once over (until it expires); sharded alike
``P:{sched}:sweep``                            string     the sweeper's lease (one sweep per interval across processes; not sharded)
``P:{sched}:outbox``                           stream     bot notifications (``data`` = JSON), capped ``MAXLEN ~`` per shard; sharded alike
                                                          (a table's entries in its shard: added with its due time at once, in order)
``P:{ratings}:ledger``                         hash       table id → rated match JSON (durable, no TTL; P15, S6)
``P:{ratings}:board:<game>:<scope>:<period>``  hash       ``<user>|<table>`` → match balance; scope ``all`` or ``c<chat>``
``P:{ratings}:results:<game>:<user>``          list       the user's last results, newest first (JSON), 50 kept
``P:{ratings}:names``                          hash       user id → latest display name
=============================================  =========  ==========================================

``P`` is the prefix (``karty`` by default; tests use a unique one per test).
"""

from __future__ import annotations

import zlib


def shard_of(ident: str, shards: int) -> int:
    """The shard (0 … ``shards`` - 1) of a table or lobby id: ``crc32(id) % shards``, the same in every process."""
    return zlib.crc32(ident.encode()) % shards if shards > 1 else 0


class Keys:
    """Key names under one ``prefix``; pure string building, no I/O."""

    def __init__(self, prefix: str = "karty") -> None:
        if not prefix or any(ch in prefix for ch in "{}*?[] "):
            raise ValueError(f"bad key prefix: {prefix!r}")
        self.prefix = prefix

    # --- one game (table): all under the {g:<id>} hash tag -------------------
    def table(self, table_id: str) -> str:
        return f"{self.prefix}:{{g:{table_id}}}:table"

    def log(self, table_id: str) -> str:
        return f"{self.prefix}:{{g:{table_id}}}:log"

    def cids(self, table_id: str) -> str:
        return f"{self.prefix}:{{g:{table_id}}}:cids"

    def events(self, table_id: str) -> str:
        return f"{self.prefix}:{{g:{table_id}}}:events"

    def watchers(self, table_id: str) -> str:
        """Set of the ids of the listeners (``store.live.Live.id``) subscribed to ``events``:
        a commit publishes only when someone other than its own process listens."""
        return f"{self.prefix}:{{g:{table_id}}}:watchers"

    def presence(self, table_id: str, user_id: int) -> str:
        return f"{self.prefix}:{{g:{table_id}}}:here:{user_id}"

    # --- lobbies ---------------------------------------------------------------
    def lobby(self, lobby_id: str) -> str:
        return f"{self.prefix}:{{l:{lobby_id}}}:lobby"

    def rematch(self, table_id: str) -> str:
        """The "Play again" lobby of a finished table (issue 15)."""
        return f"{self.prefix}:{{g:{table_id}}}:rematch"

    # --- indexes -----------------------------------------------------------------
    def chat_lobbies(self, chat_id: int) -> str:
        return f"{self.prefix}:{{c:{chat_id}}}:lobbies"

    def chat_tables(self, chat_id: int) -> str:
        return f"{self.prefix}:{{c:{chat_id}}}:tables"

    def user_tables(self, user_id: int) -> str:
        return f"{self.prefix}:{{u:{user_id}}}:tables"

    def chat_members(self, chat_id: int) -> str:
        return f"{self.prefix}:{{c:{chat_id}}}:members"

    @property
    def chat_languages(self) -> str:
        return f"{self.prefix}:chats:languages"

    @property
    def chat_titles(self) -> str:
        return f"{self.prefix}:chats:titles"

    @property
    def chat_moves(self) -> str:
        return f"{self.prefix}:chats:moves"

    def chat_moved(self, chat_id: int) -> str:
        return f"{self.prefix}:chats:moved:{chat_id}"

    @property
    def inbox(self) -> str:
        return f"{self.prefix}:{{bot}}:inbox"

    def inbox_claim(self, update_id: int) -> str:
        return f"{self.prefix}:{{bot}}:inbox:claim:{update_id}"

    def inbox_done(self, update_id: int) -> str:
        return f"{self.prefix}:{{bot}}:inbox:done:{update_id}"

    @property
    def lobby_edits(self) -> str:
        return f"{self.prefix}:{{bot}}:lobby_edits"

    def turn_notice(self, user_id: int) -> str:
        return f"{self.prefix}:{{u:{user_id}}}:notice"

    # --- per-user limits across processes (store.limits) ---------------------------
    def action_bucket(self, user_id: int) -> str:
        return f"{self.prefix}:{{u:{user_id}}}:rate"

    def request_bucket(self, user_id: int, kind: str) -> str:
        """The user's request bucket shared by every process (``kind``: ``read`` or ``write``)."""
        return f"{self.prefix}:{{u:{user_id}}}:rate:{kind}"

    def user_sockets(self, user_id: int) -> str:
        return f"{self.prefix}:{{u:{user_id}}}:sockets"

    # --- users -------------------------------------------------------------------
    @property
    def users(self) -> str:
        return f"{self.prefix}:users"

    @property
    def unreachable(self) -> str:
        return f"{self.prefix}:unreachable"

    def flags(self, name: str) -> str:
        return f"{self.prefix}:flags:{name}"

    def once(self, name: str, ident: str) -> str:
        return f"{self.prefix}:once:{name}:{ident}"

    # --- turn deadlines, computer moves and the bot outbox: sharded -----------------
    # Shard k's three keys share the hash tag {sched} (k = 0) or {sched:k}: one slot per
    # shard, so schedule.lua touches one slot, and the shards spread over the primaries.
    @staticmethod
    def _sched(shard: int) -> str:
        return "{sched}" if shard == 0 else f"{{sched:{shard}}}"

    def deadlines_of(self, shard: int) -> str:
        return f"{self.prefix}:{self._sched(shard)}:deadlines"

    def deadline_versions_of(self, shard: int) -> str:
        return f"{self.prefix}:{self._sched(shard)}:versions"

    def outbox_of(self, shard: int) -> str:
        return f"{self.prefix}:{self._sched(shard)}:outbox"

    @property
    def deadlines(self) -> str:
        """Shard 0's (the only one on a single Redis)."""
        return self.deadlines_of(0)

    @property
    def deadline_versions(self) -> str:
        return self.deadline_versions_of(0)

    @property
    def sweep_lock(self) -> str:
        return f"{self.prefix}:{{sched}}:sweep"

    @property
    def outbox(self) -> str:
        return self.outbox_of(0)

    # --- ratings (one slot: {ratings}) -------------------------------------------
    @property
    def ledger(self) -> str:
        return f"{self.prefix}:{{ratings}}:ledger"

    def board(self, game: str, chat_id: int | None, period_key: str) -> str:
        scope = "all" if chat_id is None else f"c{chat_id}"
        return f"{self.prefix}:{{ratings}}:board:{game}:{scope}:{period_key}"

    @property
    def board_pattern(self) -> str:
        return f"{self.prefix}:{{ratings}}:board:*"

    def results(self, game: str, user_id: int) -> str:
        return f"{self.prefix}:{{ratings}}:results:{game}:{user_id}"

    @property
    def results_pattern(self) -> str:
        return f"{self.prefix}:{{ratings}}:results:*"

    @property
    def names(self) -> str:
        return f"{self.prefix}:{{ratings}}:names"

    @property
    def everything(self) -> str:
        """SCAN pattern matching every key of this prefix (tests' cleanup)."""
        return f"{self.prefix}:*"
