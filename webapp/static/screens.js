// Screens around the tables: local sign-in, the local lobby, the leaderboard
// and the viewer's rating.

import { suitSvg } from "./cards.js";
import { periodLabel, t } from "./i18n.js";
import { h, icon } from "./render.js";
import { variantSwitches } from "./variants.js";

/**
 * The loading screen: the logo, the spinner and what is loading. index.html's first paint is
 * the same screen (issue 25): while it is still up, only its text changes.
 */
export function renderLoading(root, text = t("loading")) {
  const shown = root.querySelector(":scope > .boot-screen > [role=status]");
  if (shown) {
    shown.textContent = text;
    return;
  }
  root.replaceChildren(
    h("div", { class: "screen center-screen boot-screen" }, logo(), h("div", { class: "spinner", "aria-hidden": "true" }), h("p", { role: "status" }, text)),
  );
}

export function renderMessage(root, text, actions = []) {
  root.replaceChildren(
    h(
      "div",
      { class: "screen center-screen" },
      logo(),
      h("p", { class: "message", role: "status" }, text),
      h(
        "div",
        { class: "stack" },
        actions.map((a) => h("button", { type: "button", class: "btn primary wide", onclick: a.onClick }, a.label)),
      ),
    ),
  );
}

function logo() {
  return h(
    "div",
    { class: "logo", "aria-hidden": "true" },
    suitSvg("h", "german", 34),
    suitSvg("s", "german", 34),
    suitSvg("d", "german", 34),
    suitSvg("c", "german", 34),
  );
}

export function renderSignin(root, onSubmit) {
  const input = h("input", { id: "name", name: "name", type: "text", maxlength: 32, autocomplete: "nickname", required: true, placeholder: t("name") });
  const form = h(
    "form",
    {
      class: "card-form",
      onsubmit: (e) => {
        e.preventDefault();
        const name = input.value.trim();
        if (name) onSubmit(name);
      },
    },
    h("label", { for: "name" }, t("name")),
    input,
    h("button", { type: "submit", class: "btn primary wide" }, t("signin")),
  );
  root.replaceChildren(
    h("div", { class: "screen center-screen" }, logo(), h("h1", {}, t("signin_title")), h("p", { class: "muted" }, t("signin_hint")), form),
  );
  input.focus();
}

/**
 * One line of "My tables": the game and where it stands (round or phase), whose turn
 * (yours stands out), the players, the chat and when it started, so two tables of
 * the same game are told apart at a glance.
 */
function tableListing(x) {
  const seats = x.seats || [];
  const nameOf = (id) => seats.find((s) => s.seat === id)?.name || "";
  const stage = x.game === "prsi" && x.round ? t("round", { n: x.round, of: x.rounds || 5 }) : x.phase ? t(`phase${x.phase}`) : "";
  const left = !x.over && !!x.seat && !!seats.find((s) => s.seat === x.seat)?.left; // the computer plays it (issue 25)
  const mine = !x.over && !left && x.seat && x.to_move === x.seat;
  const turn = x.over ? t(x.game === "prsi" ? "match_over" : "game_over") : left ? t("you_left") : mine ? t("your_turn") : x.to_move ? t("turn_of", { name: nameOf(x.to_move) }) : "";
  const players = seats.map((s) => (s.computer ? `${s.name} (${t("computer")})` : s.name)).join(", ");
  let chat = x.chat_title || "";
  if (!chat) chat = x.chat_id == null ? t("chat_local") : x.chat_id > 0 ? t("chat_private") : x.thread_id ? t("chat_topic") : t("chat_group");
  let when = "";
  try {
    when = new Intl.DateTimeFormat(document.documentElement.lang || "en", { weekday: "short", hour: "2-digit", minute: "2-digit" }).format(new Date(x.created * 1000));
  } catch {
    when = "";
  }
  return [
    h("span", { class: "tl-head" }, h("strong", {}, t(x.game)), stage ? h("span", { class: "tl-stage" }, stage) : null, turn ? h("span", { class: `tl-turn${mine ? " mine" : ""}` }, turn) : null),
    h("span", { class: "tl-players" }, players),
    h("span", { class: "tl-where muted small" }, when ? t("started_in", { chat, when }) : chat),
  ];
}

const LANGUAGE_NAMES = [["cs", "Čeština"], ["ru", "Русский"], ["en", "English"]];

/** Three buttons: the viewer's language (the current one pressed). */
function languageSwitch(current, onLanguage) {
  return h(
    "div",
    { class: "stack row language-switch", role: "group", "aria-label": t("language") },
    LANGUAGE_NAMES.map(([code, name]) =>
      h("button", { type: "button", class: "btn", lang: code, "data-lang": code, "aria-pressed": String(code === current),
        onclick: () => onLanguage(code) }, name),
    ),
  );
}

