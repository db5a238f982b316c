// The one entry point: finds Telegram (or local play), signs in, opens the table
// named by ?table= or Telegram's start_param, and wires actions to the server.

import { Api, isAuthError, onSignedOut, TableSocket } from "./api.js";
import { callout as calloutName, cardShort, cardsText, language, reasonText, setLanguage, t, tf } from "./i18n.js";
import {
  banner,
  closeDialog,
  eventText,
  giveDialog,
  giveKey,
  h,
  oneCardReady,
  openDialog,
  penkiResult,
  prsiScoreTable,
  renderTable,
  resetShown,
  roundResult,
  setConnection,
  suitChooser,
  toast,
  updateTimers,
} from "./render.js";
import { renderLeaderboard, renderLoading, renderLobby, renderMessage, renderSignin } from "./screens.js";
import { acceptVersion, iLeft, isComputer, legalOf, myTurn, nameOf, resetTable, saveFaces, state } from "./state.js";
import { detectTelegram, localTelegram } from "./tg.js";
import * as pv from "./variants.js";
import * as motion from "./motion.js";
import * as sound from "./sound.js";

// What the first screen does not need comes when it is first asked for (issue 25: fewer files
// before the first paint): the rules, a replay, the rematch box (and, in screens.js, the chart).
const later = (load) => {
  let promise = null;
  return () => (promise ||= load().catch((e) => ((promise = null), Promise.reject(e))));
};
const rulesModule = later(() => import("./rules.js"));
const replayModule = later(() => import("./replay.js"));
const rematchModule = later(() => import("./rematch.js"));

const INIT_KEY = "karty.init_data";
const CHAT_KEY = "karty.chat";
const NAME_KEY = "karty.name";

const root = document.getElementById("app");
let tg = null;
let api = new Api();
let config = null;
let socket = null;
let screen = "loading";

// ---------------------------------------------------------------- boot

async function boot() {
  setLanguage(navigator.language);
  renderLoading(root);
  tg = await detectTelegram();
  if (!tg) {
    try {
      config = await api.config();
    } catch {
      config = null;
    }
    if (!config?.local) {
      renderMessage(root, t("open_in_telegram"));
      return;
    }
    let saved = null;
    try {
      saved = sessionStorage.getItem(INIT_KEY);
    } catch {
      saved = null;
    }
    tg = await localTelegram(saved || "");
    tg.start();
    document.documentElement.classList.add("local-play");
    if (!saved) {
      showSignin();
      return;
    }
  } else {
    tg.start();
  }
  await signedIn();
}

function showSignin() {
  screen = "signin";
  renderSignin(root, async (name) => {
    try {
      const { init_data } = await api.localLogin(name, navigator.language);
      try {
        sessionStorage.setItem(INIT_KEY, init_data);
        sessionStorage.setItem(NAME_KEY, name);
      } catch {
        /* private mode: this tab only */
      }
      tg = await localTelegram(init_data);
      tg.start();
      await signedIn();
    } catch (e) {
      toast(String(e.message || e), "error");
    }
  });
}

/**
 * Local play only: sign in again under the same name (same player id) after the
 * server restarted with a new local key, so the page carries on by itself.
 */
async function relogin() {
  if (!tg?.local) return false;
  let name = null;
  try {
    name = sessionStorage.getItem(NAME_KEY);
  } catch {
    name = null;
  }
  if (!name) return false;
  try {
    const { init_data } = await new Api().localLogin(name, navigator.language);
    sessionStorage.setItem(INIT_KEY, init_data);
    tg.wa.initData = init_data;
    api.initData = init_data;
    if (socket) socket.initData = init_data;
    return true;
  } catch {
    return false;
  }
}

/**
 * Neither the server-issued session nor initData is accepted any more (issue 12, point 6):
 * local play signs in again by itself; inside Telegram one clear screen says so and
 * reopens Karty through Telegram (fresh initData). Nothing keeps retrying meanwhile.
 */
async function signedOut() {
  if (tg?.local) {
    if (await relogin()) return true;
    showSignin();
    return false;
  }
  closeSocket();
  const table = state.table?.id || tg?.startParam || "";
  renderMessage(root, t("session_over"), [{ label: t("reopen_karty"), onClick: () => reopenInTelegram(table) }]);
  return false;
}

function reopenInTelegram(table) {
  const bot = config?.bot_username;
  if (bot) {
    const app = config?.app_short_name ? `/${config.app_short_name}` : "";
    const link = `https://t.me/${bot}${app}${table ? `?startapp=${encodeURIComponent(table)}` : ""}`;
    tg.call("openTelegramLink", link);
  }
  tg.call("close");
}

// A table the page was opened at is asked for together with /api/me, not after it (one round
// trip less before the table is drawn); openTable takes the answer (once).
let prefetched = null; // {id, answer}

