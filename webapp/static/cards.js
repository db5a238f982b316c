// Playing cards drawn as inline SVG by our own code: the Czech German-suited
// pack (červené, zelené, kule, žaludy) and the French pack (♥ ♦ ♣ ♠).
// Suit symbols are defined once as <symbol>s and reused with <use>.

import { cardName, indexLabel, rankOf, suitOf } from "./i18n.js";

const NS = "http://www.w3.org/2000/svg";
const W = 100;
const H = 150;

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}

// Symbols in a 100×100 box.
const SUIT_DEFS = {
  // German pack
  "g-h": {
    title: "červené",
    parts: [
      ["path", { d: "M50 90 C22 68 5 52 5 31 C5 15 17 5 30 5 C40 5 46 11 50 19 C54 11 60 5 70 5 C83 5 95 15 95 31 C95 52 78 68 50 90Z", fill: "#d6262d", stroke: "#8c1016", "stroke-width": 3 }],
      ["path", { d: "M24 20 C30 14 38 15 41 22", fill: "none", stroke: "#ff8c8c", "stroke-width": 4, "stroke-linecap": "round" }],
    ],
  },
  "g-s": {
    title: "zelené",
    parts: [
      ["path", { d: "M50 4 C66 20 90 34 90 58 C90 76 72 84 56 78 L60 96 L40 96 L44 78 C28 84 10 76 10 58 C10 34 34 20 50 4Z", fill: "#2f9a3e", stroke: "#175d22", "stroke-width": 3, "stroke-linejoin": "round" }],
      ["path", { d: "M50 16 L50 80 M50 40 L34 30 M50 40 L66 30 M50 56 L30 46 M50 56 L70 46", fill: "none", stroke: "#175d22", "stroke-width": 3, "stroke-linecap": "round" }],
    ],
  },
  "g-d": {
    title: "kule",
    parts: [
      ["path", { d: "M50 6 C72 6 82 26 82 48 L90 72 L10 72 L18 48 C18 26 28 6 50 6Z", fill: "#e8a317", stroke: "#8a5a06", "stroke-width": 3, "stroke-linejoin": "round" }],
      ["path", { d: "M16 56 L84 56", stroke: "#b3261e", "stroke-width": 7 }],
      ["circle", { cx: 50, cy: 84, r: 10, fill: "#b3261e", stroke: "#6e130e", "stroke-width": 3 }],
      ["path", { d: "M34 22 C38 16 44 14 48 14", fill: "none", stroke: "#fff3c4", "stroke-width": 4, "stroke-linecap": "round" }],
    ],
  },
  "g-c": {
    title: "žaludy",
    parts: [
      ["path", { d: "M47 30 L46 8 L56 6 L55 30Z", fill: "#6b4a1d" }],
      ["path", { d: "M26 56 C24 80 34 96 50 96 C66 96 76 80 74 56Z", fill: "#c98a34", stroke: "#6b4a1d", "stroke-width": 3 }],
      ["path", { d: "M14 60 C14 38 30 26 50 26 C70 26 86 38 86 60Z", fill: "#7a5420", stroke: "#4a300d", "stroke-width": 3, "stroke-linejoin": "round" }],
      ["path", { d: "M26 44 L40 58 M40 32 L58 56 M58 30 L74 50 M30 58 L52 32 M48 58 L70 34", stroke: "#4a300d", "stroke-width": 2.5 }],
      ["path", { d: "M38 68 C38 78 42 86 48 88", fill: "none", stroke: "#f0c27b", "stroke-width": 4, "stroke-linecap": "round" }],
    ],
  },
  // French pack
  "f-h": {
    title: "♥",
    parts: [["path", { d: "M50 90 C22 68 5 52 5 31 C5 15 17 5 30 5 C40 5 46 11 50 19 C54 11 60 5 70 5 C83 5 95 15 95 31 C95 52 78 68 50 90Z", fill: "#d1232a" }]],
  },
  "f-d": {
    title: "♦",
    parts: [["path", { d: "M50 3 C60 20 74 36 90 50 C74 64 60 80 50 97 C40 80 26 64 10 50 C26 36 40 20 50 3Z", fill: "#d1232a" }]],
  },
  "f-c": {
    title: "♣",
    parts: [
      ["circle", { cx: 50, cy: 27, r: 21, fill: "#1b1b1f" }],
      ["circle", { cx: 27, cy: 58, r: 21, fill: "#1b1b1f" }],
      ["circle", { cx: 73, cy: 58, r: 21, fill: "#1b1b1f" }],
      ["path", { d: "M46 50 L54 50 C55 72 60 86 70 96 L30 96 C40 86 45 72 46 50Z", fill: "#1b1b1f" }],
    ],
  },
  "f-s": {
    title: "♠",
    parts: [
      ["path", { d: "M50 4 C62 24 92 40 92 62 C92 76 82 84 70 84 C62 84 56 80 53 74 C55 84 60 91 68 96 L32 96 C40 91 45 84 47 74 C44 80 38 84 30 84 C18 84 8 76 8 62 C8 40 38 24 50 4Z", fill: "#1b1b1f" }],
    ],
  },
};

