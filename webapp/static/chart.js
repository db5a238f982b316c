// The rating page's chart (issue 15): the viewer's balance in each kept match (bars above
// or below zero) and the weekly and monthly scores as the leaderboards count them (P15,
// best 3 of a week, best 5 of a month) as two lines. Plain SVG coloured from the theme's
// variables (light and dark alike); a screen reader gets a summary and the numbers as a table.

import { periodLabel, t } from "./i18n.js";
import { h } from "./render.js";

const NS = "http://www.w3.org/2000/svg";
const W = 340;
const H = 150;
const PAD = { l: 34, r: 8, t: 10, b: 18 };

function el(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  for (const c of children) if (c) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  return node;
}

const signed = (n) => `${n > 0 ? "+" : ""}${n}`;

/** Nice bounds and ticks around ``values`` (zero always included). */
function scale(values) {
  const lo = Math.min(0, ...values);
  const hi = Math.max(0, ...values);
  const span = hi - lo || 1;
  const step = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000].find((s) => span / s <= 4) || 2000;
  const min = Math.floor(lo / step) * step;
  const max = Math.ceil(hi / step) * step || step;
  const ticks = [];
  for (let v = min; v <= max; v += step) ticks.push(v);
  return { min, max, ticks, y: (v) => PAD.t + ((max - v) / (max - min || 1)) * (H - PAD.t - PAD.b) };
}

function axes(svg, s) {
  for (const v of s.ticks) {
    const y = s.y(v);
    svg.appendChild(el("line", { x1: PAD.l, x2: W - PAD.r, y1: y, y2: y, class: v === 0 ? "zero" : "grid" }));
    svg.appendChild(el("text", { x: PAD.l - 4, y: y + 3.5, class: "tick", "text-anchor": "end" }, signed(v)));
  }
}

function matchChart(matches) {
  const values = matches.map((m) => m.balance);
  const s = scale(values);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-svg", role: "img", "aria-labelledby": "chart-matches-title" });
  svg.appendChild(el("title", { id: "chart-matches-title" }, t("chart_matches_summary", { n: matches.length, best: signed(Math.max(...values)), worst: signed(Math.min(...values)) })));
  axes(svg, s);
  const inner = W - PAD.l - PAD.r;
  const slot = inner / Math.max(matches.length, 1);
  const bw = Math.max(2, Math.min(18, slot * 0.7));
  matches.forEach((m, i) => {
    const x = PAD.l + slot * i + (slot - bw) / 2;
    const y0 = s.y(0);
    const y1 = s.y(m.balance);
    const bar = el("rect", { x, y: Math.min(y0, y1), width: bw, height: Math.max(1, Math.abs(y1 - y0)), class: m.balance >= 0 ? "bar pos" : "bar neg" });
    bar.appendChild(el("title", {}, `${new Date(m.ended).toLocaleDateString()}: ${signed(m.balance)} · ${t("place")} ${m.place}`));
    svg.appendChild(bar);
  });
  return svg;
}

/** Epoch ms inside period ``key`` ("2026-W49": its Thursday; "2026-11": the 15th). */
function keyTime(key) {
  const week = /^(\d{4})-W(\d{1,2})$/.exec(key);
  if (week) {
    const jan4 = Date.UTC(Number(week[1]), 0, 4);
    const monday = jan4 - ((new Date(jan4).getUTCDay() + 6) % 7) * 86400000;
    return monday + (Number(week[2]) - 1) * 7 * 86400000 + 3 * 86400000;
  }
  const month = /^(\d{4})-(\d{2})$/.exec(key);
  return month ? Date.UTC(Number(month[1]), Number(month[2]) - 1, 15) : 0;
}

function seriesChart(weeks, months) {
  const values = [...weeks.map((w) => w.score), ...months.map((m) => m.score)];
  const s = scale(values.length ? values : [0]);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-svg", role: "img", "aria-labelledby": "chart-series-title" });
  svg.appendChild(el("title", { id: "chart-series-title" }, t("chart_series_summary", { weeks: weeks.length, months: months.length })));
  axes(svg, s);
  const inner = W - PAD.l - PAD.r;
  // One time axis for both lines: a week at its Thursday, a month at its middle.
  const times = [...weeks, ...months].map((p) => keyTime(p.key));
  const t0 = Math.min(...times);
  const t1 = Math.max(...times);
  const xOf = (p) => PAD.l + (t1 > t0 ? ((keyTime(p.key) - t0) / (t1 - t0)) * inner : inner / 2);
  const line = (points, cls) => {
    if (!points.length) return;
    const xs = points.map(xOf);
    svg.appendChild(el("polyline", { points: points.map((p, i) => `${xs[i]},${s.y(p.score)}`).join(" "), class: `line ${cls}` }));
    points.forEach((p, i) => {
      const dot = el("circle", { cx: xs[i], cy: s.y(p.score), r: 3.2, class: `dot ${cls}` });
      dot.appendChild(el("title", {}, `${periodLabel(p.key)}: ${signed(p.score)} (${t("matches_n", { n: p.matches })})`));
      svg.appendChild(dot);
    });
  };
  line(months, "month");
  line(weeks, "week");
  return svg;
}

function dataTable(history) {
  const rows = [
    ...history.weeks.map((w) => [periodLabel(w.key), t("week"), signed(w.score), String(w.matches)]),
    ...history.months.map((m) => [periodLabel(m.key), t("month"), signed(m.score), String(m.matches)]),
  ];
  return h(
    "details",
    { class: "chart-data" },
    h("summary", {}, t("chart_numbers")),
    h(
      "table",
      { class: "scores" },
      h("thead", {}, h("tr", {}, [t("chart_period"), "", t("chart_score"), t("chart_col_matches")].map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, r.map((x) => h("td", {}, x))))),
      h(
        "tbody",
        {},
        history.matches.map((m) => h("tr", {}, h("td", {}, new Date(m.ended).toLocaleDateString()), h("td", {}, t("chart_match")), h("td", {}, signed(m.balance)), h("td", {}, `${t("place")} ${m.place}`))),
      ),
    ),
  );
}

/** The chart block for ``history`` (``store.user_rating``'s), or null with no matches. */
export function ratingChart(history) {
  if (!history || !history.matches || !history.matches.length) return null;
  return h(
    "figure",
    { class: "rating-chart" },
    h("figcaption", {}, t("chart_matches")),
    matchChart(history.matches.slice(-40)),
    h("figcaption", {}, t("chart_series"), " ", h("span", { class: "legend week" }, t("week")), " ", h("span", { class: "legend month" }, t("month"))),
    seriesChart(history.weeks.slice(-12), history.months.slice(-6)),
    dataTable(history),
  );
}
