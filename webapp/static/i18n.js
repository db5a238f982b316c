// Texts in Czech, Russian and English (S8). The callouts keep their Russian
// names in every language. Everything here is plain text for textContent.

const CALLOUTS = {
  zevok: "ЗЕВОК!",
  one_card: "ОДНА КАРТА!",
  how_many: "СКОЛЬКО КАРТ?",
};

const T = {
  en: {
    app: "Karty",
    prsi: "Prší",
    penki: "Penki",
    loading: "Loading…",
    signin_title: "Local play",
    signin_hint: "Type a name to sit down at a table.",
    name: "Your name",
    signin: "Sign in",
    lobby_title: "New table",
    players: "Players",
    new_prsi: "New Prší table",
    new_penki: "New Penki table",
    leaderboard: "Leaderboard",
    my_rating: "My rating",
    sign_out: "Sign out",
    open_in_telegram: "Open this app from the Karty bot in Telegram.",
    no_table: "No table here. Start one with /new in a chat.",
    table_missing: "This table does not exist or has expired.",
    not_seated: "You are watching: you have no seat at this table.",
    spectator: "Spectator",
    you: "You",
    your_turn: "Your turn",
    turn_of: "{name} to move",
    round: "Round {n}/{of}",
    stock: "Stock",
    draw: "Draw",
    draw_n: "Draw {n}",
    stand: "Stand",
    pass: "Pass",
    take: "Take",
    suit_in_play: "Suit in play",
    choose_suit: "Choose the suit",
    cancel: "Cancel",
    close: "Close",
    next: "Continue",
    pending_draw: "+{n}",
    pending_skip: "Stand or Ace",
    cards_n: "{n} cards",
    round_over: "Round {n} is over",
    match_over: "Match over",
    game_over: "Game over",
    points: "Points",
    total: "Total",
    balance: "Balance",
    place: "Place",
    went_out: "went out",
    scores: "Scores",
    faces: "Card faces",
    faces_german: "Czech",
    faces_french: "French",
    settings: "Settings",
    trump: "Trump",
    phase1: "Phase 1: the ladder",
    phase2: "Phase 2: shedding",
    pile: "Pile",
    empty_pile: "empty",
    stumps: "Stumps",
    stumps_n: "{n} stumps",
    drawn: "Drawn card",
    tap_to_draw: "Tap the stock to draw",
    tap_target: "Tap a pile to place the card",
    table: "Table",
    table_empty: "Table is empty",
    bottom: "bottom",
    top: "top",
    bita: "Бита! The table is cleared.",
    give_title: "Give {name} a card",
    give_why_you: "You caught {name} without «ОДНА КАРТА!». Everyone still holding cards gives them one: choose yours.",
    give_why: "{asker} caught {name} without «ОДНА КАРТА!». Everyone still holding cards gives them one: choose yours.",
    give_why_plain: "{name} was caught without «ОДНА КАРТА!». Everyone still holding cards gives them one: choose yours.",
    give_then: "Next in line: {names}",
    gave_card: "You gave {card} to {name}",
    ev_give_card: "{name} gave {card} to {to}",
    waiting_give: "{name} is getting penalty cards",
    declared: "declared",
    out: "out",
    too_late: "Too late!",
    rejected: "Not allowed: {reason}",
    stale: "The table moved on. Updated.",
    too_fast: "Slow down a little.",
    net_error: "Connection problem. Retrying…",
    reconnecting: "Reconnecting…",
    played_for_you: "The timer played for you",
    by_timer: "played for them",
    ticker_empty: "Moves will appear here.",
    week: "Week",
    month: "Month",
    this_chat: "This chat",
    everyone: "Everyone",
    rank: "#",
    player: "Player",
    score: "Score",
    matches: "Matches",
    no_rows: "No rated matches yet.",
    back: "Back",
    last_results: "Last results",
    computer: "computer",
    // ticker / banners
    ev_play: "{name} played {card}",
    ev_play_suit: "{name} played {card}, wants {suit}",
    ev_draw_n: "{name} drew {n}",
    ev_draw_card: "{name} drew {card}",
    ev_stand: "{name} stood",
    ev_pass: "{name} passed",
    ev_turnover: "The discard pile was turned over",
    ev_forgiven: "{name} was let off {n}",
    ev_round_end: "Round {n} over, {name} went out",
    ev_deal: "Round {n} dealt",
    ev_match_end: "The match is over",
    ev_move: "{name} moved {card} to {to}",
    ev_place: "{name} placed {card} on {to}",
    ev_place_own: "{name} kept {card}",
    ev_zevok: "{name}: «ЗЕВОК!» — {to} pays",
    ev_penalty_move: "{from} gave {card} to {to}",
    ev_phase2: "Phase 2 — {name} leads",
    ev_stumps: "{name} took the stumps",
    ev_take: "{name} took {card}",
    ev_bita: "Бита! {name} leads",
    ev_one_card: "{name}: «ОДНА КАРТА!»",
    ev_how_many: "{name}: «СКОЛЬКО КАРТ?» — caught {caught}",
    ev_how_many_none: "{name}: «СКОЛЬКО КАРТ?»",
    ev_give: "{name} gave a card to {to}",
    ev_out: "Out: {names} (place {place})",
    ev_game_end: "The game is over",
    own_pile: "own pile",
    pts: "{n} pts",
    turn_timer: "Turn timer",
    timer_off: "off",
    my_tables: "My tables",
    discarded: "Бита",
    lead_hint: "Your lead: play a card",
    beat_hint: "Beat the top card or take the bottom one",
    last_moves: "Last moves",
    callouts: "Callouts",
    tap_move: "Tap your pile to move its top card",
    tap_move_or_draw: "Tap the stock to draw, or your pile to move its top card",
    tap_target_move: "Tap the pile to move your top card to (yours to cancel)",
    secs: "{n} s",
    period_week: "Week {w}: {from} – {to}",
    rating_line: "{score} · place {rank} · {matches}",
    matches_n: "matches: {n}",
  },
  cs: {
    app: "Karty",
    prsi: "Prší",
    penki: "Pěnky",
    loading: "Načítám…",
    signin_title: "Místní hra",
    signin_hint: "Napište jméno a přisedněte ke stolu.",
    name: "Vaše jméno",
    signin: "Přihlásit",
    lobby_title: "Nový stůl",
    players: "Hráči",
    new_prsi: "Nový stůl Prší",
    new_penki: "Nový stůl Pěnky",
    leaderboard: "Žebříček",
    my_rating: "Moje hodnocení",
    sign_out: "Odhlásit",
    open_in_telegram: "Otevřete aplikaci z bota Karty v Telegramu.",
    no_table: "Tady není žádný stůl. Založte ho příkazem /new v chatu.",
    table_missing: "Tento stůl neexistuje nebo vypršel.",
    not_seated: "Jen se díváte: u tohoto stolu nesedíte.",
    spectator: "Divák",
    you: "Vy",
    your_turn: "Jste na tahu",
    turn_of: "Na tahu: {name}",
    round: "Kolo {n}/{of}",
    stock: "Balíček",
    draw: "Líznout",
    draw_n: "Líznout {n}",
    stand: "Stojím",
    pass: "Pas",
    take: "Vzít",
    suit_in_play: "Barva ve hře",
    choose_suit: "Vyberte barvu",
    cancel: "Zrušit",
    close: "Zavřít",
    next: "Pokračovat",
    pending_draw: "+{n}",
    pending_skip: "Stát nebo eso",
    cards_n: "{n} karet",
    round_over: "Konec {n}. kola",
    match_over: "Konec zápasu",
    game_over: "Konec hry",
    points: "Body",
    total: "Celkem",
    balance: "Bilance",
    place: "Místo",
    went_out: "dohrál(a)",
    scores: "Skóre",
    faces: "Karty",
    faces_german: "české",
    faces_french: "francouzské",
    settings: "Nastavení",
    trump: "Trumf",
    phase1: "1. fáze: žebřík",
    phase2: "2. fáze: shazování",
    pile: "Hromádka",
    empty_pile: "prázdná",
    stumps: "Pěnky",
    stumps_n: "pěnky: {n}",
    drawn: "Líznutá karta",
    tap_to_draw: "Ťukněte na balíček a lízněte",
    tap_target: "Ťukněte na hromádku, kam kartu dát",
    table: "Stůl",
    table_empty: "Stůl je prázdný",
    bottom: "spodní",
    top: "horní",
    bita: "Бита! Stůl se uklízí.",
    give_title: "Dejte kartu hráči {name}",
    give_why_you: "Chytili jste hráče {name} bez «ОДНА КАРТА!». Každý, kdo ještě drží karty, mu jednu dá: vyberte svou.",
    give_why: "{asker} chytil(a) hráče {name} bez «ОДНА КАРТА!». Každý, kdo ještě drží karty, mu jednu dá: vyberte svou.",
    give_why_plain: "Hráč {name} byl chycen bez «ОДНА КАРТА!». Každý, kdo ještě drží karty, mu jednu dá: vyberte svou.",
    give_then: "Další na řadě: {names}",
    gave_card: "Dali jste {card} hráči {name}",
    ev_give_card: "{name} dal(a) {card} hráči {to}",
    waiting_give: "{name} dostává trestné karty",
    declared: "ohlásil(a)",
    out: "venku",
    too_late: "Pozdě!",
    rejected: "Nelze: {reason}",
    stale: "Hra pokročila. Obnoveno.",
    too_fast: "Trochu pomaleji.",
    net_error: "Potíže se spojením. Zkouším znovu…",
    reconnecting: "Připojuji znovu…",
    played_for_you: "Časovač zahrál za vás",
    by_timer: "zahráno za hráče",
    ticker_empty: "Tady se objeví tahy.",
    week: "Týden",
    month: "Měsíc",
    this_chat: "Tento chat",
    everyone: "Všichni",
    rank: "#",
    player: "Hráč",
    score: "Skóre",
    matches: "Zápasy",
    no_rows: "Zatím žádné hodnocené zápasy.",
    back: "Zpět",
    last_results: "Poslední výsledky",
    computer: "počítač",
    ev_play: "{name} hraje {card}",
    ev_play_suit: "{name} hraje {card}, mění na {suit}",
    ev_draw_n: "{name} líže {n}",
    ev_draw_card: "{name} líže {card}",
    ev_stand: "{name} stojí",
    ev_pass: "{name} pasuje",
    ev_turnover: "Odhazovací balíček se otočil",
    ev_forgiven: "{name} má odpuštěno {n}",
    ev_round_end: "Konec {n}. kola, dohrál(a) {name}",
    ev_deal: "Rozdáno {n}. kolo",
    ev_match_end: "Zápas skončil",
    ev_move: "{name} přesunul(a) {card} na {to}",
    ev_place: "{name} dal(a) {card} na {to}",
    ev_place_own: "{name} si nechal(a) {card}",
    ev_zevok: "{name}: «ЗЕВОК!» — platí {to}",
    ev_penalty_move: "{from} dal(a) {card} hráči {to}",
    ev_phase2: "2. fáze — vynáší {name}",
    ev_stumps: "{name} bere pěnky",
    ev_take: "{name} bere {card}",
    ev_bita: "Бита! Vynáší {name}",
    ev_one_card: "{name}: «ОДНА КАРТА!»",
    ev_how_many: "{name}: «СКОЛЬКО КАРТ?» — chycen(a) {caught}",
    ev_how_many_none: "{name}: «СКОЛЬКО КАРТ?»",
    ev_give: "{name} dal(a) kartu hráči {to}",
    ev_out: "Venku: {names} ({place}. místo)",
    ev_game_end: "Hra skončila",
    own_pile: "vlastní hromádka",
    pts: "{n} b.",
    turn_timer: "Časovač tahu",
    timer_off: "vypnuto",
    my_tables: "Moje stoly",
    discarded: "Бита",
    lead_hint: "Vynášíte: zahrajte kartu",
    beat_hint: "Přebijte horní kartu, nebo vezměte spodní",
    last_moves: "Poslední tahy",
    callouts: "Hlášky",
    tap_move: "Ťukněte na svou hromádku a přesuňte její horní kartu",
    tap_move_or_draw: "Lízněte z balíčku, nebo ťukněte na svou hromádku a přesuňte její horní kartu",
    tap_target_move: "Ťukněte na hromádku, kam horní kartu přesunout (na svou = zrušit)",
    secs: "{n} s",
    period_week: "{w}. týden: {from} – {to}",
    rating_line: "{score} · {rank}. místo · {matches}",
    matches_n: "zápasy: {n}",
  },
  ru: {
    app: "Карты",
    prsi: "Прши",
    penki: "Пеньки",
    loading: "Загрузка…",
    signin_title: "Локальная игра",
    signin_hint: "Введите имя, чтобы сесть за стол.",
    name: "Ваше имя",
    signin: "Войти",
    lobby_title: "Новый стол",
    players: "Игроки",
    new_prsi: "Новый стол Прши",
    new_penki: "Новый стол Пеньки",
    leaderboard: "Рейтинг",
    my_rating: "Мой рейтинг",
    sign_out: "Выйти",
    open_in_telegram: "Откройте приложение из бота Karty в Telegram.",
    no_table: "Стола нет. Создайте его командой /new в чате.",
    table_missing: "Этого стола нет или он устарел.",
    not_seated: "Вы зритель: у вас нет места за этим столом.",
    spectator: "Зритель",
    you: "Вы",
    your_turn: "Ваш ход",
    turn_of: "Ходит {name}",
    round: "Раунд {n}/{of}",
    stock: "Колода",
    draw: "Взять",
    draw_n: "Взять {n}",
    stand: "Стою",
    pass: "Пас",
    take: "Взять",
    suit_in_play: "Масть в игре",
    choose_suit: "Выберите масть",
    cancel: "Отмена",
    close: "Закрыть",
    next: "Дальше",
    pending_draw: "+{n}",
    pending_skip: "Стоять или туз",
    cards_n: "карт: {n}",
    round_over: "Раунд {n} окончен",
    match_over: "Матч окончен",
    game_over: "Игра окончена",
    points: "Очки",
    total: "Итого",
    balance: "Баланс",
    place: "Место",
    went_out: "вышел",
    scores: "Счёт",
    faces: "Карты",
    faces_german: "чешские",
    faces_french: "французские",
    settings: "Настройки",
    trump: "Козырь",
    phase1: "Фаза 1: лесенка",
    phase2: "Фаза 2: сброс",
    pile: "Стопка",
    empty_pile: "пусто",
    stumps: "Пеньки",
    stumps_n: "пеньков: {n}",
    drawn: "Вытянутая карта",
    tap_to_draw: "Нажмите на колоду, чтобы тянуть",
    tap_target: "Нажмите на стопку, куда положить карту",
    table: "Стол",
    table_empty: "Стол пуст",
    bottom: "нижняя",
    top: "верхняя",
    bita: "Бита! Стол уходит в отбой.",
    give_title: "Отдайте карту: {name}",
    give_why_you: "Вы поймали игрока {name} без «ОДНА КАРТА!». Каждый, у кого ещё есть карты, отдаёт ему одну: выберите свою.",
    give_why: "{asker} поймал(а) игрока {name} без «ОДНА КАРТА!». Каждый, у кого ещё есть карты, отдаёт ему одну: выберите свою.",
    give_why_plain: "Игрока {name} поймали без «ОДНА КАРТА!». Каждый, у кого ещё есть карты, отдаёт ему одну: выберите свою.",
    give_then: "Следующий: {names}",
    gave_card: "Вы отдали {card}: {name}",
    ev_give_card: "{name} отдаёт {card}: {to}",
    waiting_give: "{name} получает штрафные карты",
    declared: "объявил(а)",
    out: "вышел",
    too_late: "Поздно!",
    rejected: "Нельзя: {reason}",
    stale: "Игра ушла вперёд. Обновлено.",
    too_fast: "Помедленнее.",
    net_error: "Проблема со связью. Повтор…",
    reconnecting: "Переподключение…",
    played_for_you: "Таймер сходил за вас",
    by_timer: "ход за игрока",
    ticker_empty: "Здесь появятся ходы.",
    week: "Неделя",
    month: "Месяц",
    this_chat: "Этот чат",
    everyone: "Все",
    rank: "#",
    player: "Игрок",
    score: "Счёт",
    matches: "Игры",
    no_rows: "Пока нет рейтинговых игр.",
    back: "Назад",
    last_results: "Последние результаты",
    computer: "компьютер",
    ev_play: "{name}: {card}",
    ev_play_suit: "{name}: {card}, заказ {suit}",
    ev_draw_n: "{name} берёт {n}",
    ev_draw_card: "{name} тянет {card}",
    ev_stand: "{name} стоит",
    ev_pass: "{name} пасует",
    ev_turnover: "Сброс перевёрнут в колоду",
    ev_forgiven: "{name}: прощено {n}",
    ev_round_end: "Раунд {n} окончен, вышел(а) {name}",
    ev_deal: "Раздача раунда {n}",
    ev_match_end: "Матч окончен",
    ev_move: "{name} перекладывает {card} → {to}",
    ev_place: "{name} кладёт {card} → {to}",
    ev_place_own: "{name} кладёт {card} себе",
    ev_zevok: "{name}: «ЗЕВОК!» — платит {to}",
    ev_penalty_move: "{from} → {to}: {card}",
    ev_phase2: "Фаза 2 — заходит {name}",
    ev_stumps: "{name} берёт пеньки",
    ev_take: "{name} берёт {card}",
    ev_bita: "Бита! Заходит {name}",
    ev_one_card: "{name}: «ОДНА КАРТА!»",
    ev_how_many: "{name}: «СКОЛЬКО КАРТ?» — пойман(а) {caught}",
    ev_how_many_none: "{name}: «СКОЛЬКО КАРТ?»",
    ev_give: "{name} отдаёт карту: {to}",
    ev_out: "Вышли: {names} (место {place})",
    ev_game_end: "Игра окончена",
    own_pile: "своя стопка",
    pts: "{n} очк.",
    turn_timer: "Таймер хода",
    timer_off: "выкл.",
    my_tables: "Мои столы",
    discarded: "Бита",
    lead_hint: "Ваш заход: сыграйте карту",
    beat_hint: "Побейте верхнюю карту или возьмите нижнюю",
    last_moves: "Последние ходы",
    callouts: "Выкрики",
    tap_move: "Нажмите на свою стопку, чтобы переложить верхнюю карту",
    tap_move_or_draw: "Возьмите карту из колоды или нажмите на свою стопку, чтобы переложить верхнюю",
    tap_target_move: "Нажмите на стопку, куда переложить верхнюю карту (на свою — отмена)",
    secs: "{n} с",
    period_week: "Неделя {w}: {from} – {to}",
    rating_line: "{score} · место {rank} · {matches}",
    matches_n: "игр: {n}",
  },
};

const REASONS = {
  en: { illegal: "that move is not allowed now", not_your_turn: "it is not your turn", not_in_hand: "you do not hold that card", game_over: "the game is over", bad_action: "bad action" },
  cs: { illegal: "tento tah teď nejde", not_your_turn: "nejste na tahu", not_in_hand: "tu kartu nemáte", game_over: "hra skončila", bad_action: "chybný tah" },
  ru: { illegal: "так сейчас нельзя", not_your_turn: "сейчас не ваш ход", not_in_hand: "у вас нет этой карты", game_over: "игра окончена", bad_action: "неверное действие" },
};

// Card names: the German-suited Czech pack (Prší) and the French pack.
const GERMAN = {
  cs: {
    suits: { h: "červené", d: "kule", c: "žaludy", s: "zelené" },
    ranks: { 7: "sedma", 8: "osma", 9: "devítka", 10: "desítka", J: "spodek", Q: "svršek", K: "král", A: "eso" },
    index: { J: "S", Q: "Sv", K: "K", A: "E" },
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
export function setLanguage(code) {
  const short = String(code || "").toLowerCase().slice(0, 2);
  lang = LANGS.includes(short) ? short : "en";
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

export function reasonText(code, detail) {
  return REASONS[lang][code] || detail || code;
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
