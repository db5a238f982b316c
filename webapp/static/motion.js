// The table moves (issue 15): a purely cosmetic layer over the table as drawn.
//
// The table on screen is always the newest version, drawn at once (render.js). What
// happened between the version shown before and the new one — the public events of
// the view's own record (``eventsSince`` in main.js), never anything a seat may not
// see — is then played over it as flights (FLIP with the Web Animations API): a ghost
// card in a fixed layer above the table goes from where the card was in the old DOM to
// where it is now (or to a seat), while the real card waits hidden under it. The next
// version cancels every flight still running (its ghosts go, its hidden cards show),
// so nothing is lost, late or out of order, and no ghost stays behind.
//
// A played card flies from its seat to the pile (Prší) or the table (Penki phase 2);
// drawn cards fly from the stock to the drawer's hand, face down to an opponent; in
// Penki phase 1 a drawn card from the stock to the drawn-card spot, a placed one from
// there to its pile, a moved one (a «ЗЕВОК!»'s penalty moves too) from pile to pile;
// a Бита sweeps the table's cards off; a taken card flies to the taker, a given one
// (face down) from the giver to the receiver. Off with ``prefers-reduced-motion: reduce``.

import { backFigure, cardFigure } from "./cards.js";

/** Milliseconds one flight takes; a sweep; the gap between the flights of one version. */
export const FLIGHT_MS = 240;
export const SWEEP_MS = 220;
const STAGGER_MS = 45;
const MAX_FLIGHTS = 8; // a version with more (a long penalty draw, a gap) shows the last ones
const ENTRANCES = ["arrive", "land", "new-card"]; // render.js's own CSS entrances, replaced by a flight
const LOG_KEPT = 400;
const SEAT_CARD_PX = 34; // a card arriving at (or leaving) a seat rather than a card's place

/**
 * What the browser tests and debugging read (``window.__karty.motion``): flights started
 * per kind, flights cut short by a newer version, and per version drawn the events that
 * were played (``log``: ``{version, events}``; the versions in the order they were drawn).
 */
export const stats = { flights: 0, kinds: {}, interrupted: 0, finished: 0, log: [], scale: 1 };
// ``scale`` stretches every flight's time (1: as above): the browser tests' clock, so that
// "the next version comes while this one is in the air" does not depend on the machine's speed.
const ms = (t) => t * (Number(stats.scale) > 0 ? Number(stats.scale) : 1);

let layer = null;
let playing = -1; // the version whose events are in flight
let pending = 0; // the animation frame at which the flights of ``playing`` start
const running = new Set(); // {anim, ghost, target, find}

export function reducedMotion() {
  return !!window.matchMedia?.("(prefers-reduced-motion: reduce)").matches;
}

function flightLayer() {
  if (!layer || !layer.isConnected) {
    layer = document.createElement("div");
    layer.className = "flights";
    layer.setAttribute("aria-hidden", "true");
    document.body.appendChild(layer);
  }
  return layer;
}

/** How many flights are in the air. */
export function inFlight() {
  return running.size;
}

/** Cancel every flight still running: its ghost goes and the card under it shows. */
export function interrupt() {
  cancelAnimationFrame(pending);
  pending = 0;
  for (const f of [...running]) {
    stats.interrupted += 1;
    end_(f, true); // at once: the cancel event comes later
    f.anim.cancel();
  }
}

const box = (el) => {
  if (!el) return null;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 ? { x: r.left, y: r.top, w: r.width, h: r.height, card: el.classList.contains("card") } : null;
};
const center = (b) => ({ x: b.x + b.w / 2, y: b.y + b.h / 2 });

/**
 * Where things were in the DOM about to be replaced: the viewer's hand cards, the seats,
 * Penki's piles and drawn card, the stock, and the table's cards (with copies of them for
 * a Бита's sweep). Read before the new version is drawn.
 */
export function snapshot(root) {
  const hand = new Map();
  for (const el of root.querySelectorAll(".me .hand .card[data-card]")) hand.set(el.dataset.card, box(el));
  const seats = new Map();
  for (const el of root.querySelectorAll(".opponents [data-seat]:is(.opp, .ptile)")) seats.set(el.dataset.seat, box(el.querySelector(".fan") || el));
  const piles = new Map();
  for (const el of root.querySelectorAll(".pile-btn[data-seat]")) piles.set(el.dataset.seat, box(el.querySelector(".card") || el));
  const table = [...root.querySelectorAll(".ptable .tcard .card")].map((el) => ({ at: box(el), node: el.cloneNode(true) }));
  return {
    hand,
    seats,
    piles,
    table,
    ptable: box(root.querySelector(".ptable")),
    me: box(root.querySelector(".me .hand") || root.querySelector(".me")),
    drawn: box(root.querySelector(".drawn-btn .card")),
    stock: box(root.querySelector(".pile.stock .card:not(.under)") || root.querySelector(".pile.stock")),
  };
}

