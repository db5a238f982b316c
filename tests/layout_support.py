"""Layout checks for the browser tests (issue 17 point 2): the elements that matter on
a table, and whether any of them is cut off, off screen or under another one.

:data:`CHECK_LAYOUT` runs in the page and returns a list of problems (empty when the
layout is sound). It looks at bounding boxes (pairs that must not intersect, boxes
that must stay on screen) and at what a tap at an element's centre would hit
(``elementFromPoint``), so a badge under a fan or a card under the callout bar is
found whatever the CSS did.
"""

from __future__ import annotations

CHECK_LAYOUT = r"""
() => {
  // Measure what is drawn: badges and labels ignore taps (pointer-events: none), but a
  // badge under a fan is still hidden; passing overlays (banner, toasts) are left out.
  const probe = document.createElement('style');
  probe.textContent = '.table-screen * { pointer-events: auto !important; } #banner, #toasts, #first-hint { display: none !important; }';
  document.head.appendChild(probe);
  try {
    return check();
  } finally {
    probe.remove();
  }

function check() {
  const problems = [];
  const vw = document.documentElement.clientWidth, vh = window.innerHeight;
  const name = (e) => {
    const bits = [e.tagName.toLowerCase()];
    if (e.className && typeof e.className === 'string') bits.push('.' + e.className.trim().split(/\s+/).join('.'));
    if (e.dataset && (e.dataset.seat || e.dataset.card)) bits.push(`[${e.dataset.seat || e.dataset.card}]`);
    return bits.join('');
  };
  const rect = (e) => e.getBoundingClientRect();
  const visible = (e) => { const r = rect(e); const s = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
  const meet = (a, b, slack = 1) => a.left < b.right - slack && b.left < a.right - slack && a.top < b.bottom - slack && b.top < a.bottom - slack;
  const all = (sel, root = document) => [...root.querySelectorAll(sel)].filter(visible);
  const onScreen = (e) => { const r = rect(e);
    if (r.left < -1 || r.top < -1 || r.right > vw + 1 || r.bottom > vh + 1) problems.push(`${name(e)} off screen: ${[r.left, r.top, r.right, r.bottom].map(Math.round)} in ${vw}x${vh}`); };
  // A tap at (x, y) of e lands on e (or inside it).
  const hits = (e, x, y, what) => {
    const got = document.elementFromPoint(x, y);
    if (!got || !(got === e || e.contains(got))) problems.push(`${what || name(e)} covered at ${Math.round(x)},${Math.round(y)} by ${got ? name(got) : 'nothing'}`);
  };
  const centre = (e) => { const r = rect(e); hits(e, r.left + r.width / 2, r.top + r.height / 2); };
  const noPairs = (list, label) => {
    for (let i = 0; i < list.length; i++) for (let j = i + 1; j < list.length; j++)
      if (meet(rect(list[i]), rect(list[j]))) problems.push(`${label}: ${name(list[i])} overlaps ${name(list[j])}`);
  };
  const screen = document.querySelector('.table-screen');
  if (!screen) return ['no table on screen'];
  if (document.querySelector('#dialog[open]')) return problems; // a dialog is modal; checked on its own
  // The big parts of the table, top to bottom, never on top of each other.
  const parts = ['.topbar', '.opponents', '.center', '.ticker', '.me', 'nav.callouts']
    .map((s) => screen.querySelector(s)).filter((e) => e && visible(e));
  noPairs(parts, 'parts');
  parts.forEach(onScreen);
  // Inside the centre: every pile, card and label within the centre's box.
  const center = screen.querySelector('.center');
  if (center) {
    const c = rect(center);
    for (const e of all('.pile, .drawn-btn, .drawn-slot, .center-side > *, .ptable, .trump', center)) {
      const r = rect(e);
      if (r.top < c.top - 1 || r.bottom > c.bottom + 1 || r.left < c.left - 1 || r.right > c.right + 1)
        problems.push(`${name(e)} spills out of the centre: ${[r.top, r.bottom].map(Math.round)} vs ${[c.top, c.bottom].map(Math.round)}`);
    }
    noPairs(all(':scope > *', center), 'centre');
  }
  // Opponents: tiles side by side on screen; on each, name, fan, count, points, stumps apart.
  const tiles = all('.opponents > *');
  noPairs(tiles, 'tiles');
  for (const tile of tiles) {
    onScreen(tile);
    const bits = all('.opp-name, .fan, .badge.count, .opp-points, .stumps, .pile-btn .card, .out-tag, .declared', tile)
      .filter((e) => !e.closest('.pile-btn') || e.matches('.pile-btn .card'));
    noPairs(bits.filter((e) => !e.matches('.pile-btn .card') || true), `tile ${tile.dataset.seat}`);
    for (const b of all('.opp-name, .badge.count, .opp-points, .stumps-n, .declared', tile)) centre(b);
  }
  // The ticker: every line shown is whole and inside it; at least two lines when there are two moves.
  const ticker = screen.querySelector('.ticker');
  if (ticker) {
    const t = rect(ticker);
    const lines = all('li', ticker);
    for (const li of lines) { const r = rect(li); if (r.bottom > t.bottom + 1 || r.top < t.top - 1) problems.push(`ticker line cut: ${li.textContent}`); }
    const moves = (window.__karty?.state?.ticker || []).length;
    if (moves >= 2 && lines.length < 2) problems.push(`ticker shows ${lines.length} of ${moves} moves`);
  }
  // The viewer's row: avatar, status, badges and buttons apart and tappable.
  const head = screen.querySelector('.me-head');
  if (head) {
    const bits = all(':scope > *', head).filter((e) => !e.matches('.actions') || e.children.length);
    noPairs(bits, 'me-head');
    for (const b of all('.btn, .declared, .my-points, .stumps-n', head)) centre(b);
  }
  // The hand: every card's corner index (what tells it apart) visible and tappable.
  for (const card of all('.hand .card')) {
    onScreen(card);
    const r = rect(card);
    hits(card, r.left + Math.min(10, r.width * 0.18), r.top + Math.min(14, r.height * 0.14), `${name(card)} corner`);
  }
  // Piles in Penki phase 1 and the stock: tappable at their centre.
  for (const e of all('.pile-btn, .pile.stock, .drawn-btn')) centre(e);
  for (const e of all('.topbar button, nav.callouts button')) { onScreen(e); centre(e); }
  return problems;
}
}
"""