export function renderLobby(root, { user, onNew, onOpen, onReplay, onLeaderboard, onRules, onSignOut, onLanguage, language, tables = null, sound = null }) {
  const counts = { prsi: [2, 3, 4, 5], penki: [2, 3, 4, 5, 6] };
  const switches = variantSwitches(); // Prší table variants
  const section = (game, label) => {
    const select = h(
      "select",
      { id: `players-${game}`, "aria-label": `${t("players")} (${t(game)})` },
      counts[game].map((n) => h("option", { value: n, selected: n === 3 }, String(n))),
    );
    return h(
      "div",
      { class: "lobby-game" },
      h("label", { for: `players-${game}` }, t("players")),
      select,
      h(
        "button",
        { type: "button", class: "btn primary", id: `new-${game}`, onclick: () => onNew(game, Number(select.value), timer.value ? Number(timer.value) : null, game === "prsi" ? switches.value() : [], level.value) },
        label,
      ),
    );
  };
  const timer = h(
    "select",
    { id: "turn-timer", "aria-label": t("turn_timer") },
    [["", t("timer_off")], ["30", t("secs", { n: 30 })], ["60", t("secs", { n: 60 })], ["120", t("secs", { n: 120 })]].map(([v, label]) => h("option", { value: v }, label)),
  );
  const level = h(
    "select",
    { id: "computer-level", "aria-label": t("computer_level") },
    ["beginner", "regular", "expert"].map((v) => h("option", { value: v, selected: v === "regular" }, t(`level_${v}`))),
  );
  const myTables = h("div", { class: "my-tables" });
  if (tables) {
    tables.then((list) => {
      const live = (list || []).filter((x) => x && x.id && !x.over).slice(0, 5);
      // Finished matches stay (while the server keeps them), each with its replay (issue 25, point 6).
      const done = (list || []).filter((x) => x && x.id && x.over).slice(0, 5);
      if (!live.length && !done.length) return;
      // A link that opens in place when the page handles it (else it navigates).
      const link = (cls, query, id, handler, ...children) =>
        h(
          "a",
          {
            class: cls,
            href: `?${query}=${encodeURIComponent(id)}`,
            onclick: (e) => {
              if (!handler) return;
              e.preventDefault();
              handler(id);
            },
          },
          ...children,
        );
      const finished = done.map((x) =>
        h(
          "div",
          { class: "table-done" },
          link("btn wide table-link finished", "table", x.id, onOpen, ...tableListing(x)),
          link("btn replay-link", "replay", x.id, onReplay, t("watch_replay")),
        ),
      );
      myTables.replaceChildren(
        live.length ? h("h2", {}, t("my_tables")) : null,
        ...live.map((x) => link("btn wide table-link", "table", x.id, onOpen, ...tableListing(x))),
        ...(finished.length ? [h("h2", {}, t("finished_tables")), ...finished] : []),
      );
    });
  }
  root.replaceChildren(
    h(
      "div",
      { class: "screen center-screen lobby" },
      logo(),
      onNew ? h("h1", {}, t("lobby_title")) : null,
      user ? h("p", { class: "muted" }, user.name) : null,
      onNew ? section("prsi", t("new_prsi")) : h("p", { class: "message" }, t("no_table")),
      onNew ? switches.node : null,
      onNew ? section("penki", t("new_penki")) : null,
      onNew ? h("div", { class: "lobby-game timer-row" }, h("label", { for: "turn-timer" }, t("turn_timer")), timer) : null,
      onNew ? h("div", { class: "lobby-game timer-row" }, h("label", { for: "computer-level" }, t("computer_level")), level) : null,
      myTables,
      h(
        "div",
        { class: "stack row" },
        h("button", { type: "button", class: "btn", onclick: onLeaderboard }, t("leaderboard")),
        onRules ? h("button", { type: "button", class: "btn", id: "lobby-rules", onclick: onRules }, t("rules")) : null,
        onSignOut ? h("button", { type: "button", class: "btn", onclick: onSignOut }, t("sign_out")) : null,
      ),
      onLanguage ? languageSwitch(language, onLanguage) : null,
      sound
        ? h(
            "label",
            { class: "sound-switch", for: "sound-on" },
            h("input", { type: "checkbox", id: "sound-on", checked: sound.on, onchange: (e) => sound.set(e.currentTarget.checked) }),
            h("span", {}, t("sound_effects")),
          )
        : null,
    ),
  );
}

