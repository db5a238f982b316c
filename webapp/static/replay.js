// Replays (issue 15): a table's game again, frame by frame, from GET /api/tables/{id}/replay.
// Step back and forth, play/pause, jump to a round (Prší) or a phase (Penki), or drag the
// slider. Each frame is what the viewer saw then (the server sends nothing else); once the
// game is over the server adds every hand, and they are shown face up.

import { cardFigure } from "./cards.js";
import { rankName, suitName, t } from "./i18n.js";
import { eventText, h, icon } from "./render.js";
import { state } from "./state.js";

const STEP_MS = 900;
const SVG_NS = "http://www.w3.org/2000/svg";
const PATHS = {
  prev: "M6 5h2v14H6zM20 5v14L9 12z",
  next: "M16 5h2v14h-2zM4 5v14l11-7z",
  play: "M7 4v16l13-8z",
  pause: "M6 4h4v16H6zM14 4h4v16h-4z",
};

function glyph(name) {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "22");
  svg.setAttribute("height", "22");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(SVG_NS, "path");
  path.setAttribute("d", PATHS[name]);
  path.setAttribute("fill", "currentColor");
  svg.appendChild(path);
  return svg;
}

/** Render the replay ``data`` into ``root``; ``onBack`` leaves it. Returns a stop function. */
export function renderReplay(root, data, { onBack }) {
  const frames = data.frames || [];
  state.seats = data.players.map((p) => ({ seat: p, name: (data.names || {})[p] || p, computer: p.startsWith("c") }));
  let k = 0;
  let timer = null;
  const faces = () => (data.game === "prsi" ? state.faces : "french");
  const name = (p) => (data.names || {})[p] || p;

  const play = () => {
    if (timer) return;
    if (k >= frames.length - 1) k = 0;
    timer = setInterval(() => {
      if (k >= frames.length - 1) return pause();
      k += 1;
      draw();
    }, STEP_MS);
    draw();
  };
  const pause = () => {
    clearInterval(timer);
    timer = null;
    draw();
  };
  const go = (i) => {
    k = Math.max(0, Math.min(frames.length - 1, i));
    draw();
  };
  const onKey = (e) => {
    if (!root.querySelector(".replay-screen")) return document.removeEventListener("keydown", onKey);
    if (e.key === "ArrowRight") go(k + 1);
    else if (e.key === "ArrowLeft") go(k - 1);
    else if (e.key === " ") {
      e.preventDefault();
      timer ? pause() : play();
    } else return;
  };
  document.addEventListener("keydown", onKey);

  function seatBox(p, f) {
    const v = f.view;
    const info = v.players.find((x) => x.id === p) || {};
    const revealed = f.hands?.hands?.[p];
    const own = v.seat === p ? v.hand : null;
    const cards = revealed || own;
    const stumps = f.hands?.stumps?.[p];
    const turn = v.to_move === p && !v.over;
    return h(
      "div",
      { class: `replay-seat${turn ? " to-move" : ""}${f.seat === p ? " acted" : ""}`, dataset: { seat: p }, role: "group", "aria-label": `${name(p)}: ${t("cards_n", { n: info.cards ?? (cards || []).length })}` },
      h(
        "div",
        { class: "replay-seat-head" },
        h("strong", {}, name(p)),
        h("span", { class: "badge count" }, String(info.cards ?? (cards || []).length)),
        v.points && v.points[p] !== undefined ? h("span", { class: "muted" }, t("pts", { n: v.points[p] })) : null,
        info.pile_top ? h("span", { class: "replay-pile" }, cardFigure(info.pile_top, faces(), "mini")) : null,
      ),
      cards ? h("div", { class: "replay-cards" }, cards.map((c) => cardFigure(c, faces(), "mini"))) : null,
      stumps && stumps.length ? h("div", { class: "replay-cards stumps", "aria-label": t("replay_stumps") }, stumps.map((c) => cardFigure(c, faces(), "mini"))) : null,
    );
  }

  function centre(f) {
    const v = f.view;
    if (data.game === "prsi") {
      return h(
        "div",
        { class: "replay-centre" },
        v.top ? cardFigure(v.top, faces(), "mid") : null,
        h("div", { class: "replay-side" }, h("span", {}, `${t("suit_in_play")}: ${suitName(v.suit, faces())}`),
          v.named_rank ? h("span", {}, t("named_rank", { rank: rankName(v.named_rank, faces()) })) : null,
          v.pending_draw ? h("span", { class: "pending draw" }, t("pending_draw", { n: v.pending_draw })) : null,
          v.pending_skip ? h("span", { class: "pending skip" }, t("pending_skip")) : null,
          h("span", { class: "muted" }, `${t("stock")}: ${v.stock}`)),
      );
    }
    const table = v.table || [];
    return h(
      "div",
      { class: "replay-centre" },
      table.length ? h("div", { class: "replay-cards table" }, table.map((c) => cardFigure(c, faces(), "mid"))) : null,
      v.drawn ? cardFigure(v.drawn, faces(), "mid") : null,
      h("div", { class: "replay-side" }, h("span", {}, t("replay_phase", { n: v.phase })), h("span", { class: "muted" }, `${t("stock")}: ${v.stock}`)),
    );
  }

  function draw() {
    const f = frames[k];
    if (!f) return;
    const v = f.view;
    const here = data.game === "prsi" ? v.round : v.phase;
    const what = k === 0 ? t("replay_start") : (f.events || []).map((e) => eventText(e, data.game)).filter(Boolean).join(" · ");
    const jumps = h(
      "div",
      { class: "replay-rounds", role: "group", "aria-label": data.game === "prsi" ? t("replay_rounds") : t("replay_phases") },
      (data.rounds || []).map((r) =>
        h("button", { type: "button", class: `chip${r.round === here ? " on" : ""}`, "aria-pressed": String(r.round === here), onclick: () => go(r.frame) },
          data.game === "prsi" ? t("round", { n: r.round, of: v.rounds || 5 }) : t("replay_phase", { n: r.round })),
      ),
    );
    const slider = h("input", {
      type: "range", min: 0, max: Math.max(0, frames.length - 1), value: k, class: "replay-slider",
      "aria-label": t("replay_position"), "aria-valuetext": t("replay_move", { n: k, of: frames.length - 1 }),
      oninput: (e) => go(Number(e.target.value)),
    });
    const controls = h(
      "div",
      { class: "replay-controls" },
      h("button", { type: "button", class: "btn replay-prev", "aria-label": t("replay_prev"), disabled: k === 0, onclick: () => go(k - 1) }, glyph("prev")),
      h("button", { type: "button", class: "btn primary replay-play", "aria-label": timer ? t("replay_pause") : t("replay_play"), onclick: () => (timer ? pause() : play()) }, glyph(timer ? "pause" : "play")),
      h("button", { type: "button", class: "btn replay-next", "aria-label": t("replay_next"), disabled: k >= frames.length - 1, onclick: () => go(k + 1) }, glyph("next")),
    );
    root.replaceChildren(
      h(
        "div",
        { class: `screen replay-screen ${data.game}` },
        h(
          "header",
          { class: "topbar" },
          h("button", { type: "button", class: "icon-btn back-btn", "aria-label": t("back"), onclick: () => (pause(), onBack()) }, icon("back")),
          h("div", { class: "title" }, h("strong", {}, `${t("replay")} · ${t(data.game)}`), h("span", { class: "sub replay-move" }, t("replay_move", { n: k, of: frames.length - 1 }))),
        ),
        data.over ? h("p", { class: "replay-note" }, t("replay_all_hands")) : h("p", { class: "replay-note" }, t("replay_own_view")),
        jumps,
        h("section", { class: "replay-seats" }, data.players.map((p) => seatBox(p, f))),
        centre(f),
        h("p", { class: "replay-what", role: "status", "aria-live": "polite" }, what || "\u00a0"),
        slider,
        controls,
      ),
    );
  }

  draw();
  return pause;
}
