// Texts in Czech, Russian and English (S8). The callouts keep their Russian
// names in every language. Everything here is plain text for textContent.

const CALLOUTS = {
  zevok: "ЗЕВОК!",
  one_card: "ОДНА КАРТА!",
  how_many: "СКОЛЬКО КАРТ?",
};

// The texts themselves: generated from the one source of translations, the gettext catalogues
// in bot/locales (English in webapp/app_texts.json). A new text goes there, then
// `python -m bot extract && python -m bot update`, translate, `python -m bot compile-locales
// && python -m bot app-texts`.
import { T } from "./i18n_texts.js";


// Card names: the German-suited Czech pack (Prší) and the French pack.
const GERMAN = {
  cs: {
    suits: { h: "červené", d: "kule", c: "žaludy", s: "zelené" },
    ranks: { 7: "sedma", 8: "osma", 9: "devítka", 10: "desítka", J: "spodek", Q: "svršek", K: "král", A: "eso" },
    index: { J: "Sp", Q: "Sv", K: "K", A: "E" },
    order: "rank-suit",
  },
  en: {
    suits: { h: "hearts", d: "bells", c: "acorns", s: "leaves" },
    ranks: { 7: "seven", 8: "eight", 9: "nine", 10: "ten", J: "unter", Q: "ober", K: "king", A: "ace" },
    index: { J: "U", Q: "O", K: "K", A: "A" },
    order: "rank-of-suit",
  },
  ru: {
    suits: { h: "червей", d: "бубенцов", c: "желудей", s: "листьев" },
    suitNames: { h: "червы", d: "бубенцы", c: "жёлуди", s: "листья" },
    ranks: { 7: "семёрка", 8: "восьмёрка", 9: "девятка", 10: "десятка", J: "унтер", Q: "обер", K: "король", A: "туз" },
    index: { J: "В", Q: "Д", K: "К", A: "Т" },
    order: "rank-suit",
  },
};
const FRENCH = {
  cs: {
    suits: { h: "srdce", d: "káry", c: "kříže", s: "piky" },
    ranks: { 6: "šestka", 7: "sedma", 8: "osma", 9: "devítka", 10: "desítka", J: "kluk", Q: "dáma", K: "král", A: "eso" },
    index: { J: "J", Q: "Q", K: "K", A: "A" },
    order: "rank-suit",
  },
  en: {
    suits: { h: "hearts", d: "diamonds", c: "clubs", s: "spades" },
    ranks: { 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten", J: "jack", Q: "queen", K: "king", A: "ace" },
    index: { J: "J", Q: "Q", K: "K", A: "A" },
    order: "rank-of-suit",
  },
  ru: {
    suits: { h: "червей", d: "бубен", c: "треф", s: "пик" },
    suitNames: { h: "черви", d: "бубны", c: "трефы", s: "пики" },
    ranks: { 6: "шестёрка", 7: "семёрка", 8: "восьмёрка", 9: "девятка", 10: "десятка", J: "валет", Q: "дама", K: "король", A: "туз" },
    index: { J: "В", Q: "Д", K: "К", A: "Т" },
    order: "rank-suit",
  },
};
const SUIT_SYMBOLS = { h: "♥", d: "♦", c: "♣", s: "♠" };

export const LANGS = ["en", "cs", "ru"];

let lang = "en";

/** Pick the language from a code such as "cs", "ru-RU", "en-GB"; English fallback. */
// Telegram's language_code → what Karty speaks: the same mapping as the bot and the store
// (store.models.language_of): sk→cs, uk/be/kk→ru, cs, ru, else en.
const LANGUAGE_OF = { cs: "cs", sk: "cs", ru: "ru", uk: "ru", be: "ru", kk: "ru", en: "en" };

export function languageOf(code) {
  const base = String(code || "").replace("_", "-").split("-")[0].toLowerCase();
  return LANGUAGE_OF[base] || "en";
}

export function setLanguage(code) {
  lang = languageOf(code);
  document.documentElement.lang = lang;
  return lang;
}

export function language() {
  return lang;
}

/** The text for key with {placeholders} filled in. */
export function t(key, params = {}) {
  const text = T[lang][key] ?? T.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, k) => (k in params ? String(params[k]) : `{${k}}`));
}

