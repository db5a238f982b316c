// DOM building. Reads `state`, never mutates game data; user input goes to the
// handlers main.js passes in. All text goes in through textContent.

import { serverNow } from "./clock.js";
import { backFigure, cardButton, cardFigure, suitSvg } from "./cards.js";
import { callout, cardName, cardShort, cardsText, language, suitName, t } from "./i18n.js";
import { iLeft, isComputer, legal, legalOf, myTurn, nameOf, state } from "./state.js";
import * as pv from "./variants.js";

/** Create an element: h("button", {class: "x", onclick: fn}, "text", child…). */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else if (v === true) node.setAttribute(k, "");
    else node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return node;
}

const reducedMotion = () => window.matchMedia?.("(prefers-reduced-motion: reduce)").matches;

// What was shown last time, so only what changed gets an entrance animation.
const shown = new Map();
function fresh(key, value) {
  const before = shown.get(key);
  shown.set(key, value);
  return before !== undefined && before !== value && value !== null && !reducedMotion();
}

/** Forget what was shown (a new table). */
export function resetShown() {
  shown.clear();
}

// ---------------------------------------------------------------- feedback

export function toast(text, kind = "info") {
  const box = document.getElementById("toasts");
  if (!box) return;
  const item = h("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
  box.appendChild(item);
  setTimeout(() => item.classList.add("leaving"), 2600);
  setTimeout(() => item.remove(), 3100);
}

let bannerTimer = null;
let bannerShowing = null; // {text, kind} on screen now
const bannerQueue = []; // what waits its turn: announcements queue, never replace each other

/**
 * A big banner everyone sees (callout races, Бита, the phase change). Banners queue
 * (issue 25, point 7): one shown at a time, each for ``ms``, a callout ahead of the
 * brief ones; the same text twice in a row is shown once. It sits over the move list
 * (information, never a tap target), so it covers no pile, card or button.
 */
export function banner(text, kind = "callout", ms = kind === "callout" ? 2800 : 1700) {
  const box = document.getElementById("banner");
  if (!box) return;
  const item = { text, kind, ms };
  const same = (x) => x && x.text === text;
  if (same(bannerShowing) || bannerQueue.some(same)) return;
  if (bannerShowing) {
    if (kind === "callout") {
      const firstBrief = bannerQueue.findIndex((x) => x.kind !== "callout");
      bannerQueue.splice(firstBrief < 0 ? bannerQueue.length : firstBrief, 0, item);
    } else bannerQueue.push(item);
    while (bannerQueue.length > 4) bannerQueue.splice(bannerQueue.findIndex((x) => x.kind !== "callout") >>> 0, 1);
    return;
  }
  showBanner(box, item);
}

function showBanner(box, item) {
  bannerShowing = item;
  box.replaceChildren(h("div", { class: `banner-inner ${item.kind}` }, item.text));
  placeBanner(box);
  box.classList.remove("show");
  void box.offsetWidth; // restart the animation
  box.classList.add("show");
  clearTimeout(bannerTimer);
  bannerTimer = setTimeout(() => {
    box.classList.remove("show");
    bannerShowing = null;
    const next = bannerQueue.shift();
    if (next) bannerTimer = setTimeout(() => showBanner(box, next), 200);
  }, item.ms);
}

/** Over the move list when a table is on screen (centred on it), else under the top bar. */
function placeBanner(box) {
  const ticker = document.querySelector(".table-screen .ticker");
  if (!ticker) {
    box.style.top = "";
    return;
  }
  const r = ticker.getBoundingClientRect();
  const inner = box.firstChild.getBoundingClientRect();
  box.style.top = `${Math.max(0, Math.round(r.top + r.height / 2 - inner.height / 2))}px`;
  box.style.left = `${Math.round(r.left)}px`;
  box.style.right = `${Math.round(document.documentElement.clientWidth - r.right)}px`;
}

/** Forget queued banners (another table). */
export function resetBanners() {
  bannerQueue.length = 0;
}

export function setConnection(status) {
  const el = document.getElementById("conn");
  if (!el) return;
  el.hidden = status === "open";
  el.textContent = status === "open" ? "" : t("reconnecting");
}

// ---------------------------------------------------------------- dialogs

export function closeDialog() {
  const dlg = document.getElementById("dialog");
  if (dlg?.open) dlg.close();
  state.dialog = null;
  state.dialogKey = null;
}

/** A modal dialog; actions: [{label, onClick, primary}]. */
export function openDialog(kind, title, body, actions = [], { dismissable = true, key = null, lead = null } = {}) {
  const dlg = document.getElementById("dialog");
  if (!dlg) return;
  state.dialog = kind;
  state.dialogKey = key;
  dlg.dataset.kind = kind;
  const heading = h("h2", { id: "dialog-title" }, title);
  const buttons = h(
    "div",
    { class: "dialog-actions" },
    actions.map((a) =>
      h("button", { type: "button", class: a.primary ? "btn primary" : "btn", onclick: a.onClick }, a.label),
    ),
  );
  // The viewer's turn timer, inside the dialog: the ring behind the backdrop is out of sight.
  const timer = h("p", { class: "dialog-timer", role: "timer", "aria-live": "off", hidden: true });
  // The title and the actions stay in view; what is between scrolls, and says so.
  const scroller = h("div", { class: "dialog-scroll", tabindex: "-1" }, body);
  const more = () => scroller.classList.toggle("more-below", scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight > 2);
  scroller.addEventListener("scroll", more, { passive: true });
  // ``lead``: what stays in view under the title (the round's countdown).
  const top = lead ? h("div", { class: "dialog-lead" }, lead) : null;
  dlg.replaceChildren(h("div", { class: "dialog-body" }, heading, timer, top, scroller, actions.length ? buttons : null));
  requestAnimationFrame(more);
  if (typeof ResizeObserver === "function") new ResizeObserver(more).observe(scroller);
  dlg.setAttribute("aria-labelledby", "dialog-title");
  dlg.oncancel = (e) => {
    if (!dismissable) e.preventDefault();
    else {
      state.dialog = null;
      state.dialogKey = null;
    }
  };
  if (!dlg.open) dlg.showModal();
}

// ---------------------------------------------------------------- timer ring

const RING_R = 20;
const RING_LEN = 2 * Math.PI * RING_R;

function avatar(seatId, big = false) {
  const name = nameOf(seatId);
  const initial = (name.match(/[\p{L}\p{N}]/u)?.[0] || "?").toUpperCase();
  const svgNS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(svgNS, "svg");
  svg.setAttribute("viewBox", "0 0 48 48");
  svg.setAttribute("class", "ring");
  svg.setAttribute("aria-hidden", "true");
  const track = document.createElementNS(svgNS, "circle");
  for (const [k, v] of Object.entries({ cx: 24, cy: 24, r: RING_R, class: "ring-track" })) track.setAttribute(k, v);
  const arc = document.createElementNS(svgNS, "circle");
  for (const [k, v] of Object.entries({
    cx: 24,
    cy: 24,
    r: RING_R,
    class: "ring-arc",
    "stroke-dasharray": RING_LEN.toFixed(2),
    "stroke-dashoffset": "0",
    transform: "rotate(-90 24 24)",
  }))
    arc.setAttribute(k, v);
  svg.append(track, arc);
  return h(
    "span",
    { class: `avatar${big ? " big" : ""}${isComputer(seatId) ? " computer" : ""}`, dataset: { seat: seatId } },
    svg,
    h("span", { class: "initial" }, initial),
    h("span", { class: "secs", "aria-hidden": "true" }),
  );
}

/**
 * Whether the turn timer now runs for the viewer: their turn, or a penalty card they owe
 * (R18), at a timed table.
 */
function timerIsMine() {
  const v = state.view;
  if (!v || v.over || !state.seat || !state.deadline) return false;
  return myTurn() || legalOf("give").length > 0;
}

/** Move the countdown ring of the seat to move, and a dialog's own countdown; called a few times a second. */
export function updateTimers() {
  const v = state.view;
  const total = state.table?.settings?.turn_seconds || 60;
  const now = serverNow(); // the deadline is on the server's clock (clock.js)
  const left = state.deadline ? Math.max(0, state.deadline - now) : null;
  const inDialog = document.querySelector("#dialog[open] .dialog-timer");
  if (inDialog) {
    const mine = timerIsMine() && left !== null;
    inDialog.hidden = !mine;
    inDialog.classList.toggle("hurry", mine && left <= 10);
    const text = mine ? t("dialog_timer", { n: Math.ceil(left) }) : "";
    if (inDialog.textContent !== text) inDialog.textContent = text;
  }
  for (const av of document.querySelectorAll(".avatar")) {
    const active = v && !v.over && v.to_move === av.dataset.seat && left !== null;
    av.classList.toggle("timing", !!active);
    const arc = av.querySelector(".ring-arc");
    const secs = av.querySelector(".secs");
    if (!active) {
      arc?.setAttribute("stroke-dashoffset", "0");
      if (secs) secs.textContent = "";
      continue;
    }
    const frac = Math.max(0, Math.min(1, left / total));
    arc?.setAttribute("stroke-dashoffset", (RING_LEN * (1 - frac)).toFixed(2));
    av.classList.toggle("hurry", left <= 10);
    if (secs) secs.textContent = String(Math.ceil(left));
  }
}

// ---------------------------------------------------------------- ticker

function facesFor(game) {
  return game === "prsi" ? state.faces : "french";
}

export function eventText(ev, game) {
  const faces = facesFor(game);
  const card = (c) => (c ? cardShort(c, faces) : "");
  const n = (s) => nameOf(s);
  const variant = game === "prsi" ? pv.variantEventText(ev, { name: n, card }) : null; // PV2, PV4, PV5
  if (variant) return variant;
  switch (ev.a) {
    case "play":
      if (game === "prsi" && ev.suit && ev.card?.startsWith("Q"))
        return t("ev_play_suit", { name: n(ev.seat), card: card(ev.card), suit: suitName(ev.suit, faces) });
      return t("ev_play", { name: n(ev.seat), card: card(ev.card) });
    case "draw":
      if (ev.card) return t("ev_draw_card", { name: n(ev.seat), card: card(ev.card) });
      return t("ev_draw_n", { name: n(ev.seat), n: ev.n ?? 1 });
    case "stand":
      return t("ev_stand", { name: n(ev.seat) });
    case "pass":
      return t("ev_pass", { name: n(ev.seat) });
    case "turnover":
      return t("ev_turnover");
    case "forgiven":
      return t("ev_forgiven", { name: n(ev.seat), n: ev.n });
    case "round_end":
      return t("ev_round_end", { n: ev.round, name: n(ev.winner) });
    case "deal":
      return t("ev_deal", { n: ev.round });
    case "match_end":
      return t("ev_match_end");
    case "move":
      return t("ev_move", { name: n(ev.seat), card: card(ev.card), to: n(ev.to) });
    case "place":
      if (ev.to === ev.seat) return t("ev_place_own", { name: n(ev.seat), card: card(ev.card) });
      return t("ev_place", { name: n(ev.seat), card: card(ev.card), to: n(ev.to) });
    case "zevok":
      return t("ev_zevok", { name: n(ev.seat), to: n(ev.against) });
    case "penalty_move":
      return t("ev_penalty_move", { from: n(ev.from), to: n(ev.to), card: card(ev.card) });
    case "phase2":
      return t("ev_phase2", { name: n(ev.leader) });
    case "stumps":
      return t("ev_stumps", { name: n(ev.seat) });
    case "take":
      return t("ev_take", { name: n(ev.seat), card: card(ev.card) });
    case "bita":
      // no leader when the Бита ended the game (everyone out): no "Бита! leads" with no name
      return ev.leader ? t("ev_bita", { name: n(ev.leader) }) : t("bita");
    case "one_card":
      return t("ev_one_card", { name: n(ev.seat) });
    case "how_many": {
      const caught = (ev.caught || []).map(n).join(", ");
      return caught ? t("ev_how_many", { name: n(ev.seat), caught }) : t("ev_how_many_none", { name: n(ev.seat) });
    }
    case "give":
      // Only the giver knows the card (main.js adds it to its own give).
      if (ev.card) return t("ev_give_card", { name: n(ev.seat), card: card(ev.card), to: n(ev.to) });
      return t("ev_give", { name: n(ev.seat), to: n(ev.to) });
    case "out":
      return t("ev_out", { names: (ev.seats || []).map(n).join(", "), place: ev.place });
    case "game_end":
      return t("ev_game_end");
    default:
      return ev.a || "";
  }
}

function ticker(game) {
  const items = state.ticker.slice(-3).reverse();
  const list = h("ol", { class: "ticker", "aria-label": t("last_moves") });
  if (!items.length) list.appendChild(h("li", { class: "muted" }, t("ticker_empty")));
  items.forEach((item, i) => {
    const ev = item.event;
    const mine = ev.a === "give" && ev.seat === state.seat && state.given.get(item.version);
    const li = h("li", { class: i === 0 ? "newest" : "" }, eventText(mine ? { ...ev, card: mine } : ev, game));
    if (item.by === "timer") {
      const text = ev.seat === state.seat ? t("by_timer_you") : t("by_timer");
      li.appendChild(h("span", { class: "by-timer" }, ` · ${text}`));
    }
    list.appendChild(li);
  });
  return list;
}

// ---------------------------------------------------------------- common pieces

const ICONS = {
  trophy: "M8 4h8v4a4 4 0 0 1-8 0V4z M8 6H5v1a3 3 0 0 0 3 3 M16 6h3v1a3 3 0 0 1-3 3 M12 12v4 M8.5 20h7 M10 16h4v4h-4z",
  scores: "M4 5h16v14H4z M4 10h16 M4 15h16 M10 5v14",
  back: "M15 5l-7 7 7 7",
  rules: "M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18z M9.5 9.5a2.5 2.5 0 1 1 3.5 2.3c-.7.3-1 .9-1 1.7v.5 M12 17v.5",
};

export function icon(name, size = 22) {
  const svgNS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(svgNS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", String(size));
  svg.setAttribute("height", String(size));
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "icon");
  const path = document.createElementNS(svgNS, "path");
  path.setAttribute("d", ICONS[name]);
  path.setAttribute("fill", "none");
  path.setAttribute("stroke", "currentColor");
  path.setAttribute("stroke-width", "2");
  path.setAttribute("stroke-linecap", "round");
  path.setAttribute("stroke-linejoin", "round");
  svg.appendChild(path);
  return svg;
}

function topbar(handlers, title, sub) {
  const faces = state.view?.game === "prsi";
  return h(
    "header",
    { class: "topbar" },
    h("button", { type: "button", id: "local-back-inline", class: "icon-btn back-btn", "aria-label": t("back"), onclick: handlers.onHome }, icon("back")),
    h("div", { class: "title" }, h("strong", {}, title), sub ? h("span", { class: "sub" }, sub) : null),
    faces
      ? h(
          "button",
          {
            type: "button",
            class: "icon-btn faces-btn",
            // What the button does: the pack it switches to, not the one shown.
            "aria-label": state.faces === "german" ? t("faces_to_french") : t("faces_to_german"),
            title: state.faces === "german" ? t("faces_to_french") : t("faces_to_german"),
            onclick: handlers.onToggleFaces,
          },
          suitSvg(state.faces === "german" ? "h" : "h", state.faces === "german" ? "french" : "german", 18),
          h("span", { class: "faces-swap", "aria-hidden": "true" }, "⇄"),
        )
      : null,
    h("button", { type: "button", class: "icon-btn rules-btn", "aria-label": t("rules"), onclick: handlers.onRules }, icon("rules")),
    h("button", { type: "button", class: "icon-btn", "aria-label": t("scores"), onclick: handlers.onScores }, icon("scores")),
    h("button", { type: "button", class: "icon-btn", "aria-label": t("leaderboard"), onclick: handlers.onLeaderboard }, icon("trophy")),
  );
}

function fan(count, max = 7) {
  const shown = Math.min(count, max);
  const box = h("div", { class: "fan", "aria-hidden": "true" });
  for (let i = 0; i < shown; i++) {
    const angle = shown > 1 ? -18 + (36 * i) / (shown - 1) : 0;
    const b = backFigure("mini");
    b.style.setProperty("--rot", `${angle}deg`);
    b.style.setProperty("--i", String(i));
    box.appendChild(b);
  }
  return box;
}

function statusLine() {
  const v = state.view;
  if (!v) return "";
  if (v.over) return v.game === "prsi" ? t("match_over") : t("game_over");
  if (!state.seat) return v.to_move ? t("turn_of", { name: nameOf(v.to_move) }) : t("spectator");
  if (iLeft()) return t("you_left");
  if (myTurn()) return t("your_turn");
  if (v.game === "penki" && v.penalty) return t("waiting_give", { name: nameOf(v.penalty.to) });
  return v.to_move ? t("turn_of", { name: nameOf(v.to_move) }) : "";
}

function opponentsOrder() {
  const players = state.view.players;
  const i = players.findIndex((p) => p.id === state.seat);
  if (i < 0) return players;
  return [...players.slice(i + 1), ...players.slice(0, i)];
}

function me() {
  return state.view.players.find((p) => p.id === state.seat) || null;
}

/**
 * Lay a hand out in rows of cards that overlap just enough to fit; new cards glide in.
 * One row up to 8 cards, two up to 22, then three; big hands get smaller cards, so the
 * table above keeps its room on a phone.
 */
function handRows(cards, makeCard) {
  const before = shown.get("hand");
  shown.set("hand", new Set(cards));
  const isNew = (c) => before instanceof Set && before.size > 0 && !before.has(c) && !reducedMotion();
  const n = cards.length;
  const rows = n <= 8 ? 1 : n <= 22 ? 2 : 3;
  const perRow = Math.max(1, Math.ceil(n / rows));
  const box = h("div", { class: `hand${n > 14 ? " big-hand" : ""}`, role: "group", "aria-label": t("you") });
  for (let r = 0; r < rows; r++) {
    const rowCards = cards.slice(r * perRow, (r + 1) * perRow);
    const row = h("div", { class: "hand-row" });
    row.style.setProperty("--n", String(rowCards.length));
    rowCards.forEach((c, i) => {
      const node = makeCard(c, r * perRow + i);
      node.style.setProperty("--i", String(i));
      if (isNew(c)) node.classList.add("new-card");
      row.appendChild(node);
    });
    box.appendChild(row);
  }
  return box;
}

// ---------------------------------------------------------------- Prší

function prsiCenter(handlers) {
  const v = state.view;
  const faces = state.faces;
  const canDraw = legalOf("draw").length > 0;
  const stock = h(
    "button",
    {
      type: "button",
      class: `pile stock${canDraw ? " can" : ""}`,
      "aria-label": `${t("stock")}: ${v.stock}`,
      disabled: !canDraw,
      onclick: () => handlers.onAction({ a: "draw" }),
    },
    v.stock > 0 ? backFigure("big") : h("div", { class: "card slot big" }),
    v.stock > 1 ? backFigure("big under") : null,
    h("span", { class: "badge count" }, String(v.stock)),
  );
  const top = v.top ? cardFigure(v.top, faces, `big top${fresh("prsi-top", `${v.top}/${v.discard}`) ? " arrive" : ""}`) : h("div", { class: "card slot big" });
  const discard = h("div", { class: "pile discard" }, v.discard > 1 ? backFigure("big under discard-under") : null, top);
  const suitBox = h(
    "div",
    { class: `suit-in-play suit-${v.suit}`, role: "img", "aria-label": `${t("suit_in_play")}: ${suitName(v.suit, faces)}` },
    suitSvg(v.suit, faces, 54),
    h("span", { class: "suit-name" }, suitName(v.suit, faces)),
  );
  let pending = null;
  if (v.pending_draw) pending = h("div", { class: "pending draw", role: "status" }, t("pending_draw", { n: v.pending_draw }));
  else if (v.pending_skip) pending = h("div", { class: "pending skip", role: "status" }, t("pending_skip"));
  if (v.named_rank) suitBox.classList.add("no-part"); // PV5: the Jack's own suit plays no part
  return h("section", { class: "center felt-center" }, stock, discard, h("div", { class: "center-side" }, suitBox, pending, ...pv.variantNotes(v, nameOf)));
}

function prsiOpponents() {
  const v = state.view;
  return h(
    "section",
    { class: "opponents", "aria-label": t("players") },
    opponentsOrder().map((p) =>
      h(
        "div",
        {
          class: `opp${v.to_move === p.id && !v.over ? " to-move" : ""}`,
          dataset: { seat: p.id },
          "aria-label": `${nameOf(p.id)}: ${cardsText(p.cards)}`,
          role: "group",
        },
        h("div", { class: "opp-head" }, avatar(p.id), h("span", { class: "opp-name" }, nameOf(p.id))),
        fan(p.cards),
        // Points and the card count side by side under the fan: never one over the other.
        h(
          "div",
          { class: "opp-foot" },
          v.points && v.points[p.id] !== undefined ? h("span", { class: "opp-points" }, t("pts", { n: v.points[p.id] })) : null,
          h("span", { class: "badge count" }, String(p.cards)),
        ),
      ),
    ),
  );
}

function prsiHand(handlers) {
  const v = state.view;
  const hand = v.hand || [];
  const plays = legalOf("play");
  const playable = new Set(plays.map((a) => a.card ?? a.cards[0]));
  const faces = state.faces;
  return handRows(hand, (c) => {
    const picked = pv.groupIndex(c); // PV4: the group being picked, in order
    const can = playable.has(c) || picked > 0 || pv.canJoin(c);
    const extra = `${picked ? " picked" : ""}${v.drawn === c ? " drawn-card" : ""}`;
    const b = cardButton(c, faces, `in-hand${can ? " playable" : ""}${extra}`);
    if (picked) b.dataset.pick = String(picked);
    b.setAttribute("aria-disabled", can ? "false" : "true");
    b.addEventListener("click", () => {
      if (!can) {
        b.classList.remove("nope");
        void b.offsetWidth;
        b.classList.add("nope");
        return;
      }
      handlers.onPrsiPlay(c);
    });
    return b;
  });
}

function prsiActions(handlers) {
  const v = state.view;
  const buttons = [];
  if (legalOf("draw").length)
    buttons.push(
      h("button", { type: "button", class: "btn action draw", onclick: () => handlers.onAction({ a: "draw" }) }, v.pending_draw ? t("draw_n", { n: v.pending_draw }) : t("draw")),
    );
  if (legalOf("stand").length)
    buttons.push(h("button", { type: "button", class: "btn action stand", onclick: () => handlers.onAction({ a: "stand" }) }, t("stand")));
  if (legalOf("pass").length)
    buttons.push(h("button", { type: "button", class: "btn action pass", onclick: () => handlers.onAction({ a: "pass" }) }, pv.passLabel(v)));
  const group = pv.currentGroup(); // PV4: play or drop the group being picked
  if (group.length) {
    buttons.splice(
      0,
      buttons.length,
      h("button", { type: "button", class: "btn action primary play-group", disabled: !pv.groupReady(), onclick: () => handlers.onPlayGroup() }, t("group_play", { n: group.length })),
      h("button", { type: "button", class: "btn action cancel-group", onclick: () => handlers.onCancelGroup() }, t("cancel")),
    );
  }
  return h("div", { class: "actions" }, buttons);
}

function renderPrsi(root, handlers) {
  const v = state.view;
  const my = me();
  root.replaceChildren(
    h(
      "div",
      { class: `screen table-screen prsi${myTurn() ? " my-turn" : ""}${v.players.length > 4 ? " many" : ""}` },
      topbar(handlers, t("prsi"), t("round", { n: v.round, of: v.rounds || 5 })),
      pv.variantChips(v),
      prsiOpponents(),
      prsiCenter(handlers),
      ticker("prsi"),
      mySeat(
        [
          my && v.points ? h("span", { class: "my-points" }, t("pts", { n: v.points[state.seat] ?? 0 })) : null,
          prsiActions(handlers),
        ],
        state.seat ? prsiHand(handlers) : h("p", { class: "muted center-text" }, t("not_seated")),
      ),
    ),
  );
}

/** The viewer's own seat: avatar, status line and ``badges`` in one row, then ``body`` (the hand). */
function mySeat(badges, body) {
  return h(
    "section",
    { class: "me", "aria-label": t("you") },
    h(
      "div",
      { class: "me-head" },
      state.seat ? avatar(state.seat, true) : null,
      h("span", { class: "status", role: "status", "aria-live": "polite" }, statusLine()),
      ...badges,
    ),
    body,
  );
}

export function suitChooser(card, onChoose) {
  const faces = state.faces;
  const grid = h(
    "div",
    { class: "suit-grid" },
    ["h", "s", "d", "c"].map((s) =>
      h(
        "button",
        { type: "button", class: `suit-choice suit-${s}`, "aria-label": suitName(s, faces), onclick: () => onChoose(s) },
        suitSvg(s, faces, 56),
        h("span", {}, suitName(s, faces)),
      ),
    ),
  );
  openDialog("suit", t("choose_suit"), h("div", {}, h("div", { class: "dialog-card" }, cardFigure(card, faces, "mid")), grid), [
    { label: t("cancel"), onClick: () => closeDialog() },
  ], { key: card });
}

/** The five-round match table: points per round, totals, and at the end balances. */
export function prsiScoreTable() {
  const v = state.view;
  const players = v.players.map((p) => p.id);
  const table = h("table", { class: `scores match${players.length > 3 ? " many-cols" : ""}` });
  table.appendChild(
    h("thead", {}, h("tr", {}, h("th", { scope: "col", class: "rowhead" }, "#"), players.map((p) => h("th", { scope: "col", title: nameOf(p) }, h("span", { class: "name" }, nameOf(p)))))),
  );
  const body = h("tbody");
  const hist = v.history || [];
  for (let r = 1; r <= (v.rounds || 5); r++) {
    const row = hist.find((x) => x.round === r);
    body.appendChild(
      h(
        "tr",
        { class: r === v.round && !v.over ? "current" : "" },
        h("th", { scope: "row" }, String(r)),
        players.map((p) => h("td", {}, row ? String(row.points?.[p] ?? 0) : "–")),
      ),
    );
  }
  body.appendChild(h("tr", { class: "total" }, h("th", { scope: "row" }, t("total")), players.map((p) => h("td", {}, String(v.points?.[p] ?? 0)))));
  if (v.places) body.appendChild(h("tr", {}, h("th", { scope: "row" }, t("place")), players.map((p) => h("td", {}, v.places[p] != null ? `${v.places[p]}.` : "–"))));
  if (v.balances)
    body.appendChild(
      h(
        "tr",
        { class: "balance" },
        h("th", { scope: "row" }, t("balance")),
        players.map((p) => {
          const b = v.balances[p] ?? 0;
          return h("td", { class: b > 0 ? "pos" : b < 0 ? "neg" : "" }, b > 0 ? `+${b}` : String(b));
        }),
      ),
    );
  table.appendChild(body);
  return h("div", { class: "scores-wrap" }, table);
}

/**
 * A Prší round's end: the last card on the pile (who went out with it), who drew for a
 * last 7, and per player the cards left (the viewer's own as pictures, the others'
 * counts), the round's points and the totals. ``before``: the view before the round ended.
 */
/** "Bob drew 4 for the last 7" (draws split by a turnover summed), "… was let off 2". */
function sevenLines(drew) {
  const drawn = new Map();
  const forgiven = new Map();
  for (const e of drew) {
    const into = e.a === "forgiven" ? forgiven : drawn;
    into.set(e.seat, (into.get(e.seat) || 0) + (e.n ?? 1));
  }
  return [
    ...[...drawn].map(([seat, n]) => t("last_seven_drew", { name: nameOf(seat), n })),
    ...[...forgiven].map(([seat, n]) => t("last_seven_forgiven", { name: nameOf(seat), n })),
  ];
}

export function roundResult(ev, { lastPlay = null, drew = [], before = null } = {}) {
  const faces = state.faces;
  const players = state.view.players.map((p) => p.id);
  const counts = {};
  for (const p of before?.players || []) counts[p.id] = p.cards;
  for (const e of drew) if (e.a === "draw" && e.seat in counts) counts[e.seat] += e.n ?? 1;
  if (ev.winner in counts) counts[ev.winner] = 0;
  const myLeft = before?.hand ? [...before.hand] : null;
  if (myLeft) for (const e of drew) if (e.a === "draw" && e.seat === state.seat && e.card) myLeft.push(e.card);
  const parts = [];
  if (lastPlay?.card) {
    parts.push(
      h(
        "div",
        { class: "round-last" },
        h("div", { class: "pile discard" }, cardFigure(lastPlay.card, faces, "mid top")),
        h(
          "div",
          { class: "round-last-text" },
          h("strong", {}, t("last_card", { name: nameOf(ev.winner), card: cardShort(lastPlay.card, faces) })),
          ...sevenLines(drew).map((line) => h("span", { class: "round-seven" }, line)),
        ),
      ),
    );
  }
  parts.push(
    h(
      "table",
      { class: "scores round" },
      h("thead", {}, h("tr", {}, h("th", {}, t("player")), h("th", {}, t("cards_left")), h("th", {}, t("points")), h("th", {}, t("total")))),
      h(
        "tbody",
        {},
        players.map((p) => {
          let left = counts[p] != null ? cardsText(counts[p]) : "–";
          if (p === ev.winner) left = t("went_out");
          const mine = p === state.seat && myLeft && p !== ev.winner;
          return h(
            "tr",
            { class: p === ev.winner ? "winner" : "" },
            h("th", { scope: "row" }, nameOf(p), p === ev.winner ? " ★" : ""),
            h("td", { class: "left" }, mine ? h("span", { class: "left-cards", "aria-label": myLeft.map((c) => cardName(c, faces)).join(", ") }, myLeft.map((c) => cardFigure(c, faces, "tiny-face"))) : left),
            h("td", {}, String(ev.round_points?.[p] ?? 0)),
            h("td", {}, String(ev.points?.[p] ?? 0)),
          );
        }),
      ),
    ),
  );
  return h("div", { class: "round-result" }, ...parts);
}

// ---------------------------------------------------------------- Penki

function penkiPileTile(p, handlers, { mine }) {
  const v = state.view;
  const selecting = state.selected && myTurn() && v.phase === 1;
  const target = selecting && (state.selected === "drawn" || !mine);
  const label = `${nameOf(p.id)} — ${t("pile")}: ${p.pile_top ? cardName(p.pile_top, "french") : t("empty_pile")}, ${p.pile}`;
  const landed = fresh(`pile-${p.id}`, `${p.pile_top}/${p.pile}`);
  const top = p.pile_top ? cardFigure(p.pile_top, "french", `pile-top${landed ? " land" : ""}`) : h("div", { class: "card slot pile-top" });
  if (p.pile > 1) top.classList.add("stacked");
  const pileBtn = h(
    "button",
    {
      type: "button",
      class: `pile-btn${target ? " target" : ""}${mine && state.selected === "pile" ? " selected" : ""}`,
      "aria-label": label,
      dataset: { seat: p.id },
      onclick: () => handlers.onPileTap(p.id),
    },
    top,
    h("span", { class: "badge count" }, String(p.pile)),
  );
  return h(
    "div",
    { class: `ptile${mine ? " mine" : ""}${v.to_move === p.id && !v.over ? " to-move" : ""}${p.out ? " is-out" : ""}`, dataset: { seat: p.id } },
    h("div", { class: "opp-head" }, avatar(p.id), h("span", { class: "opp-name" }, mine ? `${nameOf(p.id)} (${t("you")})` : nameOf(p.id))),
    pileBtn,
    stumpsBadge(p),
  );
}

function stumpsBadge(p) {
  if (!p.stumps) return null;
  const box = h("div", { class: "stumps", "aria-label": t("stumps_n", { n: p.stumps }), role: "img" });
  for (let i = 0; i < Math.min(p.stumps, 2); i++) box.appendChild(backFigure("tiny"));
  box.appendChild(h("span", { class: "stumps-n" }, `×${p.stumps}`));
  return box;
}

function penkiPhase1(handlers) {
  const v = state.view;
  const my = me();
  const opps = opponentsOrder();
  const canDraw = legalOf("draw").length > 0 && !v.drawn;
  const stock = h(
    "button",
    { type: "button", class: `pile stock${canDraw ? " can" : ""}`, "aria-label": `${t("stock")}: ${v.stock}`, disabled: !canDraw, onclick: () => handlers.onAction({ a: "draw" }) },
    v.stock > 0 ? backFigure("big") : h("div", { class: "card slot big" }),
    v.stock > 1 ? backFigure("big under") : null,
    h("span", { class: "badge count" }, String(v.stock)),
  );
  let drawn;
  if (v.drawn) {
    const mineDrawn = myTurn();
    drawn = h(
      "button",
      {
        type: "button",
        class: `drawn-btn${state.selected === "drawn" ? " selected" : ""}`,
        "aria-label": `${t("drawn")}: ${cardName(v.drawn, "french")}`,
        "aria-pressed": state.selected === "drawn" ? "true" : "false",
        disabled: !mineDrawn,
        onclick: () => handlers.onSelect("drawn"),
      },
      cardFigure(v.drawn, "french", `big${fresh("penki-drawn", `${v.drawn}/${v.stock}`) ? " arrive" : ""}`),
    );
  } else {
    drawn = h("div", { class: "card slot big drawn-slot", "aria-hidden": "true" });
  }
  let hint = "";
  // The same words whether or not a card fits anywhere: noticing a fit is the game.
  if (myTurn()) {
    if (v.drawn || state.selected === "drawn") hint = t("tap_target");
    else if (state.selected === "pile") hint = t("tap_target_move");
    else if (!v.stock) hint = t("tap_move"); // R8: the stock is out, only a move is left
    else hint = my?.pile_top ? t("tap_move_or_draw") : t("tap_to_draw");
  }
  return [
    h("section", { class: "piles opponents", "aria-label": t("players") }, opps.map((p) => penkiPileTile(p, handlers, { mine: false }))),
    h("section", { class: "center felt-center" }, stock, drawn, h("div", { class: "center-side" }, h("p", { class: "hint" }, hint))),
    ticker("penki"),
    h(
      "section",
      { class: "me penki-me" },
      h("div", { class: "me-head" }, h("span", { class: "status", role: "status", "aria-live": "polite" }, statusLine())),
      my ? penkiPileTile(my, handlers, { mine: true }) : h("p", { class: "muted center-text" }, t("not_seated")),
    ),
  ];
}

function penkiTable() {
  const v = state.view;
  const table = v.table || [];
  if (!table.length)
    return h("div", { class: "ptable empty" }, h("span", { class: "empty-text" }, myTurn() && !v.penalty ? t("lead_hint") : t("table_empty")));
  const bottom = table[0];
  const top = table[table.length - 1];
  const box = h("div", { class: "ptable", role: "group", "aria-label": `${t("table")}: ${table.length}` });
  box.appendChild(
    h(
      "div",
      { class: "tcard bottom" },
      cardFigure(bottom, "french", `mid${table.length === 1 && fresh("penki-table", `${top}/1`) ? " arrive" : ""}`),
      // A lone card is both the one to beat and the one a take gets.
      h("span", { class: "tlabel" }, table.length === 1 ? `${t("bottom")} = ${t("top")}` : t("bottom")),
    ),
  );
  if (table.length > 2) box.appendChild(h("div", { class: "tmiddle", "aria-hidden": "true" }, `+${table.length - 2}`));
  if (table.length > 1)
    box.appendChild(
      h("div", { class: "tcard top" }, cardFigure(top, "french", `mid${fresh("penki-table", `${top}/${table.length}`) ? " arrive" : ""}`), h("span", { class: "tlabel" }, t("top"))),
    );
  return box;
}

function penkiPhase2(handlers) {
  const v = state.view;
  const opps = opponentsOrder();
  const plays = new Set(legalOf("play").map((a) => a.card));
  const my = me();
  // A penalty hand-over: who still owes a card, and who gets them (public: the banner said so).
  const giving = new Set(v.penalty?.from || []);
  const oppTiles = opps.map((p) =>
    h(
      "div",
      {
        class: `opp${v.to_move === p.id && !v.over ? " to-move" : ""}${p.out ? " is-out" : ""}${giving.has(p.id) ? " giving" : ""}${v.penalty?.to === p.id ? " receiving" : ""}`,
        dataset: { seat: p.id },
        role: "group",
        "aria-label": `${nameOf(p.id)}: ${cardsText(p.cards)}`,
      },
      h("div", { class: "opp-head" }, avatar(p.id), h("span", { class: "opp-name" }, nameOf(p.id))),
      p.out ? h("span", { class: "out-tag" }, v.places?.[p.id] ? `${t("place")} ${v.places[p.id]}` : t("out")) : fan(p.cards),
      h("div", { class: "opp-foot" }, stumpsBadge(p), p.out ? null : h("span", { class: "badge count" }, String(p.cards))),
      p.declared ? h("span", { class: "declared" }, callout("one_card")) : null,
    ),
  );
  const beatHint = myTurn() && !v.penalty && (v.table || []).length > 0;
  const center = h(
    "section",
    { class: "center felt-center phase2" },
    h("div", { class: "trump", role: "img", "aria-label": `${t("trump")}: ♦` }, suitSvg("d", "french", 26), h("span", {}, t("trump"))),
    penkiTable(),
    v.discarded || beatHint
      ? h(
          "div",
          { class: "center-side" },
          // "Бита: 24" said in words: the cards cleared from the table, out of play (issue 25, point 9)
          v.discarded ? h("div", { class: "phase-tag discarded", role: "note", title: t("discarded_what"), "aria-label": `${t("discarded_n", { n: v.discarded })}. ${t("discarded_what")}` }, t("discarded_n", { n: v.discarded })) : null,
          beatHint ? h("p", { class: "hint" }, t("beat_hint")) : null,
        )
      : null,
  );
  const takeBtn = legalOf("take").length
    ? h("button", { type: "button", class: "btn action take", onclick: () => handlers.onAction({ a: "take" }) }, t("take"))
    : null;
  const hand = v.hand || [];
  return [
    h("section", { class: "opponents", "aria-label": t("players") }, oppTiles),
    center,
    ticker("penki"),
    mySeat(
      [
        my ? stumpsBadge(my) : null,
        my?.declared ? h("span", { class: "declared" }, callout("one_card")) : null,
        h("div", { class: "actions" }, takeBtn),
      ],
      state.seat
        ? handRows(hand, (c) => {
            const can = plays.has(c);
            const b = cardButton(c, "french", `in-hand${can ? " playable" : ""}`);
            b.setAttribute("aria-disabled", can ? "false" : "true");
            b.addEventListener("click", () => {
              if (can) handlers.onAction({ a: "play", card: c });
              else {
                b.classList.remove("nope");
                void b.offsetWidth;
                b.classList.add("nope");
              }
            });
            return b;
          })
        : h("p", { class: "muted center-text" }, t("not_seated")),
    ),
  ];
}

/**
 * Whether the viewer's own «ОДНА КАРТА!» is ready: phase 2, one card in hand, not yet
 * declared (R17), whatever action left the one card (play, give, take). Only the
 * viewer's own hand is read: nothing about anyone else's debt (S3).
 */
export function oneCardReady() {
  const v = state.view;
  if (!v || v.game !== "penki" || v.over || v.phase !== 2 || !state.seat) return false;
  const mine = v.players.find((p) => p.id === state.seat);
  return (v.hand || []).length === 1 && !!mine && !mine.declared && !mine.out;
}

function calloutBar(handlers) {
  const kinds = ["zevok", "one_card", "how_many"];
  const ready = oneCardReady();
  return h(
    "nav",
    { class: "callouts", "aria-label": t("callouts") },
    kinds.map((k) =>
      h(
        "button",
        {
          type: "button",
          class: `callout callout-${k}${state.view.over || (k === "zevok") !== (state.view.phase === 1) ? " off-phase" : ""}${k === "one_card" && ready ? " ready" : ""}`,
          "aria-description": k === "one_card" && ready ? t("one_card_ready") : null,
          dataset: { callout: k },
          onpointerdown: (e) => e.currentTarget.classList.add("pressed"),
          onpointerup: (e) => e.currentTarget.classList.remove("pressed"),
          onpointerleave: (e) => e.currentTarget.classList.remove("pressed"),
          onclick: (e) => handlers.onCallout(k, e.currentTarget),
        },
        // The Russian call as it is shouted, and in cs/en what it means (issue 25, point 9).
        h("span", { class: "callout-call", lang: "ru" }, callout(k)),
        language() === "ru" ? null : h("span", { class: "callout-mean" }, t(`co_mean_${k}`)),
      ),
    ),
  );
}

function renderPenki(root, handlers) {
  const v = state.view;
  const parts = v.phase === 1 ? penkiPhase1(handlers) : penkiPhase2(handlers);
  root.replaceChildren(
    h(
      "div",
      {
        class: `screen table-screen penki phase${v.phase}${myTurn() ? " my-turn" : ""}${v.players.length > 4 ? " many" : ""}${state.seat ? "" : " spectating"}`,
      },
      topbar(handlers, t("penki"), v.phase === 1 ? t("phase1") : t("phase2")),
      ...parts,
      state.seat ? calloutBar(handlers) : null,
    ),
  );
}

/**
 * What the penalty hand-over dialog is built from (R18): who gets the cards, which
 * cards this seat may give, who caught them and who is queued next. The dialog is
 * rebuilt whenever this changes (a second hand-over right after the first).
 */
export function giveKey() {
  const v = state.view;
  const gives = legalOf("give").map((a) => a.card);
  if (!gives.length || !v?.penalty) return null;
  return JSON.stringify([v.penalty.to, gives, caughtBy(v.penalty.to), v.penalty_queue || []]);
}

/** Who asked «СКОЛЬКО КАРТ?» that caught ``seat`` most recently (from the moves seen), or null. */
function caughtBy(seat) {
  const events = [...(state.view?.last || []), ...state.ticker.map((x) => x.event)];
  for (let i = events.length - 1; i >= 0; i--) {
    const ev = events[i];
    if (ev.a === "how_many" && (ev.caught || []).includes(seat)) return ev.seat;
  }
  return null;
}

export function giveDialog(onGive) {
  const v = state.view;
  const to = v.penalty?.to;
  const gives = legalOf("give").map((a) => a.card);
  const asker = caughtBy(to);
  const why =
    asker === state.seat
      ? t("give_why_you", { name: nameOf(to) })
      : asker
        ? t("give_why", { asker: nameOf(asker), name: nameOf(to) })
        : t("give_why_plain", { name: nameOf(to) });
  const queue = (v.penalty_queue || []).filter((p) => p !== to);
  const grid = h(
    "div",
    { class: "give-grid" },
    gives.map((c) => {
      const b = cardButton(c, "french", "mid");
      b.addEventListener("click", () => {
        if (grid.classList.contains("sending")) return;
        grid.classList.add("sending");
        b.classList.add("chosen");
        onGive(c).finally(() => grid.classList.remove("sending"));
      });
      return b;
    }),
  );
  openDialog(
    "give",
    t("give_title", { name: nameOf(to) }),
    h(
      "div",
      {},
      h("p", { class: "give-why" }, why),
      queue.length ? h("p", { class: "muted small give-then" }, t("give_then", { names: queue.map(nameOf).join(", ") })) : null,
      grid,
    ),
    [],
    { dismissable: false, key: giveKey() },
  );
}

export function penkiResult() {
  const v = state.view;
  const players = [...v.players].sort((a, b) => (v.places?.[a.id] ?? 99) - (v.places?.[b.id] ?? 99));
  return h(
    "table",
    { class: "scores" },
    h("thead", {}, h("tr", {}, h("th", {}, t("place")), h("th", {}, t("player")), h("th", {}, t("balance")))),
    h(
      "tbody",
      {},
      players.map((p) => {
        const b = v.balances?.[p.id];
        return h(
          "tr",
          {},
          h("td", {}, v.places?.[p.id] != null ? `${v.places[p.id]}.` : "–"),
          h("th", { scope: "row" }, nameOf(p.id)),
          h("td", { class: b > 0 ? "pos" : b < 0 ? "neg" : "" }, b == null ? "–" : b > 0 ? `+${b}` : String(b)),
        );
      }),
    ),
  );
}

// ---------------------------------------------------------------- entry

/** Render the table screen from state; keeps keyboard focus where it was. */
export function renderTable(root, handlers) {
  if (!state.view) return;
  const active = document.activeElement;
  const focusKey = active && root.contains(active) ? active.dataset.card || active.dataset.callout || active.dataset.seat || active.className : null;
  if (state.view.game === "prsi") renderPrsi(root, handlers);
  else renderPenki(root, handlers);
  if (focusKey) {
    const match = [...root.querySelectorAll("button")].find(
      (b) => b.dataset.card === focusKey || b.dataset.callout === focusKey || b.dataset.seat === focusKey || b.className === focusKey,
    );
    match?.focus({ preventScroll: true });
  }
  updateTimers();
}

export { legal };
