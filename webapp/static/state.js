// The app's data, apart from the DOM: the table being shown, the viewer's seat,
// the latest view, the move ticker and the viewer's preferences.

const FACES_KEY = "karty.faces";

export function loadFaces() {
  try {
    return localStorage.getItem(FACES_KEY) === "french" ? "french" : "german";
  } catch {
    return "german";
  }
}

export function saveFaces(faces) {
  try {
    localStorage.setItem(FACES_KEY, faces);
  } catch {
    /* private mode */
  }
}

export const state = {
  user: null, // {id, name, language}
  tableId: null,
  table: null, // {id, game, seats, settings, chat_id}
  seat: null, // the viewer's seat id or null (spectator)
  version: -1,
  deadline: null, // epoch seconds
  view: null,
  seats: [], // [{seat, user_id, name, computer, auto}]
  ticker: [], // [{event, version, by}]
  bannered: new Set(), // versions whose events were announced
  selected: null, // Penki phase 1: "drawn" | "pile"
  faces: loadFaces(), // Prší card faces: "german" | "french"
  busy: false,
  dialog: null, // the open dialog's kind
  dialogKey: null, // what the open dialog was built from (rebuilt when it changes)
  shownVersion: -1, // the version the table on screen was drawn from (a tap acts on it)
  shownView: null,
  given: new Map(), // version → the card this seat gave then (only the giver knows it)
};

const listeners = new Set();

export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function changed(reason) {
  for (const fn of listeners) fn(reason);
}

export function resetTable(tableId) {
  Object.assign(state, {
    tableId,
    table: null,
    seat: null,
    version: -1,
    deadline: null,
    view: null,
    seats: [],
    ticker: [],
    bannered: new Set(),
    selected: null,
    busy: false,
    dialog: null,
    dialogKey: null,
    shownVersion: -1,
    shownView: null,
    given: new Map(),
  });
}

/** The display name of a seat id. */
export function nameOf(seatId) {
  if (seatId === null || seatId === undefined) return "";
  const s = state.seats.find((x) => x.seat === seatId);
  return s?.name || String(seatId);
}

export function isComputer(seatId) {
  return !!state.seats.find((x) => x.seat === seatId)?.computer;
}

function rememberSeats(seats) {
  if (Array.isArray(seats) && seats.length) state.seats = seats;
}

/**
 * Take a new version of the table (from GET, an action's answer or the socket).
 * Returns the events not seen before (with `by`), or null when it is older than
 * what is shown.
 */
export function acceptVersion({ version, view, events, deadline, seats, by }, { resync = false } = {}) {
  rememberSeats(seats);
  if (typeof version !== "number" || !view) return null;
  if (version < state.version) return null;
  if (version === state.version && !resync) {
    if (deadline !== undefined) state.deadline = deadline;
    return [];
  }
  const gap = state.version >= 0 && version > state.version + 1;
  const first = state.version < 0;
  state.version = version;
  state.view = view;
  if (deadline !== undefined) state.deadline = deadline;
  if (view.seat !== undefined) state.seat = view.seat;
  const fresh = [];
  if (first || gap || !Array.isArray(events)) {
    // Start (or restart after missed versions) from the view's own record.
    state.ticker = (view.last || []).map((event) => ({ event, version, by: null }));
  } else {
    for (const event of events) {
      state.ticker.push({ event, version, by: by || null });
    }
  }
  if (!first && Array.isArray(events) && !state.bannered.has(version)) {
    state.bannered.add(version);
    for (const event of events) fresh.push({ ...event, _by: by || null });
  }
  state.ticker = state.ticker.slice(-20);
  return fresh;
}

/** Whether the viewer left this table (issue 25): the computer plays their seat to the end. */
export function iLeft() {
  return !!state.seat && !!state.seats.find((x) => x.seat === state.seat)?.left;
}

export function legal() {
  return iLeft() ? [] : state.view?.legal || [];
}

export function legalOf(kind) {
  return legal().filter((a) => a.a === kind);
}

export function myTurn() {
  return !!state.view && state.seat && state.view.to_move === state.seat && !state.view.over && !iLeft();
}