function prefetchTable() {
  const params = new URLSearchParams(location.search);
  const id = params.get("table") || params.get("startapp") || tg.startParam || "";
  prefetched = null;
  if (!id || params.get("replay") || params.get("page") || id.startsWith("replay_") || rulesGame(params, params.get("table") ? null : id)) return;
  const answer = api.table(id);
  answer.catch(() => {}); // openTable sees the error, if it is still wanted
  prefetched = { id, answer };
}

function tableAnswer(id) {
  const found = prefetched;
  prefetched = null;
  return found && found.id === id ? found.answer : api.table(id);
}

async function signedIn() {
  onSignedOut(signedOut);
  api = new Api(tg.initData);
  if (!config) api.config().then((c) => (config = c)).catch(() => {});
  setLanguage(tg.languageCode || navigator.language);
  prefetchTable();
  try {
    const me = await api.me();
    state.user = me?.user || null;
    // the one preference (store.languages): an explicit choice (here or /lang in the bot), else
    // Telegram's code mapped the bot's way; the server knows it
    if (state.user?.language) setLanguage(state.user.language);
  } catch (e) {
    if (e.status === 401 && tg.local && (await relogin())) {
      return signedIn();
    }
    if (e.status === 401 && tg.local) {
      try {
        sessionStorage.removeItem(INIT_KEY);
      } catch {
        /* ignore */
      }
      showSignin();
      return;
    }
    // Inside Telegram: initData refused (older than its 24 h, say) and no session: the
    // "Reopen Karty" screen is up (signedOut); nothing more is tried (issue 25, point 10).
    if (isAuthError(e.status, e.code)) return;
  }
  tg.onActivated(() => {
    if (screen === "table") {
      resync();
      socket?.kick();
    }
  });
  route();
}

function route() {
  const params = new URLSearchParams(location.search);
  const start = params.get("startapp") || tg.startParam || "";
  const replayId = params.get("replay") || (start.startsWith("replay_") ? start.slice(7) : null); // issue 15
  if (replayId) return showReplay(replayId);
  const tableId = params.get("table") || params.get("startapp") || tg.startParam;
  if (params.get("page") === "leaders") return showLeaderboard();
  const rules = rulesGame(params, params.get("table") ? null : params.get("startapp") || tg.startParam);
  if (rules) return showRules(rules);
  if (tableId) return openTable(tableId);
  return showHome();
}

/** The rules page asked for: ?page=rules[&game=penki] or startapp=rules / rules-prsi / rules-penki. */
function rulesGame(params, startParam) {
  if (params.get("page") === "rules") return params.get("game") === "penki" ? "penki" : "prsi";
  const m = /^rules(?:-(prsi|penki))?$/.exec(startParam || "");
  return m ? m[1] || "prsi" : null;
}

const FELT = "#17683f";
const FELT_DARK = "#0c4a2b";

/** A table's game again (issue 15): ?replay=<table> or startapp=replay_<table>. */
async function showReplay(id) {
  screen = "replay";
  closeSocket();
  tg.paint(FELT_DARK);
  const back = () => (history.length > 1 ? history.back() : showHome());
  tg.setBack(back);
  renderLoading(root);
  try {
    const [data, { renderReplay }] = await Promise.all([api.replay(id), replayModule()]);
    if (screen !== "replay") return;
    renderReplay(root, data, { onBack: back });
  } catch (e) {
    renderMessage(root, e.status === 404 ? t("table_missing") : String(e.message || e), [{ label: t("back"), onClick: back }]);
  }
}

function goReplay(id) {
  history.pushState({ replay: id }, "", `?replay=${encodeURIComponent(id)}`);
  showReplay(id);
}

/** The language switch: the same preference as /lang in the bot (it beats Telegram's code). */
async function chooseLanguage(code) {
  setLanguage(code);
  try {
    const res = await api.post("/api/me/language", { language: code });
    if (res?.user) state.user = res.user;
  } catch (e) {
    toast(String(e.message || e), "error");
  }
  if (screen === "home") showHome();
}

function showHome() {
  screen = "home";
  removeHint();
  tg.paint(null);
  closeSocket();
  tg.setBack(null);
  renderLobby(root, {
    user: state.user,
    tables: api.myTables().then((d) => d?.tables || []).catch(() => []),
    onOpen: goTable,
    onReplay: goReplay,
    onNew: tg.local ? newTable : null,
    onLeaderboard: () => showLeaderboard(),
    onRules: () => showRules("prsi"),
    language: language(),
    onLanguage: chooseLanguage,
    sound: { on: sound.soundOn(), set: sound.setSound },
    onSignOut: tg.local
      ? () => {
          try {
            sessionStorage.removeItem(INIT_KEY);
            sessionStorage.removeItem(NAME_KEY);
          } catch {
            /* ignore */
          }
          location.assign(location.pathname);
        }
      : null,
  });
}

/** Open a table without reloading the page (inside Telegram a reload could lose initData). */
function goTable(id) {
  history.pushState({ table: id }, "", `?table=${encodeURIComponent(id)}`);
  openTable(id);
}

window.addEventListener("popstate", () => {
  if (tg && screen !== "signin") route();
});

