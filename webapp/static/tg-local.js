// A small stand-in for Telegram.WebApp, loaded only in local play (S9).
// It carries the locally signed initData and mimics the parts the app uses,
// so the rest of the code talks to one interface inside and outside Telegram.

function parseInitData(initData) {
  const params = new URLSearchParams(initData || "");
  const unsafe = {};
  for (const [k, v] of params) {
    if (k === "user" || k === "chat" || k === "receiver") {
      try {
        unsafe[k] = JSON.parse(v);
      } catch {
        unsafe[k] = null;
      }
    } else {
      unsafe[k] = v;
    }
  }
  return unsafe;
}

export function createWebApp(initData) {
  const handlers = new Map();
  const emit = (name) => (handlers.get(name) || []).forEach((fn) => fn());
  const dark = window.matchMedia?.("(prefers-color-scheme: dark)").matches;
  const haptics = [];
  window.__karty_haptics = haptics; // visible to the browser tests
  const vibrate = (ms) => {
    try {
      navigator.vibrate?.(ms);
    } catch {
      /* not supported */
    }
  };
  const backHandlers = new Set();
  const back = document.getElementById("local-back");
  if (back) back.addEventListener("click", () => backHandlers.forEach((fn) => fn()));

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") emit("activated");
  });

  return {
    local: true,
    initData: initData || "",
    initDataUnsafe: parseInitData(initData),
    platform: "local",
    version: "8.0",
    colorScheme: dark ? "dark" : "light",
    themeParams: {},
    safeAreaInset: { top: 0, bottom: 0, left: 0, right: 0 },
    contentSafeAreaInset: { top: 0, bottom: 0, left: 0, right: 0 },
    isVersionAtLeast: () => true,
    ready() {},
    expand() {},
    disableVerticalSwipes() {},
    onEvent(name, fn) {
      if (!handlers.has(name)) handlers.set(name, []);
      handlers.get(name).push(fn);
    },
    offEvent(name, fn) {
      handlers.set(name, (handlers.get(name) || []).filter((f) => f !== fn));
    },
    HapticFeedback: {
      impactOccurred(style) {
        haptics.push(`impact:${style}`);
        vibrate(style === "heavy" ? 30 : 12);
      },
      notificationOccurred(type) {
        haptics.push(`notification:${type}`);
        vibrate(type === "error" ? [20, 40, 20] : 20);
      },
      selectionChanged() {
        haptics.push("selection");
      },
    },
    BackButton: {
      isVisible: false,
      show() {
        this.isVisible = true;
        if (back) back.hidden = false;
      },
      hide() {
        this.isVisible = false;
        if (back) back.hidden = true;
      },
      onClick(fn) {
        backHandlers.add(fn);
      },
      offClick(fn) {
        backHandlers.delete(fn);
      },
    },
  };
}
