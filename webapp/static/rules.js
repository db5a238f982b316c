// The rules screen (issue 17 point 7): each game's rules in short, in the player's
// language, with card pictures; reached from every table, the lobby and the bot's /rules.
// The texts are i18n.js keys (rp* Prší, rk* Penki), one title and one paragraph each.

import { cardFigure } from "./cards.js";
import { t, tf } from "./i18n.js";
import { h, icon } from "./render.js";

// Sections: the text key and the cards pictured (with an optional caption each).
const SECTIONS = {
  prsi: [
    ["rp1", []],
    ["rp2", [["9h"], ["9s"], ["Kh"]]],
    ["rp3", [["7h"], ["7s"]]],
    ["rp4", [["Ah"], ["Ac"]]],
    ["rp5", [["Qs"]]],
    ["rp6", []],
    ["rp7", [["Qc", "20"], ["Ac", "11"], ["10c", "10"], ["Kc", "4"], ["Jc", "2"]]],
    ["rp8", []],
  ],
  penki: [
    ["rk1", []],
    ["rk2", [["7s"], ["8h"], ["As"], ["6d"]]],
    ["rk3", []],
    ["rk4", [["Ks"]]],
    ["rk5", [["9d"]]],
    ["rk6", [["10c"], ["Qc"], ["7d"], ["Ks"]]],
    ["rk7", []],
    ["rk8", []],
    ["rk9", []],
    ["rk10", []],
  ],
};

// Prší variants (RULES.md PV1–PV7) that change what a section says: the section's text at
// such a table (one that contradicts the plain rule is replaced: "Drawing ends your turn"
// is not true with Draw and play), and the variants shown as its "At this table" note.
const REPLACED = { rp1: ["PV4", "rp1_pv4"], rp2: ["PV7", "rp2_pv7"], rp3: ["PV1", "rp3_pv1"], rp7: ["PV2", "rp7_pv2"] };
const TOUCHES = { rp1: ["PV4"], rp2: ["PV7"], rp3: ["PV1", "PV6"], rp5: ["PV5"], rp7: ["PV2", "PV3", "PV3q"] };

/** Which rules screen ``?page=rules&game=…`` or a start parameter ``rules-prsi`` names (else null). */
export function rulesGame(params, startParam) {
  if (params.get("page") === "rules") return params.get("game") === "penki" ? "penki" : "prsi";
  const m = /^rules(?:-(prsi|penki))?$/.exec(startParam || "");
  return m ? m[1] || "prsi" : null;
}

/** The rules of ``game`` with tabs for both games; ``faces``: how Prší's cards are drawn. */
export function renderRules(root, { game = "prsi", faces = "german", variants = [], onBack }) {
  let current = game;
  const body = h("div", { class: "rules-body" });
  const tabs = h("div", { class: "tabs", role: "tablist" });
  const title = h("strong", {});
  function draw() {
    title.textContent = t("rules_of", { game: t(current) });
    tabs.replaceChildren(
      ...["prsi", "penki"].map((g) =>
        h(
          "button",
          {
            type: "button",
            role: "tab",
            class: "tab",
            "aria-selected": g === current ? "true" : "false",
            dataset: { tab: `rules:${g}` },
            onclick: () => {
              current = g;
              draw();
            },
          },
          t(g),
        ),
      ),
    );
    const pack = current === "prsi" ? faces : "french";
    const on = current === "prsi" ? variants || [] : [];
    const text = (key) => {
      const swap = REPLACED[key];
      return tf(swap && on.includes(swap[0]) ? swap[1] : key, pack);
    };
    const changed = (key) => (TOUCHES[key] || []).filter((n) => on.includes(n));
    const intro = on.length
      ? h(
          "section",
          { class: "rules-section rules-variants", dataset: { rule: "variants" } },
          h("h2", {}, t("rules_table_variants")),
          h("p", { class: "muted" }, t("variants_friendly")),
          h("ul", {}, on.map((n) => h("li", { dataset: { variant: n } }, h("strong", {}, tf(`pv_${n}`, pack)), " — ", tf(`pvh_${n}`, pack)))),
        )
      : null;
    body.replaceChildren(
      ...(intro ? [intro] : []),
      ...SECTIONS[current].map(([key, cards]) =>
        h(
          "section",
          { class: `rules-section${changed(key).length ? " changed" : ""}`, dataset: { rule: key } },
          h("h2", {}, tf(`${key}_t`, pack)),
          changed(key).length ? h("p", {}, h("span", { class: "rules-changed" }, `${t("rules_changed")}: ${changed(key).map((n) => tf(`pv_${n}`, pack)).join(", ")}`)) : null,
          h("p", {}, text(key)),
          cards.length
            ? h(
                "div",
                { class: "rules-cards" },
                cards.map(([c, caption]) => h("figure", {}, cardFigure(c, pack, "mid"), caption ? h("figcaption", {}, caption) : null)),
              )
            : null,
        ),
      ),
    );
  }
  root.replaceChildren(
    h(
      "div",
      { class: "screen leaderboard rules-screen" },
      h(
        "header",
        { class: "topbar" },
        h("button", { type: "button", class: "icon-btn back-btn", "aria-label": t("back"), onclick: onBack }, icon("back")),
        h("div", { class: "title" }, title),
      ),
      tabs,
      body,
    ),
  );
  draw();
}