async function newTable(game, players, turnSeconds = null, variants = [], level = null) {
  try {
    const { table } = await api.newLocalTable(game, players, turnSeconds, variants, level);
    const id = typeof table === "string" ? table : table?.id;
    goTable(id);
  } catch (e) {
    toast(String(e.message || e), "error");
  }
}

function showLeaderboard() {
  const from = screen;
  screen = "leaders";
  removeHint();
  tg.paint(null);
  let chatId = state.table?.chat_id ?? null;
  if (chatId === null) {
    try {
      chatId = sessionStorage.getItem(CHAT_KEY);
    } catch {
      chatId = null;
    }
  }
  const back = () => {
    if (from === "table" && state.view) {
      screen = "table";
      tg.paint(FELT, FELT_DARK);
      tg.setBack(tg.local ? goHome : null);
      draw();
    } else showHome();
  };
  tg.setBack(back);
  renderLeaderboard(root, { api, chatId, game: state.table?.game || state.view?.game, onBack: back, local: Boolean(tg.local) });
}

let rulesShown = 0;

/** The rules screen of ``game``; back returns to the table (or the lobby) it came from. */
function showRules(game) {
  const from = screen;
  screen = "rules";
  removeHint();
  tg.paint(null);
  const back = () => {
    if (from === "table" && state.view) {
      screen = "table";
      tg.paint(FELT, FELT_DARK);
      tg.setBack(tg.local ? goHome : null);
      draw();
    } else showHome();
  };
  tg.setBack(back);
  // At a table: its rules, as its variants change them (issue 25, point 4).
  const variants = from === "table" && state.view?.game === "prsi" ? state.view.variants || [] : [];
  const shown = ++rulesShown; // this call's: a later showRules (or none) wins
  rulesModule().then(
    ({ renderRules }) => {
      if (screen !== "rules" || shown !== rulesShown) return; // gone elsewhere meanwhile
      renderRules(root, { game, faces: state.faces, variants, onBack: back });
      window.scrollTo(0, 0);
    },
    () => renderMessage(root, t("net_error"), [{ label: t("back"), onClick: back }]),
  );
}

// First-time hints: one short card per game (and Penki phase), until dismissed.
const HINT_KEY = "karty.hint.";
function hintSeen(key) {
  try {
    return localStorage.getItem(HINT_KEY + key) === "1";
  } catch {
    return true;
  }
}
function removeHint() {
  document.getElementById("first-hint")?.remove();
}
/**
 * A first-time hint over the table: it lets every tap through (pointer-events: none)
 * and goes, for good, with the first tap anywhere; the rules are the ? button above.
 */
function maybeHint(v) {
  const key = v.game === "prsi" ? "prsi" : `penki${v.phase}`;
  const shown = document.getElementById("first-hint");
  if (shown && shown.dataset.key === key) return;
  removeHint();
  if (!state.seat || v.over || hintSeen(key)) return;
  const box = h(
    "div",
    { id: "first-hint", class: "first-hint", role: "note", dataset: { key } },
    h("p", {}, tf(`hint_${key}`, v.game === "prsi" ? state.faces : "french")),
    h("p", { class: "hint-more" }, t("hint_more")),
  );
  document.body.appendChild(box);
  if (key === "penki1") placeLow(box);
  const done = () => {
    document.removeEventListener("pointerdown", done, true);
    try {
      localStorage.setItem(HINT_KEY + key, "1");
    } catch {
      /* private mode: shown again next time */
    }
    box.remove();
    swallowNextClick(); // the tap that closes the tip plays nothing (issue 25, point 1)
  };
  // Read for a moment first: a tap already under way does not dismiss it.
  setTimeout(() => document.addEventListener("pointerdown", done, true), 300);
}

/**
 * The click a tap is about to produce reaches nothing: the tap only closed a tip. A tap
 * that never becomes a click (a scroll) leaves nothing behind: the guard lapses.
 */
function swallowNextClick() {
  const swallow = (e) => {
    e.stopPropagation();
    e.preventDefault();
    document.removeEventListener("click", swallow, true);
  };
  document.addEventListener("click", swallow, true);
  const lapse = () => setTimeout(() => document.removeEventListener("click", swallow, true), 400);
  document.addEventListener("pointerup", lapse, { capture: true, once: true });
  document.addEventListener("pointercancel", lapse, { capture: true, once: true });
}

/**
 * Penki's first phase asks for the stock and an opponent's pile, at the top and in the
 * middle: its hint sits low instead, over the player's own pile, just above the callouts.
 */
function placeLow(box) {
  const bar = document.querySelector(".table-screen nav.callouts");
  const limit = bar ? bar.getBoundingClientRect().top : window.innerHeight;
  box.classList.add("low");
  box.style.bottom = `${Math.max(8, Math.round(window.innerHeight - limit + 8))}px`;
}

function goHome() {
  if (location.search) history.pushState({}, "", location.pathname);
  showHome();
}

// ---------------------------------------------------------------- table