/**
 * Play ``events`` (what happened between the version drawn before and ``view``, the one
 * just drawn into ``root``) as flights from ``before`` (a :func:`snapshot` of the old
 * DOM). ``seat``: the viewer's seat or null; ``faces``: the deck's faces for face-up cards.
 */
export function play(root, events, before, { view, seat, faces }) {
  stats.log.push({ version: view.version, events });
  if (stats.log.length > LOG_KEPT) stats.log.splice(0, stats.log.length - LOG_KEPT);
  playing = view.version;
  cancelAnimationFrame(pending);
  pending = 0;
  if (!before || !events.length || reducedMotion() || typeof Element.prototype.animate !== "function") return;
  // The flights start at the next frame, before it is drawn (issue 25): reading where the new
  // cards are here would lay the whole new table out inside the task that built it (one long
  // task); at the frame the browser lays it out anyway, once. interrupt() cancels a pending start.
  pending = requestAnimationFrame(() => {
    pending = 0;
    if (playing === view.version && root.isConnected) start(root, events, before, { view, seat, faces });
  });
}

/** :func:`play`'s flights, at the frame after the version was drawn. */
function start(root, events, before, { view, seat, faces }) {
  const q = (sel) => root.querySelector(sel);
  const esc = (s) => (window.CSS?.escape ? CSS.escape(String(s)) : String(s));
  const mine = (s) => seat !== null && seat !== undefined && s === seat;
  // A seat's spot in the new DOM: the viewer's hand, else the opponent's fan or tile.
  const seatNow = (s) => {
    if (mine(s)) return box(q(".me .hand") || q(".me"));
    const el = q(`.opponents [data-seat="${esc(s)}"]:is(.opp, .ptile)`);
    return box(el?.querySelector(".fan") || el);
  };
  const seatThen = (s) => (mine(s) ? before.me : before.seats.get(s)) || null;
  const pileCard = (s) => `.pile-btn[data-seat="${esc(s)}"] .card`;
  const handCard = (c) => `.me .hand .card[data-card="${esc(c)}"]`;
  // The viewer's cards that are new in this version (drawn, taken, given to them).
  const oldHand = before.hand;
  const fresh = [...root.querySelectorAll(".me .hand .card[data-card]")].map((el) => el.dataset.card).filter((c) => !oldHand.has(c));
  // Where a card closing a trick lands: on the table's top card, beside a lone one.
  const tableTop = () => {
    const cards = before.table.filter((c) => c.at);
    if (cards.length === 1) return { ...cards[0].at, x: cards[0].at.x + cards[0].at.w * 0.9 };
    return cards.length ? cards[cards.length - 1].at : before.ptable;
  };

  const flights = [];
  const add = (f) => flights.push(f);
  const bitaAt = events.findIndex((e) => e.a === "bita");
  events.forEach((ev, i) => {
    const face = (c) => (c ? cardFigure(c, faces, "flight") : backFigure("flight"));
    switch (ev.a) {
      case "play": {
        const cards = ev.cards || [ev.card];
        const from = (c) => (mine(ev.seat) ? before.hand.get(c) : null) || seatThen(ev.seat);
        const swept = bitaAt > i; // Penki: this card closed the trick, the table is empty now
        for (const c of cards) {
          const target = view.game === "prsi" ? ".pile.discard .card.top" : swept ? null : `.ptable .card[data-card="${esc(c)}"]`;
          add({ kind: "play", node: face(c), from: from(c), to: target ? box(q(target)) : tableTop(), target, keep: swept });
        }
        break;
      }
      case "draw": {
        if (view.game === "penki") {
          add({ kind: "draw", node: face(ev.card), from: before.stock, to: box(q(".drawn-btn .card")), target: ".drawn-btn .card" });
        } else if (mine(ev.seat)) {
          for (const c of fresh.splice(0, ev.n || 1)) add({ kind: "draw", node: face(c), from: before.stock, to: box(q(handCard(c))), target: handCard(c) });
        } else {
          for (let k = 0; k < Math.min(ev.n || 1, 4); k++) add({ kind: "draw", node: face(null), from: before.stock, to: seatNow(ev.seat) });
        }
        break;
      }
      case "place":
        add({ kind: "place", node: face(ev.card), from: before.drawn || before.stock, to: box(q(pileCard(ev.to))), target: pileCard(ev.to) });
        break;
      case "move":
        add({ kind: "move", node: face(ev.card), from: before.piles.get(ev.seat), to: box(q(pileCard(ev.to))), target: pileCard(ev.to) });
        break;
      case "penalty_move": {
        // The blunderer's pile shows the last card moved onto it: hidden until that one lands.
        const last = !events.slice(i + 1).some((e) => e.a === "penalty_move");
        add({ kind: "penalty_move", node: face(ev.card), from: before.piles.get(ev.from), to: box(q(pileCard(ev.to))), target: last ? pileCard(ev.to) : null });
        break;
      }
      case "take": {
        const target = mine(ev.seat) ? handCard(ev.card) : null;
        const from = before.table.length ? before.table[0].at : before.ptable;
        add({ kind: "take", node: face(ev.card), from, to: target ? box(q(target)) : seatNow(ev.seat), target });
        break;
      }
      case "give": {
        const c = mine(ev.to) ? fresh.shift() : null; // the card is the receiver's to see, and the giver's
        const target = c ? handCard(c) : null;
        const from = mine(ev.seat) ? before.me : seatThen(ev.seat);
        add({ kind: "give", node: face(null), from, to: target ? box(q(target)) : seatNow(ev.to), target });
        break;
      }
      case "bita":
        add({ kind: "bita" });
        break;
      default:
        break;
    }
  });
  let delay = 0;
  let landed = null; // when the card that closed a trick lands (a Бита sweeps after it)
  for (const f of flights.slice(-MAX_FLIGHTS)) {
    if (f.kind === "bita") {
      sweep(before, landed ?? delay);
      delay = (landed ?? delay) + SWEEP_MS;
      continue;
    }
    if (fly(root, f, delay)) {
      if (f.keep) landed = delay + FLIGHT_MS;
      delay += STAGGER_MS;
    }
  }
}