let defsReady = false;

/** Put the suit symbols and the card back pattern into the page once. */
export function ensureDefs() {
  if (defsReady && document.getElementById("karty-defs")) return;
  const svg = el("svg", { id: "karty-defs", width: 0, height: 0, "aria-hidden": "true", focusable: "false" });
  svg.style.position = "absolute";
  svg.style.width = "0";
  svg.style.height = "0";
  const defs = el("defs", {}, svg);
  for (const [id, def] of Object.entries(SUIT_DEFS)) {
    const sym = el("symbol", { id: `suit-${id}`, viewBox: "0 0 100 100" }, defs);
    for (const [tag, attrs] of def.parts) el(tag, attrs, sym);
  }
  const pat = el("pattern", { id: "back-lattice", width: 12, height: 12, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
  el("rect", { width: 12, height: 12, fill: "#8e1b2c" }, pat);
  el("path", { d: "M0 6 H12 M6 0 V12", stroke: "#c9a45c", "stroke-width": 1.4, opacity: 0.55 }, pat);
  const grad = el("linearGradient", { id: "card-face", x1: 0, y1: 0, x2: 0, y2: 1 }, defs);
  el("stop", { offset: "0", "stop-color": "#fffdf7" }, grad);
  el("stop", { offset: "1", "stop-color": "#f1ebdc" }, grad);
  document.body.prepend(svg);
  defsReady = true;
}

// A card's picture is built once per card and face set, as markup the browser parses in one
// go (no DOM call per shape), and every card on screen is a clone of it (issue 25: the
// table's first drawing was one long task, much of it building these pictures node by node).
// The suit signs are drawn inline, not as <use>s of the symbols: no shadow tree per sign.
const attrs = (a) => Object.entries(a).map(([k, v]) => ` ${k}="${v}"`).join("");
const shape = (tag, a) => `<${tag}${attrs(a)}/>`;

function suitMarkup(faces, suit, x, y, size, flip = false) {
  const def = SUIT_DEFS[`${faces === "german" ? "g" : "f"}-${suit}`];
  const place = `translate(${x - size / 2} ${y - size / 2}) scale(${size / 100})`;
  const transform = flip ? `rotate(180 ${x} ${y}) ${place}` : place;
  return `<g transform="${transform}">${def.parts.map(([tag, a]) => shape(tag, a)).join("")}</g>`;
}

function parsed(markup) {
  const tpl = document.createElement("template");
  tpl.innerHTML = markup;
  return tpl.content.firstElementChild;
}

const svgOpen = (cls) => `<svg viewBox="0 0 ${W} ${H}" class="${cls}" aria-hidden="true" focusable="false">`;

// Pip positions (x, y, flipped) on the 100×150 face for number cards.
const L = 30;
const C = 50;
const R = 70;
const PIPS = {
  6: [[L, 36], [R, 36], [L, 75], [R, 75], [L, 114, 1], [R, 114, 1]],
  7: [[L, 36], [R, 36], [C, 56], [L, 75], [R, 75], [L, 114, 1], [R, 114, 1]],
  8: [[L, 36], [R, 36], [C, 56], [L, 75], [R, 75], [C, 94, 1], [L, 114, 1], [R, 114, 1]],
  9: [[L, 34], [R, 34], [L, 61], [R, 61], [C, 75], [L, 89, 1], [R, 89, 1], [L, 116, 1], [R, 116, 1]],
  10: [[L, 34], [R, 34], [C, 50], [L, 61], [R, 61], [L, 89, 1], [R, 89, 1], [C, 100, 1], [L, 116, 1], [R, 116, 1]],
};

const INK = { h: "#c8202a", d: "#c8202a", c: "#1b1b1f", s: "#1b1b1f" };
const GERMAN_INK = { h: "#c8202a", d: "#a86a00", c: "#6b4a1d", s: "#1f7a2e" };

// The corner index is drawn, like the suit signs, as a <use> of a glyph kept once in the
// page's defs: it is part of the card's picture, and the card's name is its button's label.
// As text inside the button it disagreed with that name ("U" beside "unter of leaves": axe's
// label-content-name-mismatch, WCAG 2.5.3), though a reader never heard it (aria-hidden).
function indexGlyph(label, y) {
  ensureDefs();
  const id = `idx-${y}-${Array.from(label, (c) => c.codePointAt(0).toString(16)).join("-")}`;
  if (!document.getElementById(id)) {
    const wide = label.length > 1;
    const text = el("text", { id, x: 13, y, "text-anchor": "middle", "font-size": wide ? 18 : 22, "font-weight": 700, "font-family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif" }, document.querySelector("#karty-defs defs"));
    text.textContent = label;
    if (wide) {
      text.setAttribute("textLength", "21");
      text.setAttribute("lengthAdjust", "spacingAndGlyphs");
    }
  }
  return `#${id}`;
}

function corner(label, suit, faces, color, pipAbove = false) {
  // A svršek (Ober) carries its suit sign above the index, as on its figure; a spodek below.
  const href = indexGlyph(label, pipAbove ? 42 : 23);
  const one = `<use href="${href}" fill="${color}"/>${suitMarkup(faces, suit, 13, pipAbove ? 15 : 36, 15)}`;
  return `<g>${one}</g><g transform="rotate(180 ${W / 2} ${H / 2})">${one}</g>`;
}

// A simple court figure: a crowned king, an Ober (svršek) with a plumed hat and
// the suit above, an Unter (spodek) with a cap and the suit below.
function courtFigure(rank, suit, faces, ink) {
  const colors = { h: "#c8202a", d: "#d49a14", c: "#7a5420", s: "#2f8a3c" };
  const main = faces === "german" ? colors[suit] : ink === "#1b1b1f" ? "#2b4b8c" : "#c8202a";
  const g = [
    shape("rect", { x: 22, y: 30, width: 56, height: 90, rx: 6, fill: "#f7efd9", stroke: "#d8c9a3", "stroke-width": 1.5 }),
    // body
    shape("path", { d: "M30 118 C30 92 38 80 50 80 C62 80 70 92 70 118Z", fill: main, stroke: "#3a2a12", "stroke-width": 1.5 }),
    shape("path", { d: "M44 82 L50 96 L56 82", fill: "none", stroke: "#f3dc9a", "stroke-width": 3 }),
    // head
    shape("circle", { cx: 50, cy: 68, r: 11, fill: "#f6d3b0", stroke: "#3a2a12", "stroke-width": 1.5 }),
    shape("circle", { cx: 46, cy: 67, r: 1.3, fill: "#3a2a12" }),
    shape("circle", { cx: 54, cy: 67, r: 1.3, fill: "#3a2a12" }),
  ];
  if (rank === "K") {
    g.push(shape("path", { d: "M39 58 L39 46 L44 52 L50 43 L56 52 L61 46 L61 58Z", fill: "#e8b923", stroke: "#8a5a06", "stroke-width": 1.5, "stroke-linejoin": "round" }));
    g.push(shape("path", { d: "M42 74 C45 82 55 82 58 74", fill: "#a0774a" }));
  } else if (rank === "Q") {
    g.push(shape("path", { d: "M36 60 C38 50 62 50 64 60Z", fill: main, stroke: "#3a2a12", "stroke-width": 1.5 }));
    g.push(shape("path", { d: "M60 54 C70 44 72 36 66 32", fill: "none", stroke: "#f3dc9a", "stroke-width": 3, "stroke-linecap": "round" }));
  } else {
    g.push(shape("path", { d: "M39 62 C39 53 61 53 61 62 L66 62 L66 64 L39 64Z", fill: "#3a2a12" }));
  }
  if (faces === "german") {
    // Ober carries the suit up high, Unter low: how Czech players tell them apart.
    if (rank === "Q") g.push(suitMarkup(faces, suit, 50, 40, 18));
    else if (rank === "J") g.push(suitMarkup(faces, suit, 50, 108, 18));
    else g.push(suitMarkup(faces, suit, 66, 102, 14));
  } else {
    g.push(suitMarkup(faces, suit, 50, 104, 16));
  }
  return `<g>${g.join("")}</g>`;
}

function cardMarkup(card, faces) {
  const rank = rankOf(card);
  const suit = suitOf(card);
  const ink = faces === "german" ? GERMAN_INK[suit] : INK[suit];
  const parts = [
    svgOpen(`card-svg suit-${suit}`),
    shape("rect", { x: 1.5, y: 1.5, width: W - 3, height: H - 3, rx: 9, fill: "url(#card-face)", stroke: "#b9ad90", "stroke-width": 2 }),
    corner(indexLabel(card, faces), suit, faces, ink, faces === "german" && rank === "Q"),
  ];
  if (PIPS[rank]) {
    const size = faces === "german" ? 22 : 20;
    for (const [x, y, flip] of PIPS[rank]) parts.push(suitMarkup(faces, suit, x, y, size, !!flip));
  } else if (rank === "A") {
    if (faces === "german") {
      parts.push(shape("ellipse", { cx: 50, cy: 75, rx: 34, ry: 40, fill: "none", stroke: ink, "stroke-width": 1.5, opacity: 0.5 }));
      parts.push(suitMarkup(faces, suit, 50, 75, 52));
    } else {
      parts.push(suitMarkup(faces, suit, 50, 75, 44));
    }
  } else {
    parts.push(courtFigure(rank, suit, faces, ink));
  }
  parts.push("</svg>");
  return parts.join("");
}

const pictures = new Map(); // "faces/card" -> {label, picture}: the <svg> every copy is cloned from

/**
 * An <svg> of one card. faces: "german" (Czech pack) or "french".
 * The element is decorative (aria-hidden); the button around it carries the label.
 */
export function cardSvg(card, faces = "french") {
  ensureDefs();
  const key = `${faces}/${card}`;
  // the language names the index ("U", "J", "В"): a picture drawn in another is drawn again
  const label = indexLabel(card, faces);
  let found = pictures.get(key);
  if (!found || found.label !== label) {
    found = { label, picture: parsed(cardMarkup(card, faces)) };
    pictures.set(key, found);
  } else {
    indexGlyph(label, faces === "german" && rankOf(card) === "Q" ? 42 : 23); // the defs may be new
  }
  return found.picture.cloneNode(true);
}

let backPicture = null;

/** The back of a card. */
export function backSvg() {
  ensureDefs();
  backPicture ||= parsed(
    svgOpen("card-svg back") +
      shape("rect", { x: 1.5, y: 1.5, width: W - 3, height: H - 3, rx: 9, fill: "#fdf8ec", stroke: "#b9ad90", "stroke-width": 2 }) +
      shape("rect", { x: 8, y: 8, width: W - 16, height: H - 16, rx: 5, fill: "url(#back-lattice)" }) +
      shape("rect", { x: 8, y: 8, width: W - 16, height: H - 16, rx: 5, fill: "none", stroke: "#c9a45c", "stroke-width": 2 }) +
      shape("circle", { cx: 50, cy: 75, r: 16, fill: "#8e1b2c", stroke: "#e5c47c", "stroke-width": 2.5 }) +
      shape("path", { d: "M50 63 L60 75 L50 87 L40 75Z", fill: "#e5c47c" }) +
      "</svg>",
  );
  return backPicture.cloneNode(true);
}

/** A standalone suit symbol (for the suit in play, the suit chooser, trump). */
export function suitSvg(suit, faces = "french", size = 40) {
  ensureDefs();
  const svg = el("svg", { viewBox: "0 0 100 100", width: size, height: size, class: "suit-svg", "aria-hidden": "true", focusable: "false" });
  el("use", { href: `#suit-${faces === "german" ? "g" : "f"}-${suit}`, x: 0, y: 0, width: 100, height: 100 }, svg);
  return svg;
}

/** A face-up card as a <div> (not interactive) with an accessible name. */
export function cardFigure(card, faces, extraClass = "") {
  const div = document.createElement("div");
  div.className = `card ${extraClass}`.trim();
  div.setAttribute("role", "img");
  div.setAttribute("aria-label", cardName(card, faces));
  div.dataset.card = card;
  div.appendChild(cardSvg(card, faces));
  return div;
}

/** A face-up card as a <button>. */
export function cardButton(card, faces, extraClass = "") {
  const b = document.createElement("button");
  b.type = "button";
  b.className = `card ${extraClass}`.trim();
  b.setAttribute("aria-label", cardName(card, faces));
  b.dataset.card = card;
  b.appendChild(cardSvg(card, faces));
  return b;
}

export function backFigure(extraClass = "") {
  const div = document.createElement("div");
  div.className = `card back ${extraClass}`.trim();
  div.setAttribute("aria-hidden", "true");
  div.appendChild(backSvg());
  return div;
}
