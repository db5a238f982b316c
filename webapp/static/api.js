// The HTTP API and the WebSocket of CONTRACTS §3. URLs are relative to the page,
// so the app works under any prefix the server or a reverse proxy gives it.

import { noteAnswer, noteMessage } from "./clock.js";

export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

function url(path) {
  return new URL(path.replace(/^\//, ""), document.baseURI).toString();
}

function newId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

export class Api {
  constructor(initData = "") {
    this.initData = initData;
  }

  async request(method, path, body) {
    const headers = { Accept: "application/json" };
    if (this.initData) headers.Authorization = `tma ${this.initData}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let res;
    const sent = Date.now();
    try {
      res = await fetch(url(path), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (e) {
      throw new ApiError(0, "network", String(e));
    }
    const received = Date.now();
    let data = null;
    try {
      data = await res.json();
    } catch {
      data = null;
    }
    if (data && typeof data.server_time === "number") noteAnswer(data.server_time, sent, received);
    if (!res.ok) throw new ApiError(res.status, data?.error || `http_${res.status}`, data?.detail || "");
    return data;
  }

  get(path) {
    return this.request("GET", path);
  }

  post(path, body) {
    return this.request("POST", path, body ?? {});
  }

  config() {
    return this.get("/api/config");
  }

  localLogin(name, language) {
    const body = { name };
    const lang = String(language || "").match(/^[A-Za-z-]{2,8}/)?.[0];
    if (lang) body.language = lang;
    return this.post("/api/local/login", body);
  }

  me() {
    return this.get("/api/me");
  }

  newLocalTable(game, players, turnSeconds = null, variants = []) {
    const body = { game, players };
    if (turnSeconds) body.turn_seconds = turnSeconds;
    if (variants && variants.length) body.variants = variants; // Prší table variants (PV1–PV7, PV3q)
    return this.post("/api/local/tables", body);
  }

  myTables() {
    return this.get("/api/tables");
  }

  table(id) {
    return this.get(`/api/tables/${encodeURIComponent(id)}`);
  }

  /** POST an action; version omitted for races the server settles (callouts). */
  act(tableId, action, version) {
    const body = { action, client_action_id: newId() };
    if (version !== undefined && version !== null) body.version = version;
    return this.post(`/api/tables/${encodeURIComponent(tableId)}/actions`, body);
  }

  /** Play again (issue 15): take a seat in the finished table's next match; its state; give it up. */
  rematch(tableId) {
    return this.post(`/api/tables/${encodeURIComponent(tableId)}/rematch`, {});
  }

  rematchState(tableId) {
    return this.get(`/api/tables/${encodeURIComponent(tableId)}/rematch`);
  }

  leaderboard(game, period, chatId) {
    const q = new URLSearchParams({ game, period });
    if (chatId !== undefined && chatId !== null && chatId !== "") q.set("chat_id", String(chatId));
    return this.get(`/api/leaderboard?${q}`);
  }

  rating(game) {
    return this.get(`/api/rating?${new URLSearchParams({ game })}`);
  }
}

/**
 * The table's live feed: authenticates, hands every {type:"state"} to onState,
 * pings every 20 s, reconnects with backoff after a close (a server restart) and
 * resyncs from the last version seen.
 */
export class TableSocket {
  constructor(tableId, initData, { onState, onStatus, since }) {
    this.tableId = tableId;
    this.initData = initData;
    this.onState = onState;
    this.onStatus = onStatus || (() => {});
    this.since = since || 0;
    this.ws = null;
    this.closed = false;
    this.attempt = 0;
    this.pingTimer = null;
    this.retryTimer = null;
    this.connected = false;
  }

  wsUrl() {
    const u = new URL(`ws/tables/${encodeURIComponent(this.tableId)}`, document.baseURI);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    return u.toString();
  }

  open() {
    if (this.closed) return;
    let ws;
    try {
      ws = new WebSocket(this.wsUrl());
    } catch {
      this.scheduleRetry();
      return;
    }
    this.ws = ws;
    ws.addEventListener("open", () => {
      ws.send(JSON.stringify({ type: "auth", init_data: this.initData, since: this.since }));
      clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => {
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "ping" }));
      }, 20000);
    });
    ws.addEventListener("message", (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (msg && typeof msg.server_time === "number") noteMessage(msg.server_time);
      if (msg.type === "state") {
        if (!this.connected) {
          this.connected = true;
          this.attempt = 0;
          this.onStatus("open");
        }
        if (typeof msg.version === "number") this.since = Math.max(this.since, msg.version);
        this.onState(msg);
      } else if (msg.type === "error") {
        this.onStatus("error", msg);
      }
    });
    ws.addEventListener("close", () => {
      clearInterval(this.pingTimer);
      if (this.ws === ws) this.ws = null;
      if (this.closed) return; // closed on purpose (left the table): no "reconnecting" banner
      if (this.connected) this.onStatus("closed");
      this.connected = false;
      this.scheduleRetry();
    });
    ws.addEventListener("error", () => {
      /* a close follows */
    });
  }

  scheduleRetry() {
    if (this.closed) return;
    clearTimeout(this.retryTimer);
    const delay = Math.min(8000, 400 * 2 ** this.attempt) * (0.75 + Math.random() * 0.5);
    this.attempt = Math.min(this.attempt + 1, 6);
    this.onStatus("retry", { delay });
    this.retryTimer = setTimeout(() => this.open(), delay);
  }

  /** Reconnect now (e.g. when the Mini App is activated again). */
  kick() {
    if (this.closed) return;
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) return;
    clearTimeout(this.retryTimer);
    this.attempt = 0;
    this.open();
  }

  close() {
    this.closed = true;
    clearInterval(this.pingTimer);
    clearTimeout(this.retryTimer);
    try {
      this.ws?.close();
    } catch {
      /* ignore */
    }
  }
}