function closeSocket() {
  socket?.close();
  socket = null;
}

async function openTable(id) {
  screen = "table";
  closeSocket();
  resetTable(id);
  resetShown();
  motion.interrupt(); // nothing of the table left still in the air
  renderLoading(root);
  tg.paint(FELT, FELT_DARK);
  // Inside Telegram the table is the app's root: Telegram's own Close is the way out.
  tg.setBack(tg.local ? goHome : null);
  let data;
  try {
    data = await tableAnswer(id);
    if (screen !== "table" || state.tableId !== id) return; // left meanwhile
  } catch (e) {
    if (screen !== "table" || state.tableId !== id) return;
    if (isAuthError(e.status, e.code) && !tg.local) return; // signedOut's screen says what to do
    if (e.status === 404) renderMessage(root, t("table_missing"), [{ label: t("back"), onClick: goHome }]);
    else renderMessage(root, t("net_error"), [{ label: t("next"), onClick: () => openTable(id) }]);
    return;
  }
  takeSnapshot(data);
  draw();
  if (state.view?.over) setTimeout(showFinal, 50);
  socket = new TableSocket(id, tg.initData, {
    since: state.version,
    onState: onSocketState,
    onStatus: (status, msg) => {
      if (status === "error") {
        if (msg?.error === "unauthorized" || msg?.error === "auth_expired") relogin();
        else if (msg?.error === "gone") {
          closeSocket();
          renderMessage(root, t("table_missing"), [{ label: t("back"), onClick: goHome }]);
        }
        return;
      }
      if (status === "open" || status === "closed") setConnection(status);
      else if (status === "retry" && !socket?.connected) setConnection("retry");
    },
  });
  socket.open();
}

function takeSnapshot(data) {
  state.table = data.table || state.table;
  if (state.table?.chat_id) {
    try {
      sessionStorage.setItem(CHAT_KEY, String(state.table.chat_id));
    } catch {
      /* ignore */
    }
  }
  const fresh = acceptVersion(
    { version: data.version ?? data.view?.version, view: data.view, deadline: data.deadline, seats: data.table?.seats, events: undefined },
    { resync: true },
  );
  if (data.seat !== undefined) state.seat = data.seat;
  return fresh;
}

async function resync() {
  if (!state.tableId) return;
  try {
    const data = await api.table(state.tableId);
    takeSnapshot(data);
    if (screen === "table") draw();
  } catch {
    /* the socket will bring it */
  }
}

function onSocketState(msg) {
  setConnection("open");
  const before = state.view;
  const seats = JSON.stringify(state.seats);
  const fresh = acceptVersion(msg);
  if (fresh === null) return;
  if (screen !== "table") return;
  // The snapshot a socket starts with (at every connect) is most often the version on screen:
  // only its deadline can be new, and the timers show that; the table is not built again
  // (issue 25: it was, right after the first drawing, a second long task for nothing).
  if (!fresh.length && state.view === before && state.version === state.shownVersion && JSON.stringify(state.seats) === seats) {
    updateTimers();
    return;
  }
  draw();
  announce(fresh, before);
}

/** Banners, haptics and dialogs for events just seen (each version once); ``before``: the view they followed. */
function announce(events, before = null) {
  const game = state.view?.game;
  const spoken = document.getElementById("sr-moves");
  if (spoken && events.length) spoken.textContent = events.map((ev) => eventText(ev, game)).join(". ");
  let roundEnd = null;
  let final = false;
  let byTimer = false;
  const brief = []; // Бита, the phase change, who went out: one short banner together
  for (const ev of events) {
    if (ev.a === "zevok" || ev.a === "how_many" || ev.a === "one_card") {
      banner(eventText(ev, game), "callout");
      if (ev.seat !== state.seat) tg?.impact("medium");
      if (state.seat && ev.seat !== state.seat && (ev.against === state.seat || (ev.caught || []).includes(state.seat))) sound.play("callout");
    } else if (ev.a === "bita" || ev.a === "phase2" || ev.a === "out") {
      brief.push(eventText(ev, game));
    } else if (ev.a === "round_end") {
      roundEnd = ev;
    } else if (ev.a === "match_end" || ev.a === "game_end") {
      final = true;
    }
    if (ev._by === "timer" && ev.seat && ev.seat === state.seat) byTimer = true;
  }
  if (brief.length && !final) banner(brief.join(" · "), "bita");
  if (byTimer) {
    toast(t("played_for_you"), "warn");
    tg?.notify("warning");
  }
  if (final) showFinal();
  else if (roundEnd) showRoundEnd(roundEnd, events, before);
  if (final || roundEnd) sound.play("round");
  else if (myTurn() && before && !(before.to_move === state.seat && !before.over)) sound.play("turn");
}

// Mirrors store.common.ROUND_HOLD (also in /api/config as round_hold): how long the
// server holds the next round's computers and timers after a round ends.
const ROUND_HOLD_DEFAULT = 6;
let roundTimer = null;