function count(kind) {
  stats.flights += 1;
  stats.kinds[kind] = (stats.kinds[kind] || 0) + 1;
}

/** One ghost from ``f.from`` to ``f.to`` (boxes), starting after ``delay`` ms; the real card ``f.target`` waits
 * hidden. ``f.keep``: the card closed a trick and goes on off the felt with the Бита's sweep. */
function fly(root, f, delay) {
  const { from, to } = f;
  if (!from || !to) return null;
  // The ghost ends the size of the card it becomes, or of a fan's card at a seat.
  const width = to.card ? to.w : SEAT_CARD_PX;
  const height = width * 1.5;
  const end = center(to);
  const start = center(from);
  const scale = from.card ? from.w / width : 1;
  const ghost = f.node;
  ghost.style.width = `${width}px`;
  ghost.style.left = `${end.x - width / 2}px`;
  ghost.style.top = `${end.y - height / 2}px`;
  flightLayer().appendChild(ghost);
  const frames = [
    { transform: `translate(${start.x - end.x}px, ${start.y - end.y}px) scale(${scale})`, opacity: 0.85 },
    { transform: "translate(0, 0) scale(1)", opacity: 1 },
  ];
  let duration = ms(FLIGHT_MS);
  if (f.keep) {
    duration += ms(SWEEP_MS);
    frames[1].offset = ms(FLIGHT_MS) / duration;
    frames.push({ ...sweptTo(end.x - width / 2), offset: 1 });
  }
  const anim = ghost.animate(frames, { duration, delay: ms(delay), easing: "cubic-bezier(0.2, 0.7, 0.3, 1)", fill: "backwards" });
  anim.id = `karty-flight-${f.kind}`;
  track({ anim, ghost, find: f.target ? () => root.querySelector(f.target) : null }, f.kind);
  return true;
}

function track(flight, kind) {
  flight.ghost.dataset.version = String(playing); // a ghost belongs to the version drawn
  hideTarget(flight);
  count(kind);
  flight.anim.onfinish = () => end_(flight, false);
  flight.anim.oncancel = () => end_(flight, true);
  running.add(flight);
}

function end_(flight, cancelled) {
  if (!running.delete(flight)) return;
  flight.ghost.remove();
  if (flight.hidden) flight.hidden.style.visibility = "";
  flight.hidden = null;
  if (!cancelled) stats.finished += 1;
}

function hideTarget(flight) {
  const el = flight.find?.();
  if (!el) return;
  el.classList.remove(...ENTRANCES);
  el.style.visibility = "hidden";
  flight.hidden = el;
}

/** After the same version is drawn again (a selection, a resync): the new copies of the cards in flight wait hidden too. */
export function rehide() {
  for (const f of running) {
    if (f.hidden?.isConnected) continue;
    hideTarget(f);
  }
}

/** Where a swept card ends: off the felt to the right, a little up, turned, gone. */
function sweptTo(x) {
  return { transform: `translate(${window.innerWidth - x + 20}px, -24px) rotate(18deg)`, opacity: 0 };
}

/** A Бита: the table's cards as they were swept off the felt, starting after ``delay`` ms. */
function sweep(before, delay) {
  for (const { at, node } of before.table) {
    if (!at) continue;
    node.classList.remove(...ENTRANCES);
    node.classList.add("flight");
    node.style.width = `${at.w}px`;
    node.style.left = `${at.x}px`;
    node.style.top = `${at.y}px`;
    flightLayer().appendChild(node);
    const anim = node.animate([{ transform: "translate(0, 0) rotate(0deg)", opacity: 1 }, sweptTo(at.x)], {
      duration: ms(SWEEP_MS),
      delay: ms(delay),
      easing: "cubic-bezier(0.5, 0, 0.75, 0)",
      fill: "forwards",
    });
    anim.id = "karty-flight-bita";
    track({ anim, ghost: node, find: null }, "bita");
  }
}
