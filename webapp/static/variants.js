// Prší table variants in the Mini App (RULES.md PV1–PV7, PV3q): the lobby's switches,
// what the table shows (which variants are on, a Jack's rank, PV2's extra turn, PV7's
// drawn card) and the plays they add (a group of one rank, a Jack naming a rank).
// render.js and main.js call in here at a few marked places; the rules stay on the
// server: every choice offered comes from the view's legal actions.

import { cardFigure } from "./cards.js";
import { indexLabel, rankName, suitName, t, tf } from "./i18n.js";
import { closeDialog, h, openDialog, suitChooser } from "./render.js";
import { legalOf, state } from "./state.js";

export const VARIANTS = ["PV1", "PV2", "PV3", "PV3q", "PV4", "PV5", "PV6", "PV7"];
const RANKS = ["7", "8", "9", "10", "J", "Q", "K", "A"];
const EXCLUSIVE = { PV3: "PV3q", PV3q: "PV3" }; // PV3q is the tougher PV3: one or the other

const rank = (c) => c.slice(0, -1);

/** The variants of the view (a list, empty at a house-rules table). */
export function variantsOf(v) {
  return (v && v.variants) || [];
}

// ---------------------------------------------------------------- the lobby

/** Checkboxes for the local lobby's Prší section; ``value()`` gives the names ticked, in order. */
export function variantSwitches() {
  const boxes = {};
  const list = h(
    "div",
    { class: "variant-list" },
    VARIANTS.map((name) => {
      const id = `variant-${name}`;
      const box = h("input", {
        type: "checkbox",
        id,
        name: "variants",
        value: name,
        "aria-describedby": `${id}-hint`,
        onchange: () => {
          if (box.checked && EXCLUSIVE[name]) boxes[EXCLUSIVE[name]].checked = false;
        },
      });
      boxes[name] = box;
      return h(
        "label",
        { class: "variant-switch", for: id },
        box,
        h("span", { class: "variant-text" }, h("span", { class: "variant-name" }, tf(`pv_${name}`, state.faces)), h("span", { class: "variant-hint muted", id: `${id}-hint` }, tf(`pvh_${name}`, state.faces))),
      );
    }),
  );
  const node = h(
    "details",
    { class: "lobby-game variants-box" },
    h("summary", {}, t("variants"), h("span", { class: "muted variants-note" }, t("variants_friendly"))),
    list,
  );
  return { node, value: () => VARIANTS.filter((n) => boxes[n].checked) };
}

// ---------------------------------------------------------------- the table

/**
 * "Variants: …" under the table's top bar, or null at a house-rules table. Each chip is a
 * button: a tap (touch has no tooltips) opens what the variant changes (issue 25, point 4).
 */
export function variantChips(v) {
  const on = variantsOf(v);
  if (!on.length) return null;
  return h(
    "div",
    { class: "variant-chips", role: "group", "aria-label": `${t("variants")}. ${t("variants_friendly")}` },
    h("span", { class: "variant-chip lead" }, `${t("variants")}:`),
    ...on.map((n) =>
      h(
        "button",
        { type: "button", class: "variant-chip", dataset: { variant: n }, "aria-haspopup": "dialog", onclick: () => explainVariant(n) },
        tf(`pv_${n}`, state.faces),
      ),
    ),
  );
}

/** A variant's name and what it changes, in a small dialog. */
export function explainVariant(n) {
  openDialog("variant", tf(`pv_${n}`, state.faces), h("p", { class: "variant-explained" }, tf(`pvh_${n}`, state.faces)), [
    { label: t("close"), primary: true, onClick: () => closeDialog() },
  ]);
}

/** Notes for the centre of the table: a Jack's rank (PV5), the extra turn (PV2), the drawn card (PV7). */
export function variantNotes(v, nameOf) {
  const out = [];
  if (!variantsOf(v).length) return out;
  if (v.named_rank) {
    out.push(h("div", { class: "pending named-rank", role: "status" }, tf("named_rank", state.faces, { rank: rankName(v.named_rank, state.faces) })));
  }
  if (v.out_pending) {
    const mine = v.to_move === state.seat;
    out.push(h("div", { class: "pending extra-turn", role: "status" }, t(mine ? "extra_turn_mine" : "extra_turn", { name: nameOf(v.out_pending), to: nameOf(v.to_move) })));
  }
  if (v.drawn_pending) {
    const mine = v.to_move === state.seat;
    out.push(h("div", { class: "pending drawn-note", role: "status" }, mine ? t("drawn_mine") : t("drawn_other", { name: nameOf(v.to_move) })));
  }
  return out;
}

/** The pass button's label at a variant table: "Let it end" (PV2), "Keep it" (PV7), else Pass. */
export function passLabel(v) {
  if (v.out_pending) return t("pv2_pass");
  if (v.drawn_pending) return t("pv7_keep");
  return t("pass");
}

// ---------------------------------------------------------------- playing a group (PV4)