/**
 * The end of a Prší round: the last card on the pile and who played it, who drew for a
 * last 7, what everyone had left, the points. The next round is dealt at once; the server
 * holds only its computers and turn timers (ROUND_HOLD). So the dialog says what is true
 * (issue 25, point 8): your turn in the next round, a person to move, or the computers
 * waiting N s; it closes on Continue, when the hold is over, or as soon as anything moves
 * in the next round (the view's version moves on), so it never hides the table in play.
 */
function showRoundEnd(ev, events, before) {
  const i = events.indexOf(ev);
  const upTo = events.slice(0, i);
  const lastPlay = [...upTo].reverse().find((e) => e.a === "play" && e.seat === ev.winner) || null;
  const drew = upTo.slice(lastPlay ? upTo.indexOf(lastPlay) + 1 : 0).filter((e) => e.a === "draw" || e.a === "forgiven");
  const hold = Math.max(1, Number(config?.round_hold) || ROUND_HOLD_DEFAULT);
  const ends = Date.now() + hold * 1000;
  const dealtAt = state.version;
  const next = (state.view?.round || ev.round + 1);
  const countdown = h("p", { class: "round-countdown", role: "timer" });
  const bar = h("div", { class: "round-bar", "aria-hidden": "true" }, h("span", {}));
  const tickDown = () => {
    if (state.dialog !== "round" || state.version !== dealtAt) {
      clearInterval(roundTimer);
      roundTimer = null;
      if (state.dialog === "round") closeDialog();
      return;
    }
    const leftMs = Math.max(0, ends - Date.now());
    const left = Math.ceil(leftMs / 1000);
    const mover = state.view?.to_move;
    let text;
    if (mover && mover === state.seat) text = t("next_round_yours", { n: next });
    else if (mover && !isComputer(mover)) text = t("next_round_person", { n: next, name: nameOf(mover) });
    else text = t("next_round_computers", { n: next, s: left });
    if (countdown.textContent !== text) countdown.textContent = text;
    bar.hidden = !(mover && isComputer(mover));
    bar.firstChild.style.width = `${Math.max(0, Math.min(100, (leftMs / (hold * 1000)) * 100))}%`;
    if (left <= 0) {
      clearInterval(roundTimer);
      roundTimer = null;
      closeDialog();
    }
  };
  clearInterval(roundTimer);
  openDialog(
    "round",
    t("round_over_by", { n: ev.round, name: nameOf(ev.winner) }),
    roundResult(ev, { lastPlay, drew, before }),
    [
      {
        label: t("next"),
        primary: true,
        onClick: () => {
          clearInterval(roundTimer);
          roundTimer = null;
          closeDialog();
        },
      },
    ],
    { lead: [countdown, bar], key: dealtAt },
  );
  tickDown();
  roundTimer = setInterval(tickDown, 250);
}

/** Whether the match counts for the leaderboard, and if not, why (S6: matches with computers are unrated). */
function ratedNote() {
  const table = state.table;
  if (!table) return null;
  const computers = (table.seats || state.seats || []).some((x) => x.computer);
  const variants = (table.settings?.variants || []).length > 0; // a friendly table (Prší variants)
  const text = table.rated ? t("rated_note") : variants ? t("unrated_variants") : computers ? t("unrated_computers") : t("unrated");
  return h("p", { class: `rated-note${table.rated ? " rated" : ""}` }, text);
}

let rematchBox = null; // rematch.js's, once loaded (at the first final dialog)

function showFinal() {
  if (!state.view) return;
  if (rematchBox) return finalDialog(rematchBox);
  const table = state.tableId;
  const still = () => screen === "table" && state.tableId === table && state.view?.over;
  rematchModule().then(
    (m) => {
      rematchBox = m.rematchBox;
      if (still()) finalDialog(rematchBox);
    },
    () => still() && finalDialog(() => null), // offline: the dialog without the rematch box this time
  );
}

function finalDialog(makeRematchBox) {
  const v = state.view;
  const again = makeRematchBox({ api, tableId: state.tableId, seated: Boolean(state.seat), onTable: (id) => (closeDialog(), goTable(id)) });
  const replay = h("button", { type: "button", class: "btn wide watch-replay", onclick: () => (closeDialog(), goReplay(state.tableId)) }, t("watch_replay"));
  const body = h("div", {}, v.game === "prsi" ? prsiScoreTable() : penkiResult(), ratedNote(), again, replay);
  openDialog("final", v.game === "prsi" ? t("match_over") : t("game_over"), body, [
    { label: t("leaderboard"), onClick: () => (closeDialog(), showLeaderboard()) },
    { label: t("close"), primary: true, onClick: () => closeDialog() },
  ], { key: scoresKey() });
}

// A new version arriving mid-tap would replace the button under the finger and lose
// the tap: while a pointer is down on the table, drawing waits for it to come up.
let pointerDown = false;
let drawWaiting = false;
document.addEventListener("pointerdown", () => (pointerDown = true), true);
const pointerEnd = () => {
  pointerDown = false;
  if (drawWaiting) {
    drawWaiting = false;
    setTimeout(draw, 0); // after the click this tap produces
  }
};
document.addEventListener("pointerup", pointerEnd, true);
document.addEventListener("pointercancel", pointerEnd, true);

