// The HTTP API and the WebSocket of CONTRACTS §3. URLs are relative to the page,
// so the app works under any prefix the server or a reverse proxy gives it.

import { noteAnswer, noteMessage, serverNow } from "./clock.js";

export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

/** A move sent on the socket got no answer (the socket closed, or none came in time): its outcome is unknown. */
export class SocketLost extends Error {}

function url(path) {
  return new URL(path.replace(/^\//, ""), document.baseURI).toString();
}

function newId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// Long sessions (issue 12, point 6): initData is valid for 24 h, an app may stay open
// longer. The app exchanges it for a server-issued session (POST /api/session), sends
// that instead, and renews it while in use (past half its life, on any request and
// every few minutes while a table is open). When neither the session nor initData is
// accepted any more, `signedOut` (set by the app) gets one call: it signs in again (local
// play) or shows one clear screen that reopens Karty through Telegram. Never a loop.
export const session = { token: null, expires: 0, issued: 0 };
const AUTH_ERRORS = new Set(["unauthorized", "auth_expired", "session_expired"]);
let signedOutHandler = null;
let recovering = null;

/** The app's answer to "signed out": resolves true when signed in again (retry), else false. */
export function onSignedOut(fn) {
  signedOutHandler = fn;
}

export function isAuthError(status, code) {
  return status === 401 || AUTH_ERRORS.has(code);
}

function sessionValid() {
  return !!session.token && session.expires - serverNow() > 5;
}

/** Sign in again after a refusal: a fresh session, else the app's handler; one at a time. */
export function recoverAuth(api) {
  if (!recovering) {
    recovering = (async () => {
      if (await api.renewSession(true)) return true;
      return signedOutHandler ? !!(await signedOutHandler()) : false;
    })().finally(() => {
      recovering = null;
    });
  }
  return recovering;
}

export class Api {
  constructor(initData = "") {
    this.initData = initData;
    this.renewing = null;
  }

  /** A fresh session (from the current one, else from initData); false when both are refused. */
  renewSession(force = false) {
    if (!force && sessionValid() && serverNow() - session.issued < (session.expires - session.issued) / 2) {
      return Promise.resolve(true);
    }
    if (!this.renewing) {
      this.renewing = (async () => {
        for (const auth of [sessionValid() ? `session ${session.token}` : null,
          this.initData ? `tma ${this.initData}` : null]) {
          if (!auth) continue;
          try {
            const res = await fetch(url("/api/session"), { method: "POST", headers: { Authorization: auth, Accept: "application/json" } });
            const data = await res.json().catch(() => null);
            if (res.ok && data?.session) {
              session.token = data.session;
              session.expires = data.expires_at;
              session.issued = data.server_time || serverNow();
              return true;
            }
            if (res.status !== 401) return sessionValid(); // the server is away: keep what we have
          } catch {
            return sessionValid();
          }
        }
        session.token = null;
        return false;
      })().finally(() => {
        this.renewing = null;
      });
    }
    return this.renewing;
  }

  async request(method, path, body, retry = true) {
    const headers = { Accept: "application/json" };
    if (sessionValid()) headers.Authorization = `session ${session.token}`;
    else if (this.initData) headers.Authorization = `tma ${this.initData}`;
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
    if (res.status === 401 && retry && headers.Authorization && (await recoverAuth(this))) {
      return this.request(method, path, body, false);
    }
    if (!res.ok) throw new ApiError(res.status, data?.error || `http_${res.status}`, data?.detail || "");
    if (headers.Authorization) this.renewSession(); // in use: renewed past half its life (or got at first)
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

  newLocalTable(game, players, turnSeconds = null, variants = [], level = null) {
    const body = { game, players };
    if (turnSeconds) body.turn_seconds = turnSeconds;
    if (variants && variants.length) body.variants = variants; // Prší table variants (PV1–PV7, PV3q)
    if (level) body.level = level;
    return this.post("/api/local/tables", body);
  }

  myTables() {
    return this.get("/api/tables");
  }

  table(id) {
    return this.get(`/api/tables/${encodeURIComponent(id)}`);
  }

  /**
   * Send an action; version omitted for races the server settles (callouts). On the table's
   * open socket when there is one (an act frame: no HTTP request), else POSTed. A move whose
   * socket closed or stayed silent is POSTed again with the same client_action_id, so it is
   * applied once either way (the answer then says duplicate). Refusals are ApiErrors with
   * the same status and code on both ways. Resolves {version, duplicate, deadline} (a POST's
   * answer also has view and events; on the socket the state frame has come before).
   */
  async act(tableId, action, version, socket = null) {
    const body = { action, client_action_id: newId() };
    if (version !== undefined && version !== null) body.version = version;
    if (socket) {
      try {
        const res = await socket.act(body);
        if (res) return res;
      } catch (e) {
        if (!(e instanceof SocketLost)) throw e;
      }
    }
    return this.post(`/api/tables/${encodeURIComponent(tableId)}/actions`, body);
  }

  /** Leave the table for good: the computer plays the seat to the end (issue 25). */
  leave(tableId) {
    return this.post(`/api/tables/${encodeURIComponent(tableId)}/leave`, {});
  }

  /** Play again (issue 15): take a seat in the finished table's next match; its state; give it up. */
  rematch(tableId) {
    return this.post(`/api/tables/${encodeURIComponent(tableId)}/rematch`, {});
  }

  /** A table's game again, frame by frame (issue 15). */
  replay(tableId) {
    return this.get(`/api/tables/${encodeURIComponent(tableId)}/replay`);
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
 * pings every 20 s, reconnects with backoff after a close (a server gone) or at once after
 * a 1012 (a server draining for a restart), and resyncs from the last version seen.
 */
let shared = null;
const SERVICE_RESTART = 1012; // the close code of a draining server: reconnect at once, no backoff
function sharedApi(initData) {
  if (!shared) shared = new Api(initData);
  shared.initData = initData || shared.initData;
  return shared;
}

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
    this.refs = 0;
    this.pending = new Map(); // act frames' refs → {resolve, reject, timer}
  }

  /**
   * A move on this socket: resolves with its acted frame, rejects with an ApiError for a
   * refused one, or a SocketLost when no answer came (closed, or none within waitMs);
   * resolves null at once when the socket is not open and serving (send it otherwise).
   */
  act(body, waitMs = 8000) {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || !this.connected) return Promise.resolve(null);
    const ref = ++this.refs;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.pending.delete(ref)) reject(new SocketLost("no answer"));
      }, waitMs);
      this.pending.set(ref, { resolve, reject, timer });
      try {
        ws.send(JSON.stringify({ type: "act", ref, ...body }));
      } catch {
        this.settle({ type: "lost", ref });
      }
    });
  }

  /** The answer to an act frame (acted, refused; lost: none will come). */
  settle(msg) {
    const waiting = this.pending.get(msg.ref);
    if (!waiting) return;
    this.pending.delete(msg.ref);
    clearTimeout(waiting.timer);
    if (msg.type === "acted") waiting.resolve(msg);
    else if (msg.type === "refused") {
      const err = new ApiError(msg.status, msg.error, msg.detail);
      if (typeof msg.retry_after === "number") err.retryAfter = msg.retry_after;
      waiting.reject(err);
    } else waiting.reject(new SocketLost("socket closed"));
  }

  dropPending() {
    for (const ref of [...this.pending.keys()]) this.settle({ type: "lost", ref });
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
      const hello = { type: "auth", init_data: this.initData, since: this.since };
      if (sessionValid()) hello.session = session.token;
      ws.send(JSON.stringify(hello));
      clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => {
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "ping" }));
        if (session.token) sharedApi(this.initData).renewSession(); // in use while the table is open
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
      } else if (msg.type === "acted" || msg.type === "refused") {
        this.settle(msg);
      } else if (msg.type === "error") {
        if (AUTH_ERRORS.has(msg.error)) this.authFailed = true; // no blind retry: sign in again first
        this.onStatus("error", msg);
      }
    });
    ws.addEventListener("close", (ev) => {
      clearInterval(this.pingTimer);
      if (this.ws === ws) {
        this.ws = null;
        this.dropPending(); // their moves go again by POST (same ids: applied once)
      }
      if (this.closed) return; // closed on purpose (left the table): no "reconnecting" banner
      // 1012 (service restart): the server drains (webapp/drain.py); another one takes us at once
      const restart = ev.code === SERVICE_RESTART;
      if (this.connected && !restart) this.onStatus("closed");
      this.connected = false;
      if (this.authFailed) {
        this.authFailed = false;
        recoverAuth(sharedApi(this.initData)).then((ok) => {
          if (ok) {
            this.attempt = 0;
            this.open();
          } else {
            this.close(); // signed out for good: the app shows why, nothing retries
          }
        });
        return;
      }
      if (restart) {
        this.attempt = 0;
        this.open();
        return;
      }
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
    this.dropPending();
    try {
      this.ws?.close();
    } catch {
      /* ignore */
    }
  }
}
