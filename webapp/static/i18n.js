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
    stale: "The table moved on. Updated.",
    too_fast: "Slow down a little.",
    net_error: "Connection problem. Retrying…",
    reconnecting: "Reconnecting…",
    played_for_you: "The timer played for you",
    by_timer: "by the timer",
    ticker_empty: "Moves will appear here.",
    week: "Week",
    month: "Month",
    this_chat: "This chat",
    everyone: "Everyone",
    rank: "#",
    player: "Player",
    score: "Score",
    matches: "Matches",
    no_rows: "No rated matches yet. Matches with computer players are not rated.",
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
    tap_target_move: "Now tap the opponent's pile it goes to (your own pile cancels)",
    secs: "{n} s",
    period_week: "Week {w}: {from} – {to}",
    rating_line: "{score} · place {rank} · {matches}",
    matches_n: "matches: {n}",
    co_game_over: "The game is over",
    co_late: "Too late: {name} called {callout} first",
    co_late_caught: "Too late: {name} asked «СКОЛЬКО КАРТ?» before you declared",
    co_phase: "{callout} belongs to phase {n}",
    co_zevok_self: "You cannot call «ЗЕВОК!» on your own move",
    co_zevok_none: "No blunder to call (a «ЗЕВОК!» counts until the next player moves)",
    co_nobody_owes: "Nobody owes a declaration",
    co_one_card_many: "You hold {cards}: «ОДНА КАРТА!» is for your last card",
    co_one_card_empty: "You hold no cards",
    co_one_card_done: "You have already declared",
    co_one_card_closed: "Nothing to declare: it is due right after the move that leaves you one card, until the next play or take",
    by_timer_you: "the timer played for you",
    faces_to_french: "Switch to French cards",
    faces_to_german: "Switch to Czech cards",
    rated_note: "Rated: this result counts for the week's and the month's leaderboard.",
    unrated_computers: "Not rated: matches with computer players do not count for the leaderboard.",
    unrated: "Not rated: this match does not count for the leaderboard.",
    r_seven_pending: "A 7 is on: play a 7 too, or draw",
    r_ace_pending: "An Ace is on: play an Ace, or stand",
    r_no_follow: "{card} matches neither the suit in play ({suit}) nor the top card {top}",
    r_nothing_to_draw: "Nothing left to draw: play or pass",
    r_no_ace: "No Ace is on: nothing to stand against",
    r_pass_draw: "Pass only when nothing can be drawn: draw instead",
    r_must_play: "You can play, so you must",
    r_place_first: "Place the drawn card first",
    r_stock_empty: "The stock is empty",
    r_pile_empty: "Your pile is empty",
    r_move_opp: "A move goes to an opponent's pile",
    r_fits_none: "{card} fits no opponent's pile",
    r_first_fit: "{card} must go to {name}: the first opponent clockwise it fits",
    r_no_fit: "{card} does not fit {name}'s pile",
    r_ks_lead: "K♠ may lead only as your last card, with no stumps left",
    r_no_beat: "{card} does not beat {top}",
    r_lead: "The table is empty: lead a card",
    r_phase1: "That is a phase 1 move",
    r_phase2: "That is a phase 2 move",
    r_no_give: "You owe no penalty card now",
    r_not_your_turn: "It is not your turn",
    r_not_in_hand: "You do not hold that card",
    r_game_over: "The game is over",
    r_illegal: "That move is not possible now",
    r_bad_action: "That is not a move of this game",
    chat_local: "Local play",
    chat_private: "Private chat",
    chat_group: "Group chat",
    chat_topic: "Group topic",
    started_in: "{chat} · started {when}",
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
    stale: "Hra pokročila. Obnoveno.",
    too_fast: "Trochu pomaleji.",
    net_error: "Potíže se spojením. Zkouším znovu…",
    reconnecting: "Připojuji znovu…",
    played_for_you: "Časovač zahrál za vás",
    by_timer: "zahrál časovač",
    ticker_empty: "Tady se objeví tahy.",
    week: "Týden",
    month: "Měsíc",
    this_chat: "Tento chat",
    everyone: "Všichni",
    rank: "#",
    player: "Hráč",
    score: "Skóre",
    matches: "Zápasy",
    no_rows: "Zatím žádné hodnocené zápasy. Zápasy s počítačem se nehodnotí.",
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
    tap_target_move: "Teď ťukněte na hromádku soupeře, kam karta půjde (svou hromádkou zrušíte)",
    secs: "{n} s",
    period_week: "{w}. týden: {from} – {to}",
    rating_line: "{score} · {rank}. místo · {matches}",
    matches_n: "zápasy: {n}",
    co_game_over: "Hra skončila",
    co_late: "Pozdě: {name} volal(a) {callout} dřív",
    co_late_caught: "Pozdě: {name} se zeptal(a) «СКОЛЬКО КАРТ?» dřív, než jste ohlásili",
    co_phase: "{callout} patří do {n}. fáze",
    co_zevok_self: "«ЗЕВОК!» nemůžete volat na vlastní tah",
    co_zevok_none: "Není co volat (zevok platí jen do tahu dalšího hráče)",
    co_nobody_owes: "Nikdo nedluží ohlášení",
    co_one_card_many: "Držíte {cards}: «ОДНА КАРТА!» se hlásí u poslední karty",
    co_one_card_empty: "Nemáte žádné karty",
    co_one_card_done: "Už jste ohlásili",
    co_one_card_closed: "Není co hlásit: hlásí se hned po tahu, po kterém vám zbude jedna karta, do dalšího zahrání nebo vzetí",
    by_timer_you: "za vás zahrál časovač",
    faces_to_french: "Přepnout na francouzské karty",
    faces_to_german: "Přepnout na české karty",
    rated_note: "Hodnoceno: výsledek se počítá do týdenního i měsíčního žebříčku.",
    unrated_computers: "Nehodnoceno: zápasy s počítačem se do žebříčku nepočítají.",
    unrated: "Nehodnoceno: tento zápas se do žebříčku nepočítá.",
    r_seven_pending: "Platí sedma: dejte taky sedmu, nebo lízněte",
    r_ace_pending: "Platí eso: dejte taky eso, nebo stůjte",
    r_no_follow: "{card} nesedí ani na barvu ve hře ({suit}), ani na {top}",
    r_nothing_to_draw: "Není co lízat: zahrajte, nebo pasujte",
    r_no_ace: "Neplatí žádné eso: není proti čemu stát",
    r_pass_draw: "Pasovat lze, jen když není co lízat: lízněte si",
    r_must_play: "Můžete zahrát, tak musíte",
    r_place_first: "Nejdřív položte líznutou kartu",
    r_stock_empty: "Balíček je prázdný",
    r_pile_empty: "Vaše hromádka je prázdná",
    r_move_opp: "Přesouvá se na hromádku soupeře",
    r_fits_none: "{card} nepasuje na žádnou hromádku soupeře",
    r_first_fit: "{card} musí k hráči {name}: k prvnímu soupeři po směru, kam pasuje",
    r_no_fit: "{card} nepasuje na hromádku hráče {name}",
    r_ks_lead: "K♠ smí vynést jen jako poslední karta a bez pěnek",
    r_no_beat: "{card} nepřebije {top}",
    r_lead: "Stůl je prázdný: vyneste kartu",
    r_phase1: "To je tah 1. fáze",
    r_phase2: "To je tah 2. fáze",
    r_no_give: "Teď žádnou trestnou kartu nedlužíte",
    r_not_your_turn: "Nejste na tahu",
    r_not_in_hand: "Tu kartu nemáte",
    r_game_over: "Hra skončila",
    r_illegal: "Tento tah teď nejde",
    r_bad_action: "To není tah této hry",
    chat_local: "Místní hra",
    chat_private: "Soukromý chat",
    chat_group: "Skupina",
    chat_topic: "Téma ve skupině",
    started_in: "{chat} · začátek {when}",
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
    stale: "Игра ушла вперёд. Обновлено.",
    too_fast: "Помедленнее.",
    net_error: "Проблема со связью. Повтор…",
    reconnecting: "Переподключение…",
    played_for_you: "Таймер сходил за вас",
    by_timer: "сходил таймер",
    ticker_empty: "Здесь появятся ходы.",
    week: "Неделя",
    month: "Месяц",
    this_chat: "Этот чат",
    everyone: "Все",
    rank: "#",
    player: "Игрок",
    score: "Счёт",
    matches: "Игры",
    no_rows: "Пока нет рейтинговых игр. Игры с компьютером не учитываются.",
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
    tap_target_move: "Теперь нажмите на стопку соперника, куда её переложить (своя стопка — отмена)",
    secs: "{n} с",
    period_week: "Неделя {w}: {from} – {to}",
    rating_line: "{score} · место {rank} · {matches}",
    matches_n: "игр: {n}",
    co_game_over: "Игра окончена",
    co_late: "Поздно: {name} крикнул(а) {callout} раньше",
    co_late_caught: "Поздно: {name} спросил(а) «СКОЛЬКО КАРТ?» раньше, чем вы объявили",
    co_phase: "{callout} — только в фазе {n}",
    co_zevok_self: "Нельзя кричать «ЗЕВОК!» на свой ход",
    co_zevok_none: "Зевка нет (кричать можно до хода следующего игрока)",
    co_nobody_owes: "Никто не должен объявлять",
    co_one_card_many: "У вас {cards}: «ОДНА КАРТА!» — для последней карты",
    co_one_card_empty: "У вас нет карт",
    co_one_card_done: "Вы уже объявили",
    co_one_card_closed: "Объявлять нечего: объявляют сразу после хода, после которого осталась одна карта, до следующего хода или взятия",
    by_timer_you: "таймер сходил за вас",
    faces_to_french: "Переключить на французские карты",
    faces_to_german: "Переключить на чешские карты",
    rated_note: "С рейтингом: результат идёт в таблицы лидеров недели и месяца.",
    unrated_computers: "Без рейтинга: игры с компьютером не идут в таблицу лидеров.",
    unrated: "Без рейтинга: эта игра не идёт в таблицу лидеров.",
    r_seven_pending: "Действует семёрка: положите семёрку или возьмите карты",
    r_ace_pending: "Действует туз: положите туза или стойте",
    r_no_follow: "{card} не подходит ни по масти ({suit}), ни к карте {top}",
    r_nothing_to_draw: "Брать нечего: ходите или пасуйте",
    r_no_ace: "Туз не действует: стоять не нужно",
    r_pass_draw: "Пас — только когда брать нечего: возьмите карту",
    r_must_play: "Можете сходить — значит, должны",
    r_place_first: "Сначала положите взятую карту",
    r_stock_empty: "Колода пуста",
    r_pile_empty: "Ваша стопка пуста",
    r_move_opp: "Перекладывают только на стопку соперника",
    r_fits_none: "{card} не подходит ни на одну стопку соперников",
    r_first_fit: "{card} должна лечь к игроку {name}: первому по кругу, кому подходит",
    r_no_fit: "{card} не подходит на стопку игрока {name}",
    r_ks_lead: "К♠ можно выводить только последней картой и без пеньков",
    r_no_beat: "{card} не бьёт {top}",
    r_lead: "Стол пуст: выложите карту",
    r_phase1: "Это ход первой фазы",
    r_phase2: "Это ход второй фазы",
    r_no_give: "Сейчас вы не должны штрафную карту",
    r_not_your_turn: "Сейчас не ваш ход",
    r_not_in_hand: "У вас нет этой карты",
    r_game_over: "Игра окончена",
    r_illegal: "Так сейчас нельзя",
    r_bad_action: "Такого хода в этой игре нет",
    chat_local: "Локальная игра",
    chat_private: "Личный чат",
    chat_group: "Группа",
    chat_topic: "Тема группы",
    started_in: "{chat} · начало {when}",
  },
};


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
        params[part] = part === "name" ? nameOf(x) : part === "suit" ? suitName(x, faces) : cardShort(x, faces);
      });
      return t(key, params);
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