/**
 * The leaderboard page: game × scope (this chat / everyone) × period (week / month),
 * and the viewer's own rating underneath.
 */
export function renderLeaderboard(root, { api, chatId, game: initialGame, onBack, local = false }) {
  const sel = { game: initialGame || "prsi", scope: chatId ? "chat" : "all", period: "week" };
  const tabs = (name, options) =>
    h(
      "div",
      { class: "tabs", role: "tablist" },
      options.map(([value, label]) =>
        h(
          "button",
          {
            type: "button",
            role: "tab",
            class: "tab",
            "aria-selected": sel[name] === value ? "true" : "false",
            dataset: { tab: `${name}:${value}` },
            onclick: () => {
              sel[name] = value;
              draw();
            },
          },
          label,
        ),
      ),
    );
  const body = h("div", { class: "lb-body", "aria-live": "polite" });
  const rating = h("div", { class: "lb-rating" });
  const head = h("div", { class: "lb-head" });

  let loads = 0;
  async function load() {
    const mine = ++loads; // a quick tap on another tab: only the latest answer is shown
    body.replaceChildren(h("div", { class: "spinner small", "aria-hidden": "true" }));
    try {
      const data = await api.leaderboard(sel.game, sel.period, sel.scope === "chat" ? chatId : null);
      if (mine !== loads) return;
      const rows = data?.rows || [];
      if (!rows.length) {
        body.replaceChildren(h("p", { class: "muted center-text" }, t(local ? "lb_local" : "no_rows")));
      } else {
        body.replaceChildren(
          h(
            "table",
            { class: "scores lb" },
            h("thead", {}, h("tr", {}, h("th", {}, t("rank")), h("th", {}, t("player")), h("th", {}, t("score")), h("th", {}, t("matches")))),
            h(
              "tbody",
              {},
              rows.map((r) =>
                h(
                  "tr",
                  {},
                  h("td", {}, String(r.rank)),
                  h("th", { scope: "row" }, r.name || String(r.user_id)),
                  h("td", { class: r.score > 0 ? "pos" : r.score < 0 ? "neg" : "" }, r.score > 0 ? `+${r.score}` : String(r.score)),
                  h("td", {}, String(r.matches)),
                ),
              ),
            ),
          ),
        );
      }
      if (data?.period_key) body.prepend(h("p", { class: "muted small center-text" }, periodLabel(data.period_key)));
    } catch (e) {
      if (mine !== loads) return;
      body.replaceChildren(h("p", { class: "muted center-text" }, t("net_error")));
    }
    try {
      // chart.js (issue 15's chart) is loaded with the first rating shown, not with the page
      const [r, charts] = await Promise.all([api.rating(sel.game), import("./chart.js").catch(() => null)]);
      if (mine !== loads) return;
      const row = (label, x) =>
        h(
          "div",
          { class: "rating-row" },
          h("span", {}, label),
          h(
            "strong",
            {},
            x ? t("rating_line", { score: `${x.score > 0 ? "+" : ""}${x.score}`, rank: x.rank, matches: t("matches_n", { n: x.matches }) }) : "–",
          ),
        );
      rating.replaceChildren(h("h2", {}, t("my_rating")), row(t("week"), r?.week), row(t("month"), r?.month));
      const chart = charts?.ratingChart(r?.history); // issue 15: balances per match, weekly and monthly scores
      if (chart) rating.appendChild(chart);
      if (r?.last?.length) {
        rating.appendChild(h("h3", {}, t("last_results")));
        rating.appendChild(
          h(
            "ul",
            { class: "last-results" },
            r.last.slice(0, 5).map((m) => h("li", {}, `${t("place")} ${m.place} · ${m.balance > 0 ? "+" : ""}${m.balance}`)),
          ),
        );
      }
    } catch {
      rating.replaceChildren();
    }
  }

  function draw() {
    const scopes = chatId ? [["chat", t("this_chat")], ["all", t("everyone")]] : [["all", t("everyone")]];
    head.replaceChildren(
      tabs("game", [["prsi", t("prsi")], ["penki", t("penki")]]),
      tabs("scope", scopes),
      tabs("period", [["week", t("week")], ["month", t("month")]]),
    );
    load();
  }

  root.replaceChildren(
    h(
      "div",
      { class: "screen leaderboard" },
      h(
        "header",
        { class: "topbar" },
        h("button", { type: "button", class: "icon-btn back-btn", "aria-label": t("back"), onclick: onBack }, icon("back")),
        h("div", { class: "title" }, h("strong", {}, t("leaderboard"))),
      ),
      head,
      body,
      rating,
    ),
  );
  draw();
}