let group = []; // cards picked for a group, in the order tapped: the last goes on top
let groupVersion = -1;

function groups() {
  return legalOf("play").filter((a) => Array.isArray(a.cards));
}

/** The group being picked (dropped when the view moved on or its cards are gone). */
export function currentGroup() {
  const v = state.view;
  if (!v || v.version !== groupVersion || v.to_move !== state.seat) group = [];
  const hand = new Set(v?.hand || []);
  group = group.filter((c) => hand.has(c));
  return group;
}

function setGroup(cards) {
  group = cards;
  groupVersion = state.view ? state.view.version : -1;
}

function sameGroup(a, cards) {
  return (
    a.cards.length === cards.length &&
    a.cards[0] === cards[0] &&
    a.cards[a.cards.length - 1] === cards[cards.length - 1] &&
    cards.every((c) => a.cards.includes(c))
  );
}

/** May ``card`` join the group being picked? */
export function canJoin(card) {
  const g = currentGroup();
  if (!g.length || g.includes(card) || rank(card) !== rank(g[0])) return false;
  return groups().some((a) => a.cards[0] === g[0] && g.every((c) => a.cards.includes(c)) && a.cards.includes(card));
}

/** Is the group picked a legal play as it stands (first and last card as tapped)? */
export function groupReady() {
  const g = currentGroup();
  if (g.length === 1) return legalOf("play").some((a) => a.card === g[0]);
  return g.length > 1 && groups().some((a) => sameGroup(a, g));
}

/** The place of ``card`` in the group being picked (1, 2, …) or 0. */
export function groupIndex(card) {
  return currentGroup().indexOf(card) + 1;
}

export function cancelGroup(redraw) {
  setGroup([]);
  redraw();
}

/**
 * A tap on ``card`` in the hand at a variant table: start or change a group (PV4), or
 * play it, asking for a Queen's suit (P8) or a Jack's rank (PV5) first. Returns true
 * when it handled the tap.
 */
export function tapCard(card, { act, redraw }) {
  const v = state.view;
  if (!variantsOf(v).length) return false;
  const g = currentGroup();
  if (g.length) {
    if (g.includes(card)) {
      setGroup(g.filter((c) => c !== card));
      redraw();
      return true;
    }
    if (canJoin(card)) {
      setGroup([...g, card]);
      redraw();
      return true;
    }
    setGroup([]);
  }
  if (groups().some((a) => a.cards[0] === card)) {
    setGroup([card]);
    redraw();
    return true;
  }
  playCards([card], act);
  return true;
}

/** Play the group picked ("Play n"). */
export function playGroup(act) {
  const g = currentGroup();
  if (!groupReady()) return;
  setGroup([]);
  playCards(g, act);
}

function playCards(cards, act) {
  const v = state.view;
  const last = cards[cards.length - 1];
  const empties = cards.length === (v.hand || []).length;
  const base = cards.length > 1 ? { a: "play", cards } : { a: "play", card: cards[0] };
  if (!empties && last.startsWith("Q")) {
    suitChooser(last, (suit) => {
      closeDialog();
      act({ ...base, suit });
    });
  } else if (!empties && last.startsWith("J") && variantsOf(v).includes("PV5")) {
    rankChooser(last, (r) => {
      closeDialog();
      act({ ...base, rank: r });
    });
  } else {
    act(base);
  }
}

/** PV5: the dialog where a Jack names a rank 7–A. */
export function rankChooser(card, onChoose) {
  const faces = state.faces;
  const grid = h(
    "div",
    { class: "rank-grid" },
    RANKS.map((r) =>
      h("button", { type: "button", class: "rank-choice", dataset: { rank: r }, "aria-label": rankName(r, faces), onclick: () => onChoose(r) }, h("b", {}, indexLabel(`${r}h`, faces)), h("span", {}, rankName(r, faces))),
    ),
  );
  openDialog("rank", t("choose_rank"), h("div", {}, h("div", { class: "dialog-card" }, cardFigure(card, faces, "mid")), grid), [
    { label: t("cancel"), onClick: () => closeDialog() },
  ]);
}

/** Ticker text of the variant events and plays (null: not a variant event). */
export function variantEventText(ev, { name, card }) {
  if (ev.a === "back") return t("ev_back", { name: name(ev.seat) });
  if (ev.a === "play" && Array.isArray(ev.cards)) {
    const cards = ev.cards.map(card).join(", ");
    if (ev.suit) return t("ev_play_suit", { name: name(ev.seat), card: cards, suit: suitName(ev.suit, state.faces) });
    if (ev.rank) return t("ev_play_rank", { name: name(ev.seat), card: cards, rank: rankName(ev.rank, state.faces, "acc") });
    return t("ev_play", { name: name(ev.seat), card: cards });
  }
  if (ev.a === "play" && ev.rank) return t("ev_play_rank", { name: name(ev.seat), card: card(ev.card), rank: rankName(ev.rank, state.faces, "acc") });
  return null;
}
