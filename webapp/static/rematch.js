// Play again (issue 15): the button on a finished table's final sheet. One tap takes the
// viewer's seat in the next match (same seats, the next dealer); the sheet then says who
// is in and moves to the new table as soon as it runs (it starts once every seat is taken).

import { t } from "./i18n.js";
import { h } from "./render.js";

const POLL_MS = 1500;

/** The Play again block for the final sheet of table ``tableId``; ``onTable(id)`` opens the new one. */
export function rematchBox({ api, tableId, seated, onTable }) {
  const status = h("p", { class: "rematch-status", role: "status", "aria-live": "polite" });
  const button = h("button", { type: "button", class: "btn primary wide play-again", onclick: () => accept() }, t("play_again"));
  const box = h("div", { class: "rematch" }, seated ? button : null, status);
  let timer = null;
  let gone = false;

  function stop() {
    gone = true;
    clearTimeout(timer);
  }

  function show(answer) {
    if (!answer) return;
    if (answer.table_id) {
      const lobby = answer.lobby;
      if (!seated || (lobby && lobby.seated)) {
        stop();
        onTable(answer.table_id);
        return;
      }
      button.disabled = true;
      status.textContent = t("rematch_started");
      stop();
      return;
    }
    const lobby = answer.lobby;
    if (!lobby) {
      status.textContent = "";
      return;
    }
    const people = lobby.seats.filter((s) => !s.computer).map((s) => s.name);
    if (lobby.seated) {
      button.disabled = true;
      button.textContent = t("rematch_in");
      status.textContent = t("rematch_waiting", { n: lobby.seats.length, of: lobby.players });
    } else {
      status.textContent = t("rematch_asked", { names: people.join(", ") });
    }
  }

  async function poll() {
    if (gone) return;
    if (!box.isConnected && timer !== null) return stop(); // the sheet was closed
    try {
      show(await api.rematchState(tableId));
    } catch {
      /* offline for a moment: try again */
    }
    if (!gone) timer = setTimeout(poll, POLL_MS);
  }

  async function accept() {
    button.disabled = true;
    try {
      show(await api.rematch(tableId));
    } catch (e) {
      button.disabled = false;
      status.textContent = String(e.message || e);
    }
  }

  timer = setTimeout(poll, 0);
  return box;
}