function draw() {
  if (screen !== "table" || !state.view) return;
  if (pointerDown) {
    drawWaiting = true;
    setTimeout(() => {
      if (drawWaiting) pointerEnd();
    }, 600);
    return;
  }
  const v = state.view;
  // Penki phase 1: a drawn card waiting to be placed is the selection.
  if (v.game === "penki") {
    if (v.phase !== 1 || !myTurn()) state.selected = null;
    else if (v.drawn) state.selected = "drawn";
    else if (state.selected === "drawn") state.selected = null;
  }
  // A newer version than the one on screen: it is drawn at once, and what happened in
  // between (the view's public record) plays over it as flights (motion.js), which the
  // next version cuts short. The same version drawn again keeps its flights going.
  const before = state.shownView;
  const moved = before && state.version > state.shownVersion && before.game === v.game;
  if (moved) motion.interrupt();
  const snap = moved && !motion.reducedMotion() ? motion.snapshot(root) : null;
  renderTable(root, handlers);
  if (moved) motion.play(root, eventsSince(before, v), snap, { view: v, seat: state.seat, faces: v.game === "prsi" ? state.faces : "french" });
  else if (state.version !== state.shownVersion) motion.stats.log.push({ version: v.version, events: null });
  else motion.rehide();
  state.shownVersion = state.version;
  state.shownView = v;
  syncDialogs();
  maybeHint(v);
  // «ОДНА КАРТА!» just became due: a buzz with the button lighting up.
  const ready = oneCardReady();
  if (ready && !wasReady) tg?.notify("warning");
  wasReady = ready;
  if (leaving && leaving === state.tableId && !leaveBusy && (myTurn() || legalOf("give").length)) leaveTable();
}
let wasReady = false;

/**
 * Every dialog that depends on the table is derived from the view just drawn, on
 * every version: the penalty hand-over opens, is rebuilt for the next recipient or
 * closes; a suit chooser closes when its Queen is no longer playable; the scores
 * follow the match. Nothing is left over from an older version.
 */
function syncDialogs() {
  const giveKeyNow = giveKey();
  if (giveKeyNow) {
    if (state.dialog !== "give" || state.dialogKey !== giveKeyNow) giveDialog((card) => act({ a: "give", card }));
    return;
  }
  if (state.dialog === "give") closeDialog();
  if (state.dialog === "round" && state.dialogKey !== null && state.version > state.dialogKey) closeDialog();
  if (state.dialog === "suit") {
    const queen = state.dialogKey;
    if (!myTurn() || !legalOf("play").some((a) => a.card === queen)) closeDialog();
  } else if ((state.dialog === "scores" || state.dialog === "final") && state.dialogKey !== scoresKey()) {
    if (state.dialog === "final") showFinal();
    else handlers.onScores();
  }
}

/** What the scores and final dialogs show: they are rebuilt only when it changes. */
function scoresKey() {
  const v = state.view;
  return v ? JSON.stringify([v.round, v.over, v.history, v.points, v.places, v.balances, v.players?.map((p) => p.out)]) : null;
}

/** Two views agree on everything a turn action depends on (a callout in between does not count). */
function sameSituation(a, b) {
  if (!a || !b) return false;
  const pick = (v) =>
    JSON.stringify([
      v.to_move, v.phase, v.round, v.top, v.suit, v.pending_draw, v.pending_skip, v.drawn, v.stock,
      v.table, v.penalty?.to ?? null, v.hand, (v.players || []).map((p) => [p.id, p.pile_top ?? null, p.pile ?? null, p.out ?? null]),
    ]);
  return pick(a) === pick(b);
}

function isLegalIn(view, action) {
  return (view?.legal || []).some((x) => x.a === action.a && (x.card ?? null) === (action.card ?? null) && (x.to ?? null) === (action.to ?? null));
}

/**
 * Act on what the player saw: the action carries the version the tapped table was
 * drawn from. When the table moved on meanwhile (409), it is sent again on the new
 * version if it is still legal there and means the same (only a callout or another
 * seat's penalty card came in between); otherwise the fresh table is shown.
 */
async function act(action, opts = {}) {
  const basis = { version: state.shownVersion >= 0 ? state.shownVersion : state.version, view: state.shownView || state.view };
  try {
    await actOnce(action, basis, opts);
  } catch (e) {
    if (e.status === 401 && (await relogin())) await actOnce(action, basis, opts).catch((e2) => actFailed(e2, action, basis, opts));
    else await actFailed(e, action, basis, opts);
  }
}

