// Telegram glue, as in aiogram's examples/web_app/demo.html: ready(), expand(),
// --tg-theme-* CSS variables with fallbacks, the raw initData sent to the server.
// telegram-web-app.js is fetched only when the page runs inside Telegram, and its
// absence never breaks the page. The local stand-in (tg-local.js) is imported
// only in local play.

const TG_SCRIPT = "https://telegram.org/js/telegram-web-app.js";

function insideTelegramHint() {
  const hash = location.hash || "";
  return (
    hash.includes("tgWebAppData") ||
    hash.includes("tgWebAppVersion") ||
    typeof window.TelegramWebviewProxy !== "undefined" ||
    window.parent !== window
  );
}

function loadScript(src, timeoutMs) {
  return new Promise((resolve) => {
    const s = document.createElement("script");
    s.src = src;
    s.async = true;
    const timer = setTimeout(() => resolve(false), timeoutMs);
    s.onload = () => {
      clearTimeout(timer);
      resolve(true);
    };
    s.onerror = () => {
      clearTimeout(timer);
      resolve(false);
    };
    document.head.appendChild(s);
  });
}

/** The Telegram WebApp when running inside Telegram with initData, else null. */
export async function detectTelegram() {
  let wa = window.Telegram?.WebApp;
  if (!wa && insideTelegramHint() && !new URLSearchParams(location.search).has("notg")) {
    await loadScript(TG_SCRIPT, 3500);
    wa = window.Telegram?.WebApp;
  }
  if (!wa) wa = fromLaunchParams();
  if (wa && wa.initData) return new Tg(wa, false);
  return null;
}

/**
 * Inside Telegram but telegram-web-app.js unreachable: the launch parameters in the
 * URL fragment still carry initData and the theme, enough to play (no haptics).
 */
function fromLaunchParams() {
  const hash = new URLSearchParams((location.hash || "").replace(/^#/, ""));
  const initData = hash.get("tgWebAppData");
  if (!initData) return null;
  const data = new URLSearchParams(initData);
  let user = null;
  let themeParams = {};
  try {
    user = JSON.parse(data.get("user") || "null");
  } catch {
    user = null;
  }
  try {
    themeParams = JSON.parse(hash.get("tgWebAppThemeParams") || "{}");
  } catch {
    themeParams = {};
  }
  return {
    initData,
    initDataUnsafe: { user, start_param: data.get("start_param") || hash.get("tgWebAppStartParam") },
    themeParams,
    version: hash.get("tgWebAppVersion") || "6.0",
    isVersionAtLeast: () => false,
  };
}

/** The local stand-in around a locally signed initData (local play only). */
export async function localTelegram(initData) {
  const mod = await import("./tg-local.js");
  return new Tg(mod.createWebApp(initData), true);
}

const THEME_KEYS = [
  "bg_color",
  "text_color",
  "hint_color",
  "link_color",
  "button_color",
  "button_text_color",
  "secondary_bg_color",
  "header_bg_color",
  "accent_text_color",
  "section_bg_color",
  "section_header_text_color",
  "subtitle_text_color",
  "destructive_text_color",
];

export class Tg {
  constructor(webApp, local) {
    this.wa = webApp;
    this.local = local;
    this._back = null;
  }

  get initData() {
    return this.wa.initData || "";
  }

  get user() {
    return this.wa.initDataUnsafe?.user || null;
  }

  /** The table id Telegram was opened with (startapp=<id>), if any. */
  get startParam() {
    const fromUnsafe = this.wa.initDataUnsafe?.start_param;
    if (fromUnsafe) return fromUnsafe;
    const hash = new URLSearchParams((location.hash || "").replace(/^#/, ""));
    return hash.get("tgWebAppStartParam") || new URLSearchParams(location.search).get("tgWebAppStartParam");
  }

  get languageCode() {
    return this.user?.language_code || null;
  }

  call(name, ...args) {
    try {
      const fn = this.wa[name];
      if (typeof fn === "function") return fn.apply(this.wa, args);
    } catch {
      /* an older client without this method */
    }
    return undefined;
  }

  on(event, fn) {
    try {
      this.wa.onEvent?.(event, fn);
    } catch {
      /* ignore */
    }
  }

  /** ready(), expand(), theme, safe areas, no vertical swipes. */
  start() {
    this.applyTheme();
    this.applySafeArea();
    this.on("themeChanged", () => this.applyTheme());
    this.on("safeAreaChanged", () => this.applySafeArea());
    this.on("contentSafeAreaChanged", () => this.applySafeArea());
    this.on("viewportChanged", () => this.applySafeArea());
    if (!this.local && this.wa.isVersionAtLeast?.("7.7")) this.call("disableVerticalSwipes");
    this.call("expand");
    this.call("ready");
    document.documentElement.classList.toggle("in-telegram", !this.local);
  }

  applyTheme() {
    const tp = this.wa.themeParams || {};
    const root = document.documentElement.style;
    for (const key of THEME_KEYS) {
      if (tp[key]) root.setProperty(`--tg-theme-${key.replace(/_/g, "-")}`, tp[key]);
    }
    if (this.wa.colorScheme) document.documentElement.dataset.scheme = this.wa.colorScheme;
  }

  applySafeArea() {
    const root = document.documentElement.style;
    const sa = this.wa.safeAreaInset || {};
    const csa = this.wa.contentSafeAreaInset || {};
    for (const side of ["top", "bottom", "left", "right"]) {
      root.setProperty(`--tg-safe-${side}`, `${Number(sa[side] || 0)}px`);
      root.setProperty(`--tg-content-safe-${side}`, `${Number(csa[side] || 0)}px`);
    }
  }

  /** Colour Telegram's header and background: the felt on a table, the theme elsewhere. */
  paint(header, background = header) {
    if (this.local || !this.wa.isVersionAtLeast?.("6.1")) return;
    const hex = this.wa.isVersionAtLeast("6.9");
    this.call("setHeaderColor", header && hex ? header : "bg_color");
    this.call("setBackgroundColor", background && hex ? background : "bg_color");
    if (this.wa.isVersionAtLeast("7.10")) this.call("setBottomBarColor", background || "bg_color");
  }

  impact(style = "light") {
    try {
      this.wa.HapticFeedback?.impactOccurred(style);
    } catch {
      /* ignore */
    }
  }

  notify(type = "success") {
    try {
      this.wa.HapticFeedback?.notificationOccurred(type);
    } catch {
      /* ignore */
    }
  }

  selection() {
    try {
      this.wa.HapticFeedback?.selectionChanged();
    } catch {
      /* ignore */
    }
  }

  /** Show the back button with handler fn; null hides it. */
  setBack(fn) {
    const bb = this.wa.BackButton;
    if (!bb) return;
    try {
      if (this._back) bb.offClick(this._back);
      this._back = fn;
      if (fn) {
        bb.onClick(fn);
        bb.show();
      } else {
        bb.hide();
      }
    } catch {
      /* ignore */
    }
  }

  onActivated(fn) {
    this.on("activated", fn);
    // Older clients: the page becoming visible again is the same moment.
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && !this.local) fn();
    });
  }
}
