// Optional sound effects (issue 25): off by default, a switch in the lobby, kept in
// localStorage. Short WebAudio tones, no files to download: your turn, a callout against
// you, a round's end. ``stats.played`` lists what sounded (for the browser tests).

const KEY = "karty.sound";
let ctx = null;
export const stats = { played: [] };

export function soundOn() {
  try {
    return localStorage.getItem(KEY) === "1";
  } catch {
    return false;
  }
}

export function setSound(on) {
  try {
    localStorage.setItem(KEY, on ? "1" : "0");
  } catch {
    /* private mode: this page only */
  }
  if (on) audio(); // a user's tap: the browser lets the context start now
}

function audio() {
  if (!ctx) {
    const Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) return null;
    ctx = new Ctx();
  }
  if (ctx.state === "suspended") ctx.resume().catch(() => {});
  return ctx;
}

// Each effect: [frequency Hz, start s, length s] notes.
const EFFECTS = {
  turn: [[660, 0, 0.12], [880, 0.13, 0.16]],
  callout: [[440, 0, 0.1], [330, 0.11, 0.1], [220, 0.22, 0.2]],
  round: [[523, 0, 0.14], [659, 0.15, 0.14], [784, 0.3, 0.26]],
};

/** Play the effect ``kind`` ("turn", "callout", "round") if sound is on. */
export function play(kind) {
  if (!soundOn() || !EFFECTS[kind]) return;
  const ac = audio();
  if (!ac) return;
  const t0 = ac.currentTime + 0.02;
  for (const [freq, start, len] of EFFECTS[kind]) {
    const osc = ac.createOscillator();
    const gain = ac.createGain();
    osc.type = "sine";
    osc.frequency.value = freq;
    gain.gain.setValueAtTime(0.0001, t0 + start);
    gain.gain.exponentialRampToValueAtTime(0.18, t0 + start + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, t0 + start + len);
    osc.connect(gain).connect(ac.destination);
    osc.start(t0 + start);
    osc.stop(t0 + start + len + 0.02);
  }
  stats.played.push(kind);
}