async function actOnce(action, basis, { isCallout = false } = {}) {
  if (!state.tableId) return;
  if (state.busy && !isCallout) return;
  if (!isCallout) state.busy = true;
  try {
    let version = basis.version;
    for (let attempt = 0; ; attempt++) {
      let res;
      try {
        res = await api.act(state.tableId, action, isCallout ? undefined : version, socket);
      } catch (e) {
        if (e.status !== 409 || isCallout || attempt >= 3) throw e;
        await resync();
        const same = action.a === "give" ? state.view?.penalty?.to === basis.view?.penalty?.to : sameSituation(basis.view, state.view);
        if (!same || !isLegalIn(state.view, action)) throw e;
        version = state.version;
        continue;
      }
      if (action.a === "give") {
        state.given.set(res.version, action.card);
        toast(t("gave_card", { card: cardShort(action.card, "french"), name: nameOf(basis.view?.penalty?.to) }));
      }
      const before = state.view;
      // A POST's answer has the view; a move on the socket had its state frame first (onSocketState).
      const fresh = res.view ? acceptVersion({ version: res.version, view: res.view, events: res.events || [], deadline: res.deadline }) : null;
      if (isCallout) tg.notify("success");
      if (fresh !== null) {
        draw();
        announce(fresh, before);
      }
      return;
    }
  } catch (e) {
    if (e.status === 401) throw e;
    await actFailed(e, action, basis, { isCallout });
  } finally {
    if (!isCallout) state.busy = false;
  }
}

/** The events in ``now.last`` that came after what ``before.last`` showed (both views' own records). */
function eventsSince(before, now) {
  const older = (before?.last || []).map((e) => JSON.stringify(e));
  const newer = (now?.last || []).map((e) => JSON.stringify(e));
  if (!older.length) return now?.last || [];
  // The longest tail of the older record that the newer one starts with … somewhere.
  for (let k = Math.min(older.length, newer.length); k > 0; k--) {
    const tail = older.slice(-k).join("\n");
    for (let i = newer.length - k; i >= 0; i--) {
      if (newer.slice(i, i + k).join("\n") === tail) return (now.last || []).slice(i + k);
    }
  }
  return now?.last || [];
}

/**
 * The newest event of the view's public record when it is someone else's ``kind`` call,
 * looking past only the events that call itself brought (``after``); else null.
 */
function latestCall(v, kind, after) {
  const last = v?.last || [];
  for (let i = last.length - 1; i >= 0; i--) {
    const ev = last[i];
    if (ev.a === kind) return ev.seat !== state.seat ? ev : null;
    if (!after.includes(ev.a)) return null;
  }
  return null;
}

/**
 * Why a callout was refused, in words that tell the truth and reveal nothing S3 hides:
 * someone else's call got there first (from the public moves since the tap), the wrong
 * phase, or what the engine said (nobody owes a declaration, you hold more than one card…).
 */
function calloutRefusal(kind, e, basis) {
  const v = state.view;
  if (e.code === "game_over" || v?.over) return t("co_game_over");
  const since = eventsSince(basis.view, v);
  const callout = `«${calloutName(kind)}»`;
  if (kind === "zevok") {
    // The winning call may have reached this page a moment before the tap went out; it
    // is then the newest thing on the table (only its penalty moves after it).
    const first = since.find((ev) => ev.a === "zevok" && ev.seat !== state.seat)
      || latestCall(v, "zevok", ["penalty_move"]);
    if (first) return t("co_late", { name: nameOf(first.seat), callout });
    if (v.phase !== 1) return t("co_phase", { callout, n: 1 });
    if (/blunderer/.test(e.detail || "")) return t("co_zevok_self");
    return t("co_zevok_none");
  }
  if (kind === "how_many") {
    const first = since.find((ev) => ev.a === "how_many" && ev.seat !== state.seat)
      || latestCall(v, "how_many", ["give", "out", "game_end"]);
    if (first) return t("co_late", { name: nameOf(first.seat), callout });
    if (v.phase !== 2) return t("co_phase", { callout, n: 2 });
    return t("co_nobody_owes");
  }
  const caught = since.find((ev) => ev.a === "how_many" && (ev.caught || []).includes(state.seat));
  if (caught) return t("co_late_caught", { name: nameOf(caught.seat) });
  if (v.phase !== 2) return t("co_phase", { callout, n: 2 });
  const n = (v.hand || []).length;
  if (n > 1) return t("co_one_card_many", { cards: cardsText(n) });
  if (n === 0) return t("co_one_card_empty");
  if (v.players.find((p) => p.id === state.seat)?.declared) return t("co_one_card_done");
  return t("co_one_card_closed");
}

/** "Leave table?": what leaving means (the computer plays the seat; a rated result still counts), then leave. */
function confirmLeave() {
  const body = h("div", {}, h("p", {}, t("leave_confirm")), state.table?.rated ? h("p", { class: "rated-note rated" }, t("leave_rated")) : null);
  openDialog("leave", t("leave_title"), body, [
    { label: t("cancel"), onClick: () => closeDialog() },
    { label: t("leave_button"), primary: true, onClick: () => (closeDialog(), leaveTable()) },
  ]);
}

let leaving = null; // the table left as soon as it is the viewer's turn (the server waits for it)
let leaveBusy = false;