/**
 * The text for ``key`` as the face set ``faces`` names the cards (issue 25, point 5):
 * ``key_fr`` with French faces when there is one (Jack, Queen, king of spades), else
 * ``key`` (the German-suited pack's Unter, Ober, king of leaves).
 */
export function tf(key, faces, params = {}) {
  return t(faces === "french" && (T[lang][`${key}_fr`] ?? T.en[`${key}_fr`]) !== undefined ? `${key}_fr` : key, params);
}

const CARD_FORMS = {
  en: { one: "{n} card", other: "{n} cards" },
  cs: { one: "{n} karta", few: "{n} karty", other: "{n} karet" },
  ru: { one: "{n} карта", few: "{n} карты", many: "{n} карт", other: "{n} карты" },
};

/** "1 card", "3 karty", "5 карт": the plural form for the language. */
export function cardsText(n) {
  const forms = CARD_FORMS[lang];
  let cat = "other";
  try {
    cat = new Intl.PluralRules(lang).select(n);
  } catch {
    cat = n === 1 ? "one" : "other";
  }
  return (forms[cat] || forms.other).replace("{n}", String(n));
}

export function callout(kind) {
  return CALLOUTS[kind];
}

// The engine's reasons (plain English, FORMAT.md) in the player's words: a pattern of
// the detail, the text's key and how its parts become the text's {placeholders}.
const REASON_PATTERNS = [
  [/^a 7 is pending/, "r_seven_pending"],
  [/^an Ace is pending/, "r_ace_pending"],
  [/^(\S+) follows neither the suit in play \((\w)\) nor the top card (\S+)/, "r_no_follow", ["card", "suit", "top"]],
  [/^nothing can be drawn/, "r_nothing_to_draw"],
  [/^no Ace is pending/, "r_no_ace"],
  [/^pass only when nothing can be drawn/, "r_pass_draw"],
  [/^a player who can play must play/, "r_must_play"],
  [/^the drawn card must be placed first/, "r_place_first"],
  [/^the stock is empty/, "r_stock_empty"],
  [/^your pile is empty/, "r_pile_empty"],
  [/^a move goes to an opponent's pile/, "r_move_opp"],
  [/^(\S+) fits no opponent's pile/, "r_fits_none", ["card"]],
  [/^(\S+) must go to (\S+), the first fitting opponent/, "r_first_fit", ["card", "name"]],
  [/^(\S+) does not fit (\S+)'s pile/, "r_no_fit", ["card", "name"]],
  [/^Ks leads only/, "r_ks_lead"],
  [/^(\S+) does not beat (\S+)/, "r_no_beat", ["card", "top"]],
  [/^the table is empty: lead a card/, "r_lead"],
  [/belongs to phase 1/, "r_phase1"],
  [/belongs to phase 2/, "r_phase2"],
  [/^you owe no penalty card/, "r_no_give"],
  // Prší table variants (engine/prsi_variants.py)
  [/^no stacking \(PV1\)/, "r_pv_no_stacking"],
  [/^the king of leaves is pending/, "r_pv_ks"],
  [/^7s is pending/, "r_seven_pending"],
  [/may be the last card \(PV3q?\)|may not be the last card \(PV3\)/, "r_pv_last"],
  [/^the extra turn allows only 7h|^7h does not fit here/, "r_pv_extra"],
  [/^only the card just drawn|^play the card just drawn/, "r_pv_drawn"],
  [/^a Jack named (\S+):/, "r_pv_rank", ["rank"]],
  [/^the cards of a group are of one rank/, "r_pv_group"],
];

/**
 * A refused move in words: the engine's ``detail`` when it is one we know (with its
 * cards in the table's pack and seats by name), else the reason ``code`` in general.
 */
export function reasonText(code, detail, { faces = "french", nameOf = (x) => x } = {}) {
  if (code === "illegal" && detail) {
    for (const [re, key, parts = []] of REASON_PATTERNS) {
      const m = re.exec(detail);
      if (!m) continue;
      const params = {};
      parts.forEach((part, i) => {
        const x = m[i + 1];
        params[part] = part === "name" ? nameOf(x) : part === "suit" ? suitName(x, faces) : part === "rank" ? rankName(x, faces, "acc") : cardShort(x, faces);
      });
      return tf(key, faces, params);
    }
  }
  const general = T[lang][`r_${code}`] ?? T.en[`r_${code}`];
  return general ? t(`r_${code}`) : detail || code;
}

export function rankOf(card) {
  return card.slice(0, -1);
}

export function suitOf(card) {
  return card.slice(-1);
}

function names(faces) {
  return (faces === "german" ? GERMAN : FRENCH)[lang];
}

/** The rank index drawn in a card's corner. */
export function indexLabel(card, faces) {
  const r = rankOf(card);
  return names(faces).index[r] || r;
}

/** "eso červené", "ace of hearts", "туз червей". */
export function cardName(card, faces) {
  const n = names(faces);
  const r = rankOf(card);
  const s = suitOf(card);
  const rank = n.ranks[r] || r;
  const suit = n.suits[s] || s;
  return n.order === "rank-of-suit" ? `${rank} of ${suit}` : `${rank} ${suit}`;
}

/** Short form for the ticker: "A♥" or "eso červené" is long; keep it short. */
export function cardShort(card, faces) {
  if (faces === "german") return cardName(card, faces);
  return `${indexLabel(card, faces)}${SUIT_SYMBOLS[suitOf(card)]}`;
}

// The accusative of a rank where it differs ("Spodek chce osmu", "заказал девятку").
const RANKS_ACC = {
  german: {
    cs: { 7: "sedmu", 8: "osmu", 9: "devítku", 10: "desítku", J: "spodka", Q: "svrška", K: "krále" },
    ru: { 7: "семёрку", 8: "восьмёрку", 9: "девятку", 10: "десятку", J: "унтера", Q: "обера", K: "короля", A: "туза" },
  },
  french: {
    cs: { 6: "šestku", 7: "sedmu", 8: "osmu", 9: "devítku", 10: "desítku", J: "kluka", Q: "dámu", K: "krále" },
    ru: { 6: "шестёрку", 7: "семёрку", 8: "восьмёрку", 9: "девятку", 10: "десятку", J: "валета", Q: "даму", K: "короля", A: "туза" },
  },
};

/** A rank in words ("sedma", "queen"); a Jack's named rank (PV5); ``grammatical = "acc"``: as an object. */
export function rankName(rank, faces, grammatical = null) {
  if (grammatical === "acc") {
    const acc = RANKS_ACC[faces === "german" ? "german" : "french"][lang]?.[rank];
    if (acc) return acc;
  }
  return names(faces).ranks[rank] || rank;
}

export function suitName(suit, faces) {
  const n = names(faces);
  return (n.suitNames || n.suits)[suit] || suit;
}

/**
 * A leaderboard period key in words: "2026-W49" → "Week 49: 30 Nov – 6 Dec",
 * "2026-11" → "November 2026" (in the user's language).
 */
export function periodLabel(key) {
  const week = /^(\d{4})-W(\d{1,2})$/.exec(key || "");
  try {
    if (week) {
      const [y, w] = [Number(week[1]), Number(week[2])];
      const jan4 = new Date(Date.UTC(y, 0, 4));
      const monday = new Date(jan4.getTime() - ((jan4.getUTCDay() + 6) % 7) * 86400000 + (w - 1) * 7 * 86400000);
      const sunday = new Date(monday.getTime() + 6 * 86400000);
      const fmt = new Intl.DateTimeFormat(lang, { day: "numeric", month: "short", timeZone: "UTC" });
      return t("period_week", { w, from: fmt.format(monday), to: fmt.format(sunday) });
    }
    const month = /^(\d{4})-(\d{2})$/.exec(key || "");
    if (month) {
      const d = new Date(Date.UTC(Number(month[1]), Number(month[2]) - 1, 1));
      const text = new Intl.DateTimeFormat(lang, { month: "long", year: "numeric", timeZone: "UTC" }).format(d);
      return text.charAt(0).toUpperCase() + text.slice(1);
    }
  } catch {
    /* an old browser: the key as it is */
  }
  return String(key || "");
}