# An open dialog (issue 25, point 2): every action button inside the viewport and
# tappable at its centre; the dialog itself on screen; a middle that does not fit either
# scrolled to its end or marked as scrolling (``.more-below``: a fade and an arrow).
CHECK_DIALOG = r"""
() => {
  const problems = [];
  const dlg = document.querySelector('#dialog[open]');
  if (!dlg) return ['no dialog open'];
  const vw = document.documentElement.clientWidth, vh = window.innerHeight;
  const kind = dlg.dataset.kind;
  const r = dlg.getBoundingClientRect();
  if (r.left < -1 || r.top < -1 || r.right > vw + 1 || r.bottom > vh + 1)
    problems.push(`${kind}: dialog off screen: ${[r.left, r.top, r.right, r.bottom].map(Math.round)} in ${vw}x${vh}`);
  const buttons = [...dlg.querySelectorAll('.dialog-actions button')];
  for (const b of buttons) {
    const br = b.getBoundingClientRect();
    if (br.top < -1 || br.bottom > vh + 1 || br.left < -1 || br.right > vw + 1 || br.bottom > r.bottom + 1)
      problems.push(`${kind}: action "${b.textContent}" out of reach: ${[br.left, br.top, br.right, br.bottom].map(Math.round)}`);
    const x = br.left + br.width / 2, y = br.top + br.height / 2;
    const got = document.elementFromPoint(x, y);
    if (!got || !(got === b || b.contains(got))) problems.push(`${kind}: action "${b.textContent}" covered`);
  }
  for (let i = 0; i < buttons.length; i++) for (let j = i + 1; j < buttons.length; j++) {
    const a = buttons[i].getBoundingClientRect(), b = buttons[j].getBoundingClientRect();
    if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
      problems.push(`${kind}: actions overlap`);
  }
  const scroller = dlg.querySelector('.dialog-scroll');
  const hidden = (el) => el.scrollHeight - el.scrollTop - el.clientHeight > 2;
  if (!scroller) {
    if (hidden(dlg)) problems.push(`${kind}: the dialog scrolls with nothing showing it`);
  } else if (hidden(scroller) && !scroller.classList.contains('more-below')) {
    problems.push(`${kind}: the middle scrolls with nothing showing it`);
  }
  if (dlg.scrollHeight - dlg.clientHeight > 2) problems.push(`${kind}: the dialog itself scrolls`);
  return problems;
}
"""