/** ``POST …/leave``: the seat is the computer's to the end; then home, where the table says so. */
async function leaveTable() {
  const id = state.tableId;
  if (!id || leaveBusy) return;
  leaveBusy = true;
  try {
    const data = await api.leave(id);
    leaving = null;
    if (state.tableId === id) takeSnapshot(data);
    toast(t("you_left"));
    if (screen === "table" && state.tableId === id) goHome();
  } catch (e) {
    if (e.status === 409 && e.code === "not_your_turn") {
      leaving = id;
      toast(t("leave_later"));
    } else {
      leaving = null;
      if (e.status === 403) toast(t("not_seated"), "error");
      else if (e.status === 409) await resync();
      else toast(t("net_error"), "error");
    }
  } finally {
    leaveBusy = false;
  }
}

async function actFailed(e, action, basis, { isCallout = false } = {}) {
  if (e.code === "left") {
    toast(t("you_left"));
    await resync();
  } else if (isCallout && (e.status === 422 || e.status === 409)) {
    await resync();
    toast(calloutRefusal(action.a, e, basis), "error");
    tg.notify("error");
  } else if (e.status === 409) {
    toast(t("stale"));
    await resync();
  } else if (e.status === 422) {
    const faces = state.view?.game === "prsi" ? state.faces : "french";
    toast(reasonText(e.code, e.detail, { faces, nameOf }), "error");
    tg.notify("error");
    await resync();
  } else if (e.status === 429) {
    toast(t("too_fast"));
  } else if (e.status === 403) {
    toast(t("not_seated"), "error");
  } else {
    toast(t("net_error"), "error");
    await resync();
  }
}

const handlers = {
  onHome: () => goHome(),
  onLeaderboard: () => showLeaderboard(),
  onRules: () => showRules(state.view?.game || "prsi"),
  onScores: () => {
    const v = state.view;
    if (!v) return;
    // A seated player may leave a game still going (issue 25): the computer plays on for them.
    const leave = state.seat && !v.over && !iLeft() ? [{ label: t("leave_table"), onClick: confirmLeave }] : [];
    const close = { label: t("close"), primary: true, onClick: () => closeDialog() };
    if (v.game === "prsi") openDialog("scores", t("scores"), prsiScoreTable(), [...leave, close], { key: scoresKey() });
    else if (v.over) showFinal();
    else openDialog("scores", t("players"), penkiResult(), [...leave, close], { key: scoresKey() });
  },
  onToggleFaces: () => {
    state.faces = state.faces === "german" ? "french" : "german";
    saveFaces(state.faces);
    tg.selection();
    draw();
  },
  onAction: (action) => {
    tg.impact("light");
    act(action);
  },
  onPrsiPlay: (card) => {
    const v = state.view;
    tg.impact("light");
    if (pv.tapCard(card, { act, redraw: draw })) return; // a table with variants (PV4 groups, PV5 Jacks)
    const isLast = (v.hand || []).length === 1;
    if (card.startsWith("Q") && !isLast) {
      suitChooser(card, (suit) => {
        closeDialog();
        tg.impact("medium");
        act({ a: "play", card, suit });
      });
      return;
    }
    act({ a: "play", card });
  },
  onPlayGroup: () => {
    tg.impact("medium");
    pv.playGroup(act);
  },
  onCancelGroup: () => {
    tg.selection();
    pv.cancelGroup(draw);
  },
  onSelect: (what) => {
    if (!myTurn()) return;
    tg.selection();
    state.selected = state.selected === what && what !== "drawn" ? null : what;
    draw();
  },
  onPileTap: (seatId) => {
    const v = state.view;
    if (!myTurn() || v.phase !== 1) return;
    if (v.drawn) {
      tg.impact("light");
      act({ a: "place", to: seatId });
      return;
    }
    if (state.selected === "pile") {
      if (seatId === state.seat) {
        state.selected = null;
        draw();
        return;
      }
      tg.impact("light");
      state.selected = null;
      act({ a: "move", to: seatId });
      return;
    }
    const mine = v.players.find((p) => p.id === state.seat);
    if (seatId === state.seat && mine?.pile_top) {
      tg.selection();
      state.selected = "pile";
      draw();
    }
  },
  onCallout: (kind, button) => {
    tg.impact("heavy");
    button.classList.add("pressed", "fired");
    setTimeout(() => button.classList.remove("pressed", "fired"), 450);
    act({ a: kind }, { isCallout: true });
  },
};

setInterval(updateTimers, 250);
window.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && screen === "table" && state.selected === "pile") {
    state.selected = null;
    draw();
  }
});

window.__karty = { state, language, motion: motion.stats, banner, sound: sound.stats }; // for the browser tests and debugging

// In a task of its own, not in the one that evaluated the modules: two shorter tasks, not one
// long one (issue 25); index.html's loading screen is up meanwhile.
setTimeout(() =>
  boot().catch((e) => {
    renderMessage(root, String(e?.message || e));
  }),
);
