// The server's clock on the phone (issue 12, point 5). Every API answer and socket
// message carries `server_time` (epoch seconds at sending); deadlines are server epoch
// seconds. The phone's own clock may be minutes off, so the app keeps the offset
// server − phone and counts down with serverNow().
//
// An HTTP answer gives the offset to within half its round trip (the server stamped it
// between our request and its arrival); the sample with the shortest round trip of the
// last few minutes wins. A socket message was stamped before it arrived, so it only
// bounds the offset from below: when it shows the server further ahead than we thought,
// the estimate moves up to it.

const KEEP_MS = 5 * 60 * 1000; // a sample is trusted this long (the phone's clock may be set meanwhile)

export const clock = {
  offset: null, // seconds: server time − phone time
  rtt: Infinity, // ms: round trip of the sample behind `offset`
  at: 0, // performance.now() of that sample
};

function monotonic() {
  return typeof performance !== "undefined" && performance.now ? performance.now() : 0;
}

/** An HTTP answer stamped `serverTime`, requested at phone time `sentMs`, arrived at `receivedMs`. */
export function noteAnswer(serverTime, sentMs, receivedMs) {
  if (typeof serverTime !== "number" || !isFinite(serverTime)) return;
  const rtt = Math.max(0, receivedMs - sentMs);
  const offset = serverTime - (sentMs + receivedMs) / 2000;
  const stale = monotonic() - clock.at > KEEP_MS;
  if (clock.offset === null || rtt <= clock.rtt || stale) {
    clock.offset = offset;
    clock.rtt = rtt;
    clock.at = monotonic();
  }
}

/** A socket message stamped `serverTime` arrived at phone time `receivedMs`. */
export function noteMessage(serverTime, receivedMs = Date.now()) {
  if (typeof serverTime !== "number" || !isFinite(serverTime)) return;
  const atLeast = serverTime - receivedMs / 1000;
  if (clock.offset === null || atLeast > clock.offset) {
    clock.offset = atLeast;
    if (clock.rtt === Infinity) clock.at = monotonic();
  }
}

/** Now on the server's clock, epoch seconds. */
export function serverNow() {
  return Date.now() / 1000 + (clock.offset ?? 0);
}
