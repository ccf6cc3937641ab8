"""Demo conversations, generated from templates of realistic agents by a seeded ``random.Random``.

Pure Python (no Django): ``demo_sessions()`` returns the same conversations for the same seed, so
``seed_demo`` is deterministic and can be idempotent by external id. Four agents in two projects:

- a travel assistant (parallel weather/flight calls, hotel search, bookings that sometimes fail),
- a customer-support agent whose customers write in English, German and Japanese (order lookups, returns,
  refunds, "order not found" tool errors),
- a code-review bot (multi-step tool loops: diff, files, tests that fail with tracebacks, review comments),
- a research agent on a reasoning model (web search returning several KB of JSON, page fetches, reasoning),
  including one long crawl of more than 5,000 messages,

plus sessions broken in each way the protocol breaks, each titled "Broken: ...".
"""
from __future__ import annotations

import datetime as dt
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.memory.schema import Conversation, FunctionCall, Message, ToolCall

DEFAULT_SEED = 2026
# A fixed epoch keeps the data identical from run to run (and machine to machine).
EPOCH = dt.datetime(2026, 11, 2, 8, 0, tzinfo=dt.UTC)
LONG_SESSION_STEPS = 2600  # tool-loop steps of the long crawl: 2 messages each, so more than 5,000 messages


@dataclass(frozen=True)
class DemoProject:
    slug: str
    name: str


@dataclass(frozen=True)
class DemoAgent:
    project: str
    slug: str
    name: str
    description: str
    model: str
    context_window: int
    source_format: str


@dataclass
class DemoSession:
    project: str
    agent: str
    conversation: Conversation


PROJECTS: tuple[DemoProject, ...] = (
    DemoProject("acme-customer", "Acme Customer Care"),
    DemoProject("platform-eng", "Platform Engineering"),
)

AGENTS: tuple[DemoAgent, ...] = (
    DemoAgent("acme-customer", "travel-assistant", "Travel assistant",
              "Plans trips: flights, hotels and weather, and books them.", "gpt-4o", 128_000, "openai"),
    DemoAgent("acme-customer", "support-agent", "Support agent",
              "Answers customers of the Acme shop in their language: orders, returns, refunds.",
              "claude-sonnet-4", 200_000, "anthropic"),
    DemoAgent("platform-eng", "code-review-bot", "Code-review bot",
              "Reviews pull requests: reads the diff and files, runs the tests, comments.", "gpt-4.1", 128_000,
              "langchain"),
    DemoAgent("platform-eng", "research-agent", "Research agent",
              "Searches the web and writes sourced reports.", "o3-mini", 200_000, "autogen"),
)


# --- a small conversation builder ---------------------------------------------------------------------------


class Chat:
    """Appends messages with realistic ids and timestamps."""

    def __init__(self, rng: random.Random, start: dt.datetime, id_style: str = "openai") -> None:
        self.rng = rng
        self.now = start
        self.messages: list[Message] = []
        self.id_style = id_style

    def _tick(self, low: float = 1.0, high: float = 20.0) -> dt.datetime:
        self.now += dt.timedelta(seconds=round(self.rng.uniform(low, high), 3))
        return self.now

    def call_id(self) -> str:
        alphabet = string.ascii_letters + string.digits
        if self.id_style == "anthropic":
            return "toolu_" + "".join(self.rng.choice(alphabet) for _ in range(24))
        return "call_" + "".join(self.rng.choice(alphabet) for _ in range(24))

    def _add(self, **fields: Any) -> Message:
        message = Message(external_id=f"msg_{len(self.messages):05d}", created_at=self._tick(), **fields)
        self.messages.append(message)
        return message

    def system(self, text: str) -> None:
        self._add(role="system", content=text)

    def user(self, text: str) -> None:
        self._add(role="user", content=text)

    def assistant(self, text: str | None, reasoning: str | None = None, usage: dict[str, Any] | None = None) -> None:
        self._add(role="assistant", content=text, reasoning=reasoning, usage=usage)

    def call(
        self, calls: list[tuple[str, dict[str, Any]]], text: str | None = None, reasoning: str | None = None,
        ids: list[str] | None = None, raw_arguments: list[str | None] | None = None,
    ) -> list[str]:
        call_ids = ids or [self.call_id() for _ in calls]
        tool_calls = []
        for i, (name, args) in enumerate(calls):
            given = raw_arguments[i] if raw_arguments else None
            raw = given if given is not None else json.dumps(args, ensure_ascii=False)
            tool_calls.append(ToolCall(id=call_ids[i], function=FunctionCall(name=name, arguments=raw)))
        self._add(role="assistant", content=text, tool_calls=tool_calls, reasoning=reasoning)
        return call_ids

    def result(self, call_id: str, content: Any, is_error: bool | None = None) -> None:
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        self.now += dt.timedelta(seconds=round(self.rng.uniform(0.2, 4.0), 3))
        self._add(role="tool", content=text, tool_call_id=call_id, is_error=is_error)


# --- travel assistant ---------------------------------------------------------------------------------------

CITIES = [
    ("Lisbon", "LIS", "Portugal", "EUR"),
    ("Kyoto", "KIX", "Japan", "JPY"),
    ("Reykjavík", "KEF", "Iceland", "ISK"),
    ("Barcelona", "BCN", "Spain", "EUR"),
    ("Vienna", "VIE", "Austria", "EUR"),
    ("Mexico City", "MEX", "Mexico", "MXN"),
    ("Istanbul", "IST", "Türkiye", "TRY"),
    ("Cape Town", "CPT", "South Africa", "ZAR"),
    ("Oslo", "OSL", "Norway", "NOK"),
    ("Hanoi", "HAN", "Vietnam", "VND"),
    ("Montréal", "YUL", "Canada", "CAD"),
    ("Edinburgh", "EDI", "United Kingdom", "GBP"),
]
ORIGINS = [("New York", "JFK"), ("London", "LHR"), ("Berlin", "BER"), ("Chicago", "ORD"), ("Paris", "CDG")]
# Airline -> its IATA designator, so that a flight number reads as that airline's ("TK1234" is Turkish Airlines).
AIRLINES = {"TAP Air Portugal": "TP", "Lufthansa": "LH", "Iberia": "IB", "KLM": "KL", "United": "UA", "Delta": "DL",
            "Air France": "AF", "Icelandair": "FI", "Turkish Airlines": "TK"}
# Average daily high (°C) per month, January first (rounded climate normals), so forecasts fit the city and
# the season: Oslo in January stays around freezing, Cape Town's summer is in January.
MONTHLY_HIGHS = {
    "Lisbon": (15, 16, 18, 20, 22, 26, 28, 28, 27, 23, 18, 15),
    "Kyoto": (9, 10, 14, 20, 25, 28, 32, 33, 29, 23, 17, 11),
    "Reykjavík": (3, 3, 4, 6, 10, 12, 14, 14, 11, 7, 4, 3),
    "Barcelona": (14, 15, 17, 19, 22, 26, 28, 29, 26, 22, 17, 14),
    "Vienna": (3, 5, 10, 16, 21, 24, 27, 26, 21, 15, 8, 4),
    "Mexico City": (22, 24, 26, 27, 27, 25, 24, 24, 23, 23, 22, 22),
    "Istanbul": (9, 9, 12, 16, 21, 26, 28, 29, 25, 20, 15, 11),
    "Cape Town": (27, 27, 26, 24, 21, 19, 18, 19, 20, 22, 24, 26),
    "Oslo": (0, 0, 4, 10, 16, 20, 22, 21, 16, 9, 4, 1),
    "Hanoi": (20, 21, 23, 28, 32, 33, 33, 32, 31, 29, 26, 22),
    "Montréal": (-5, -3, 2, 11, 19, 24, 26, 25, 20, 13, 6, -2),
    "Edinburgh": (7, 8, 10, 12, 15, 18, 19, 19, 17, 14, 10, 7),
}
# What the travel assistant says, in the customer's language (the system prompt asks for it).
TRAVEL_TEXT: dict[str, dict[str, Any]] = {
    "es": {
        "openers": [
            "Hola! Quiero viajar de {origin} a {city} el {depart:%d/%m} por {nights} noches. ¿Qué tiempo hará y qué "
            "vuelos hay?"
        ],
        "feel": {"cold": "frío", "cool": "fresco", "mild": "templado", "warm": "cálido"},
        "forecast": "En {city} hará un tiempo {feel}: máximas entre {low} y {high} °C. El vuelo más barato es "
            "{airline} {flight} por {price} $ con {stops} escala(s). ¿Busco hoteles? ¿Cuál es su presupuesto por "
            "noche?",
        "hotel_asks": [
            "Sí, por favor, menos de {budget} $ por noche, en el centro.",
            "Hoteles de unos {budget} $ por noche, en una zona tranquila.",
        ],
        "picks": "Mis mejores opciones dentro del presupuesto:",
        "pick": "{i}. {name} — ★{rating} ({reviews} reseñas), {price} $/noche, a {km} km del centro{breakfast}",
        "breakfast": ", desayuno incluido",
        "book_offer": "¿Quiere que reserve alguno?",
        "book": "Reserve el {nth}, por favor. Tarjeta terminada en {card}.",
        "nth": ["primero", "segundo", "tercero"],
        "sold_out": "{hotel} se acaba de agotar para esas fechas. {alt} (★{rating}, {price} $/noche) sigue disponible. "
            "¿Lo reservo en su lugar?",
        "go_ahead": "Vale, adelante con ese.",
        "booked": "Reservado: {hotel}, del {depart} al {back}, confirmación {code}. Total {total} $. ¡Buen viaje a "
            "{city}!",
    },
    "fr": {
        "openers": [
            "Bonjour, je cherche un vol {origin} – {city} pour le {depart:%d/%m}, {nights} nuits. Quel temps fera-t-il "
            "là-bas ?"
        ],
        "feel": {"cold": "froid", "cool": "frais", "mild": "doux", "warm": "chaud"},
        "forecast": "À {city}, il fera plutôt {feel} : des maximales entre {low} et {high} °C. Le vol le moins cher "
            "est {airline} {flight} à {price} $ avec {stops} escale(s). Voulez-vous que je cherche des hôtels ? Quel "
            "est votre budget par nuit ?",
        "hotel_asks": [
            "Oui, s'il vous plaît, moins de {budget} $ la nuit, dans le centre.",
            "Des hôtels autour de {budget} $ la nuit, dans un quartier calme.",
        ],
        "picks": "Mes meilleures suggestions dans votre budget :",
        "pick": "{i}. {name} — ★{rating} ({reviews} avis), {price} $/nuit, à {km} km du centre{breakfast}",
        "breakfast": ", petit-déjeuner inclus",
        "book_offer": "Voulez-vous que je réserve l'un d'eux ?",
        "book": "Réservez le {nth}, s'il vous plaît. Carte se terminant par {card}.",
        "nth": ["premier", "deuxième", "troisième"],
        "sold_out": "{hotel} vient d'être complet pour ces dates. {alt} (★{rating}, {price} $/nuit) est encore "
            "disponible : voulez-vous que je le réserve à la place ?",
        "go_ahead": "D'accord, réservez celui-là.",
        "booked": "C'est réservé : {hotel}, du {depart} au {back}, confirmation {code}. Total {total} $. Bon voyage à "
            "{city} !",
    },
    "en": {
        "openers": [
            "I'd like to go to {city} from {origin} around {depart:%B %d} for {nights} nights. What's the weather like "
            "then, and are there decent flights?",
            "Planning a trip to {city} ({country}) — leaving {origin} on {depart_iso}, back {back_iso}. Can you check "
            "flights and the weather?",
        ],
        "feel": {"cold": "cold", "cool": "cool", "mild": "mild", "warm": "warm"},
        "forecast": "{city} will be mostly {feel}: highs between {low} and {high} °C. The cheapest flight is {airline} "
            "{flight} at ${price} with {stops} stop(s). Shall I look for hotels? What's your budget per night?",
        "hotel_asks": [
            "Yes please, under {budget} a night, somewhere central.",
            "Hotels around {budget}/night, quiet area, good breakfast.",
            "Max {budget} per night. Walkable to the old town if possible.",
        ],
        "picks": "Top picks within budget:",
        "pick": "{i}. {name} — ★{rating} ({reviews} reviews), ${price}/night, {km} km from the centre{breakfast}",
        "breakfast": ", breakfast included",
        "book_offer": "Want me to book one of them?",
        "book": "Book the {nth} one, please. Card ending {card}.",
        "nth": ["first", "second", "third"],
        "sold_out": "{hotel} just sold out for those dates. {alt} (★{rating}, ${price}/night) is still available — "
            "shall I book it instead?",
        "go_ahead": "Ok, go ahead with that one.",
        "booked": "Booked: {hotel}, {depart} to {back}, confirmation {code}. Total ${total}. Have a great trip to "
            "{city}!",
    },
}
HOTEL_WORDS = ["Casa", "Hotel", "Residence", "Inn", "Palace", "Loft", "Suites", "House"]
HOTEL_NAMES = ["Aurora", "do Rio", "Sakura", "Miramar", "Central", "Belvedere", "Harbour", "Old Town", "Linden", "Azul"]
TRAVEL_SYSTEM = (
    "You are Acme Travel's trip planner. Use the tools to check weather, flights and hotels before you suggest "
    "anything. Quote prices in the customer's currency. Never book without an explicit confirmation. Today is "
    "{today}."
)


def _travel_session(rng: random.Random, n: int, start: dt.datetime) -> Conversation:
    chat = Chat(rng, start)
    city, airport, country, currency = rng.choice(CITIES)
    origin, origin_code = rng.choice(ORIGINS)
    nights = rng.randint(2, 9)
    depart = (start + dt.timedelta(days=rng.randint(10, 70))).date()
    back = depart + dt.timedelta(days=nights)
    budget = rng.choice([120, 150, 200, 250, 300])
    chat.system(TRAVEL_SYSTEM.format(today=start.date().isoformat()))
    lang = rng.choice(["en", "en", "es", "fr"])
    text = TRAVEL_TEXT[lang]
    chat.user(rng.choice(text["openers"]).format(
        city=city, origin=origin, depart=depart, nights=nights, country=country, depart_iso=depart.isoformat(),
        back_iso=back.isoformat(),
    ))
    weather_id, flights_id = chat.call([
        ("get_weather", {"city": city, "date_from": depart.isoformat(), "date_to": back.isoformat()}),
        ("search_flights", {"origin": origin_code, "destination": airport, "date": depart.isoformat(),
                            "return_date": back.isoformat(), "passengers": 1}),
    ])
    days = [depart + dt.timedelta(days=i) for i in range(min(nights, 7))]
    # A day's high: the month's normal give or take a few degrees.
    highs = [MONTHLY_HIGHS[city][day.month - 1] + rng.randint(-3, 3) for day in days]
    chat.result(weather_id, {
        "city": city, "unit": "celsius",
        "days": [{"date": day.isoformat(), "high": h, "low": h - rng.randint(3, 8),
                  "precipitation_mm": round(rng.uniform(0, 12), 1),
                  "summary": rng.choice(["snow", "overcast", "clear", "sleet"] if h <= 2
                                        else ["sunny", "partly cloudy", "showers", "overcast", "windy", "clear"])}
                 for day, h in zip(days, highs, strict=True)],
    })
    flights: list[dict[str, Any]] = []
    for _ in range(rng.randint(3, 6)):
        airline = rng.choice(sorted(AIRLINES))
        flights.append(
            {
                "flight": f"{AIRLINES[airline]}{rng.randint(100, 1999)}",
                "airline": airline,
                "depart": f"{depart}T{rng.randint(6, 22):02d}:{rng.choice(['05', '20', '35', '50'])}",
                "stops": rng.choice([0, 0, 1, 1, 2]),
                "duration_min": rng.randint(150, 1100),
                "price": {"amount": rng.randint(180, 1400), "currency": "USD"},
                "fare_class": rng.choice(["basic", "standard", "flex"]),
            }
        )
    chat.result(flights_id, {"results": flights, "searched_at": chat.now.isoformat()})
    cheapest = min(flights, key=lambda f: f["price"]["amount"])
    mean_high = sum(highs) / len(highs)
    feel = "cold" if mean_high < 5 else "cool" if mean_high < 13 else "mild" if mean_high < 22 else "warm"
    chat.assistant(text["forecast"].format(
        city=city, feel=text["feel"][feel], low=min(highs), high=max(highs), airline=cheapest["airline"],
        flight=cheapest["flight"], price=cheapest["price"]["amount"], stops=cheapest["stops"],
    ))
    chat.user(rng.choice(text["hotel_asks"]).format(budget=budget))
    (hotels_id,) = chat.call(
        [
            (
                "search_hotels",
                {
                    "city": city,
                    "check_in": depart.isoformat(),
                    "check_out": back.isoformat(),
                    "max_price": budget,
                    "currency": "USD",
                    "sort": "rating",
                },
            )
        ]
    )
    hotels: list[dict[str, Any]] = [
        {"id": f"h_{rng.randint(10000, 99999)}", "name": f"{rng.choice(HOTEL_WORDS)} {rng.choice(HOTEL_NAMES)}",
         "rating": round(rng.uniform(3.6, 4.9), 1), "reviews": rng.randint(40, 4200),
         "price_per_night": rng.randint(budget // 2, budget), "currency": "USD",
         "distance_to_center_km": round(rng.uniform(0.2, 4.5), 1), "breakfast_included": rng.random() < 0.5,
         "free_cancellation": rng.random() < 0.7}
        for _ in range(rng.randint(4, 8))
    ]
    chat.result(hotels_id, {"results": hotels, "total": len(hotels) + rng.randint(0, 40)})
    top = sorted(hotels, key=lambda h: -h["rating"])[:3]
    chat.assistant(
        "\n".join(
            [
                text["picks"],
                *(
                    text["pick"].format(
                        i=i + 1,
                        name=h["name"],
                        rating=h["rating"],
                        reviews=h["reviews"],
                        price=h["price_per_night"],
                        km=h["distance_to_center_km"],
                        breakfast=text["breakfast"] if h["breakfast_included"] else "",
                    )
                    for i, h in enumerate(top)
                ),
                text["book_offer"],
            ]
        )
    )
    pick = rng.randrange(len(top))
    chat.user(text["book"].format(nth=text["nth"][pick], card=rng.randint(1000, 9999)))
    hotel = top[pick]
    (book_id,) = chat.call([("book_hotel", {"hotel_id": hotel["id"], "check_in": depart.isoformat(),
                                            "check_out": back.isoformat(), "guests": 1})])
    if rng.random() < 0.35:
        chat.result(
            book_id,
            {"error": "RoomUnavailable", "message": f"No rooms left at {hotel['name']} for {depart}."},
            is_error=True,
        )
        alt = top[(pick + 1) % len(top)]
        chat.assistant(text["sold_out"].format(hotel=hotel["name"], alt=alt["name"], rating=alt["rating"],
                                               price=alt["price_per_night"]))
        chat.user(text["go_ahead"])
        hotel = alt
        (book_id,) = chat.call([("book_hotel", {"hotel_id": hotel["id"], "check_in": depart.isoformat(),
                                                "check_out": back.isoformat(), "guests": 1})])
    code = "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(6))
    chat.result(book_id, {"status": "confirmed", "confirmation": code, "hotel": hotel["name"],
                          "total": {"amount": hotel["price_per_night"] * nights, "currency": "USD"}})
    chat.assistant(text["booked"].format(hotel=hotel["name"], depart=depart, back=back, code=code,
                                         total=hotel["price_per_night"] * nights, city=city))
    return Conversation(
        messages=chat.messages,
        external_id=f"trip-{n:04d}-{airport.lower()}",
        title=f"Trip to {city} from {origin}, {depart:%b} {depart.day}–{back:%b} {back.day}",
        started_at=start,
        source_format="openai",
    )


# --- customer support ---------------------------------------------------------------------------------------

PRODUCTS = ["espresso machine", "noise-cancelling headphones", "standing desk", "robot vacuum", "rain jacket",
            "cast-iron pan", "e-reader", "mechanical keyboard"]
PRODUCTS_DE = {"espresso machine": "Espressomaschine", "noise-cancelling headphones": "Kopfhörer",
               "standing desk": "Stehschreibtisch", "robot vacuum": "Saugroboter", "rain jacket": "Regenjacke",
               "cast-iron pan": "Gusseisenpfanne", "e-reader": "E-Reader", "mechanical keyboard": "Tastatur"}
PRODUCTS_JA = {
    "espresso machine": "エスプレッソマシン",
    "noise-cancelling headphones": "ノイズキャンセリングヘッドホン",
    "standing desk": "スタンディングデスク",
    "robot vacuum": "ロボット掃除機",
    "rain jacket": "レインジャケット",
    "cast-iron pan": "鋳鉄フライパン",
    "e-reader": "電子書籍リーダー",
    "mechanical keyboard": "メカニカルキーボード",
}
NAMES = {"en": ["Dana Whitfield", "Marcus Lee", "Priya Raman", "Tom Becker"],
         "de": ["Jürgen Weiß", "Anna Schäfer", "Lukas Müller", "Sabine Groß"],
         "ja": ["佐藤 花子", "鈴木 一郎", "高橋 美咲", "田中 健太"]}
SUPPORT_SYSTEM = (
    "You are the customer-support agent of the Acme shop. Answer in the customer's language. Look orders up "
    "before you promise anything. Returns are free within 30 days; refunds go back to the original payment "
    "method within 5 business days. Escalate anything about safety to a human."
)
SUPPORT_TEXT = {
    "en": {
        "late": "Hi, my order {order} still hasn't arrived. It's been over a week. Can you check where it is?",
        "broken": "The {product} I received ({order}) is broken — it makes a grinding noise. I want to return it.",
        "thanks": "Great, thank you so much!",
        "late_answer": "Your order {order} left our warehouse on {shipped} and is with {carrier} (tracking "
            "{tracking}). The carrier now expects delivery on {eta}. Sorry for the wait!",
        "return_answer": "I'm sorry about the {product}. I've created a free return label: {label}. Once we receive "
            "it, your refund of {amount} will reach your card within 5 business days.",
        "not_found": "I couldn't find an order with the number {order}. Could you double-check it? It starts with ACM- "
            "and has 8 digits.",
        "fixed": "Sorry, typo — it's {order}.",
    },
    "de": {
        "late": "Hallo, meine Bestellung {order} ist immer noch nicht angekommen. Können Sie bitte nachsehen, wo sie "
            "bleibt?",
        "broken": "Guten Tag, die {product} aus Bestellung {order} ist defekt – sie macht seltsame Geräusche. Ich "
            "möchte sie zurückgeben.",
        "thanks": "Vielen Dank für die schnelle Hilfe!",
        "late_answer": "Ihre Bestellung {order} hat unser Lager am {shipped} verlassen und ist bei {carrier} "
            "(Sendungsnummer {tracking}). Die Zustellung ist jetzt für den {eta} angekündigt. Entschuldigen Sie die "
            "Verzögerung!",
        "return_answer": "Das tut mir leid. Ich habe ein kostenloses Rücksendeetikett erstellt: {label}. Sobald die "
            "{product} bei uns ist, erstatten wir {amount} innerhalb von 5 Werktagen.",
        "not_found": "Ich konnte keine Bestellung mit der Nummer {order} finden. Könnten Sie die Nummer bitte prüfen? "
            "Sie beginnt mit ACM- und hat 8 Ziffern.",
        "fixed": "Entschuldigung, Tippfehler – es ist {order}.",
    },
    "ja": {
        "late": "こんにちは。注文番号{order}の商品がまだ届いていません。配送状況を確認していただけますか？",
        "broken": "届いた{product}（注文{order}）が壊れていました。異音がします。返品したいです。",
        "thanks": "ありがとうございました。助かりました。",
        "late_answer": "ご注文{order}は{shipped}に倉庫から出荷され、現在{carrier}が配送中です（追跡番号{tracking}）。"
        "お届け予定日は{eta}です。お待たせして申し訳ございません。",
        "return_answer": "ご不便をおかけして申し訳ございません。無料の返品ラベルを作成しました：{label}。"
        "{product}が到着しましたら、{amount}を5営業日以内にご返金いたします。",
        "not_found": "注文番号{order}のご注文が見つかりませんでした。番号をご確認いただけますか？"
        "「ACM-」で始まる8桁の番号です。",
        "fixed": "すみません、入力ミスでした。{order}です。",
    },
}


def _support_session(rng: random.Random, n: int, start: dt.datetime) -> Conversation:
    chat = Chat(rng, start, id_style="anthropic")
    lang = rng.choice(["en", "de", "ja", "de", "ja"])
    texts = SUPPORT_TEXT[lang]
    customer = rng.choice(NAMES[lang])
    product_en = rng.choice(PRODUCTS)
    product = {"en": product_en, "de": PRODUCTS_DE[product_en], "ja": PRODUCTS_JA[product_en]}[lang]
    order = f"ACM-{rng.randint(10_000_000, 99_999_999)}"
    kind = rng.choice(["late", "broken"])
    typo = rng.random() < 0.4
    asked = order[:-1] + str((int(order[-1]) + 3) % 10) if typo else order
    chat.system(SUPPORT_SYSTEM)
    chat.user(texts[kind].format(order=asked, product=product))
    (lookup,) = chat.call([("lookup_order", {"order_id": asked})])
    if typo:
        chat.result(lookup, {"error": "OrderNotFound", "order_id": asked}, is_error=True)
        chat.assistant(texts["not_found"].format(order=asked))
        chat.user(texts["fixed"].format(order=order))
        (lookup,) = chat.call([("lookup_order", {"order_id": order})])
    shipped = (start - dt.timedelta(days=rng.randint(3, 12))).date()
    amount = rng.randint(25, 480)
    currency = {"en": "$", "de": "€", "ja": "¥"}[lang]
    price = amount * (150 if lang == "ja" else 1)
    record = {
        "order_id": order, "customer": customer, "status": "shipped" if kind == "late" else "delivered",
        "items": [{"sku": f"SKU-{rng.randint(1000, 9999)}", "name": product_en, "qty": 1, "price": price}],
        "shipped_at": shipped.isoformat(), "carrier": rng.choice(["DHL", "UPS", "Yamato", "DPD"]),
        "tracking": "".join(rng.choice(string.digits) for _ in range(12)), "payment": "card",
    }
    chat.result(lookup, record)
    if kind == "late":
        eta = (start + dt.timedelta(days=rng.randint(1, 3))).date()
        track, kb = chat.call([
            ("track_shipment", {"carrier": record["carrier"], "tracking": record["tracking"]}),
            ("search_kb", {"query": "delayed delivery compensation", "lang": lang}),
        ])
        chat.result(track, {"events": [
            {"at": (shipped + dt.timedelta(days=d)).isoformat(), "status": status}
            for d, status in enumerate(["picked up", "in transit", "at sorting centre", "delayed: weather"])],
            "eta": eta.isoformat()})
        chat.result(kb, {"articles": [{"id": "KB-112", "title": "Late deliveries",
                                       "excerpt": "If a parcel is more than 5 days late, offer a 10% voucher."}]})
        chat.assistant(texts["late_answer"].format(order=order, shipped=shipped, carrier=record["carrier"],
                                                   tracking=record["tracking"], eta=eta))
    else:
        label_call, refund_call = chat.call([
            ("create_return_label", {"order_id": order, "reason": "defective"}),
            ("issue_refund", {"order_id": order, "amount": price, "when": "on_receipt"}),
        ])
        label = f"https://returns.acme.example/{rng.randint(100000, 999999)}"
        chat.result(
            label_call,
            {
                "label_url": label,
                "carrier": record["carrier"],
                "expires": (start + dt.timedelta(days=14)).date().isoformat(),
            },
        )
        if rng.random() < 0.3:
            chat.result(
                refund_call,
                {"error": "PolicyViolation", "message": "Refunds are issued only after the return is scanned."},
                is_error=True,
            )
        else:
            chat.result(refund_call, {"refund_id": f"rf_{rng.randint(10**7, 10**8)}", "status": "scheduled"})
        chat.assistant(texts["return_answer"].format(label=label, product=product, amount=f"{currency}{price}"))
    chat.user(texts["thanks"])
    chat.assistant({"en": "You're welcome — have a nice day!", "de": "Gern geschehen! Einen schönen Tag noch.",
                    "ja": "どういたしまして。またのご利用をお待ちしております。"}[lang])
    title = {"late": "Late delivery", "broken": "Return of a defective item"}[kind]
    return Conversation(messages=chat.messages, external_id=f"ticket-{n:05d}", started_at=start,
                        title=f"{title} {order} ({customer}, {lang.upper()})", source_format="anthropic")


# --- code review --------------------------------------------------------------------------------------------

REPOS = ["acme/checkout", "acme/inventory-service", "acme/web", "acme/billing"]
FILES = ["src/cart/totals.py", "src/payments/retry.py", "src/api/orders.py", "src/utils/money.py",
         "src/inventory/reserve.py", "src/auth/session.py"]
REVIEW_SYSTEM = (
    "You are a code-review bot. For each pull request: read the diff, open the files you need, run the tests, "
    "then post concise review comments with line numbers. Be specific; praise what is good."
)


def _diff(rng: random.Random, path: str) -> str:
    lines = [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}"]
    for _ in range(rng.randint(2, 4)):
        start = rng.randint(10, 200)
        lines.append(
            f"@@ -{start},7 +{start},9 @@ def "
            f"{rng.choice(['apply_discount', 'retry_payment', 'reserve_stock', 'to_cents', 'load_session'])}("
        )
        for _ in range(rng.randint(5, 12)):
            mark = rng.choice([" ", " ", "+", "-"])
            code = rng.choice([
                "if amount < 0:", "    raise ValueError('negative amount')", "return round(total * rate, 2)",
                "for attempt in range(max_retries):", "    time.sleep(backoff * 2 ** attempt)",
                "total = sum(item.price * item.qty for item in cart.items)", "except PaymentDeclined as exc:",
                "logger.warning('retrying %s', order_id)", "session = cache.get(key) or load_from_db(key)",
                "cents = int(Decimal(value) * 100)", "with transaction.atomic():",
            ])
            lines.append(f"{mark}    {code}")
    return "\n".join(lines)


def _review_session(rng: random.Random, n: int, start: dt.datetime) -> Conversation:
    chat = Chat(rng, start)
    repo = rng.choice(REPOS)
    pr = rng.randint(100, 2400)
    files = rng.sample(FILES, rng.randint(1, 3))
    chat.system(REVIEW_SYSTEM)
    title = rng.choice(
        ["Fix rounding in cart totals", "Retry declined payments with backoff", "Reserve stock inside a transaction",
         "Cache sessions"]
    )
    chat.user(f'Review {repo}#{pr}: "{title}"')
    (diff_id,) = chat.call([("get_pr_diff", {"repo": repo, "number": pr})])
    chat.result(diff_id, "\n".join(_diff(rng, f) for f in files))
    ids = chat.call([("read_file", {"repo": repo, "path": f, "ref": f"pr-{pr}"}) for f in files],
                    text="Let me open the changed files for context.")
    for call_id, path in zip(ids, files, strict=True):
        body = "\n".join(
            f"{i + 1:4d}  {rng.choice(['def ', 'return ', 'if ', 'for ', '# ', ''])}"
            f"{rng.choice(['total', 'amount', 'retry', 'session', 'stock', 'cents'])}_{rng.randint(1, 99)}"
            for i in range(rng.randint(30, 90))
        )
        chat.result(call_id, f"# {path}\n{body}")
    for attempt in range(rng.randint(1, 3)):
        (tests_id,) = chat.call([("run_tests", {"repo": repo, "ref": f"pr-{pr}", "path": "tests/"})])
        failing = attempt == 0 and rng.random() < 0.6
        if failing:
            test = rng.choice(["test_totals_round_half_even", "test_retry_gives_up", "test_reserve_is_atomic"])
            chat.result(tests_id, (
                f"FAILED tests/test_{files[0].split('/')[-1]}::{test}\n"
                "Traceback (most recent call last):\n"
                f'  File "{files[0]}", line {rng.randint(20, 90)}, in {test.removeprefix("test_")}\n'
                "    assert to_cents('19.995') == 2000\n"
                "AssertionError: assert 1999 == 2000\n"
                f"=========== 1 failed, {rng.randint(40, 300)} passed in {rng.uniform(2, 40):.2f}s ==========="
            ), is_error=True)
            (fix_id,) = chat.call([("read_file", {"repo": repo, "path": files[0], "ref": f"pr-{pr}", "lines": "1-60"})],
                                  text="A test fails; let me check the rounding code again.")
            chat.result(
                fix_id, f"# {files[0]} (lines 1-60)\ncents = int(Decimal(value) * 100)  # truncates instead of rounding"
            )
        else:
            chat.result(tests_id, f"{rng.randint(40, 300)} passed in {rng.uniform(2, 40):.2f}s")
            break
    comments = [(f, rng.randint(5, 120)) for f in files]
    comment_ids = chat.call(
        [
            (
                "post_review_comment",
                {
                    "repo": repo,
                    "number": pr,
                    "path": f,
                    "line": line,
                    "body": rng.choice(
                        [
                            "Use `Decimal.quantize(..., ROUND_HALF_EVEN)` here; `int()` truncates.",
                            "Nice: the retry now has a cap. Consider jitter to avoid thundering herds.",
                            "This should run inside `transaction.atomic()`, otherwise two requests can reserve the "
                            "same item.",
                            "Could we add a test for the negative-amount branch?",
                        ]
                    ),
                },
            )
            for f, line in comments
        ]
    )
    for cid in comment_ids:
        chat.result(cid, {"ok": True, "comment_id": rng.randint(10**6, 10**7)})
    chat.assistant(
        f"Posted {len(comment_ids)} comment(s) on {repo}#{pr}. Summary: the change is close; the rounding fix needs "
        "`quantize` and one more test."
    )
    return Conversation(messages=chat.messages, external_id=f"{repo.split('/')[1]}-pr-{pr}",
                        title=f"Review {repo}#{pr}", started_at=start, source_format="langchain")


# --- research -----------------------------------------------------------------------------------------------

TOPICS = [
    ("solid-state batteries", "Where do solid-state EV batteries stand in 2026?"),
    ("heat pumps in cold climates", "How well do air-source heat pumps work below -20 °C?"),
    ("RAG evaluation", "What are the current best practices for evaluating retrieval-augmented generation?"),
    ("coral reef restoration", "Which coral restoration methods have measurable survival rates?"),
    ("Rust in the Linux kernel", "What is the state of Rust drivers in the Linux kernel?"),
    ("urban heat islands", "Which interventions reduce urban heat islands the most per dollar?"),
]
TITLE_OPENERS = ["Progress in", "A review of", "Why", "Field data on", "The economics of", "Lessons from"]
SITES = [
    "nature.com",
    "arxiv.org",
    "iea.org",
    "lwn.net",
    "reuters.com",
    "sciencedirect.com",
    "github.com",
    "energy.gov",
]
RESEARCH_ANGLES = ["costs", "field data", "Europe", "North America", "Asia", "open questions", "the last 12 months"]
RESEARCH_SYSTEM = (
    "You are a research agent. Search broadly, read primary sources, and write a short report with numbered "
    "citations. Think step by step before each tool call."
)


def _search_results(rng: random.Random, topic: str, count: int) -> dict[str, Any]:
    words = topic.split()
    results = []
    for i in range(count):
        site = rng.choice(SITES)
        results.append(
            {
                "position": i + 1,
                "title": (
                    f"{rng.choice(TITLE_OPENERS)} "
                    f"{topic} {rng.choice(['(2026)', '— preprint', 'at scale', 'in practice', ''])}"
                ).strip(),
                "url": (
                    f"https://{site}/{rng.choice(['articles', 'abs', 'reports', 'news'])}/"
                    f"{rng.randint(10**5, 10**7)}"
                ),
                "snippet": " ".join(
                    rng.choice(
                        words
                        + [
                            "measured",
                            "efficiency",
                            "cost",
                            "deployment",
                            "trial",
                            "per cent",
                            "compared",
                            "baseline",
                            "results",
                            "field",
                            "study",
                            "2025",
                            "2026",
                        ]
                    )
                    for _ in range(rng.randint(35, 60))
                )
                + ".",
                "published": (EPOCH - dt.timedelta(days=rng.randint(5, 900))).date().isoformat(),
                "source": site,
                "score": round(rng.uniform(0.4, 0.99), 3),
            }
        )
    return {"query": topic, "results": results, "total_estimated": rng.randint(10_000, 2_000_000),
            "took_ms": rng.randint(80, 900)}


def _research_session(rng: random.Random, n: int, start: dt.datetime) -> Conversation:
    chat = Chat(rng, start)
    topic, question = rng.choice(TOPICS)
    angle = rng.choice(RESEARCH_ANGLES)
    chat.system(RESEARCH_SYSTEM)
    chat.user(f"{question} Focus on {angle}.")
    queries = [topic, f"{topic} 2026 review", f"{topic} field study results"]
    ids = chat.call([("web_search", {"query": q, "num_results": 10}) for q in queries[: rng.randint(2, 3)]],
                    reasoning=f"The user wants the state of {topic}. I should search several phrasings in parallel to "
                              "cover reviews and field data, then read the two or three most authoritative sources.")
    urls: list[str] = []
    for call_id in ids:
        result = _search_results(rng, topic, 10)
        urls += [r["url"] for r in result["results"][:2]]
        chat.result(call_id, result)
    for step, url in enumerate(urls[: rng.randint(2, 4)]):
        (fetch_id,) = chat.call([("fetch_page", {"url": url, "max_chars": 8000})],
                                reasoning=f"Source {step + 1} looks primary; read it to extract numbers.")
        if rng.random() < 0.15:
            chat.result(
                fetch_id,
                {"error": "HTTP 403", "url": url, "detail": "Forbidden: the site blocks automated access."},
                is_error=True,
            )
            continue
        paragraphs = [
            " ".join(
                rng.choice(
                    topic.split()
                    + [
                        "the",
                        "results",
                        "show",
                        "a",
                        "percent",
                        "increase",
                        "in",
                        "cost",
                        "efficiency",
                        "over",
                        "baseline",
                        "trials",
                    ]
                )
                for _ in range(60)
            )
            for _ in range(rng.randint(4, 9))
        ]
        chat.result(fetch_id, f"Title: {topic.title()} — report\nURL: {url}\n\n" + "\n\n".join(paragraphs))
    chat.assistant(
        f"## {topic.capitalize()}: summary\n\n"
        f"1. Deployment is growing but uneven; the strongest evidence comes from field studies [1][2].\n"
        f"2. Costs fell by roughly {rng.randint(10, 45)}% since 2023 [3].\n"
        f"3. Open questions: durability and independent replication.\n\nSources:\n" +
        "\n".join(f"[{i + 1}] {u}" for i, u in enumerate(urls[:3])),
        reasoning="I have three consistent sources; the numbers agree within a few points, so I can summarise.",
        usage={"prompt_tokens": rng.randint(8000, 30000), "completion_tokens": rng.randint(300, 900),
               "reasoning_tokens": rng.randint(200, 2000)},
    )
    return Conversation(messages=chat.messages, external_id=f"research-{n:04d}", title=f"{question} ({angle})",
                        started_at=start, source_format="autogen")


def _long_crawl(rng: random.Random, start: dt.datetime) -> Conversation:
    """A research agent's long tool loop: one fetch after another, with progress notes along the way."""
    chat = Chat(rng, start)
    chat.system(RESEARCH_SYSTEM)
    chat.user("Go through every release note of the open-source projects in our dependency list (about 2,600 "
              "pages), and list every breaking change that affects us. Take your time.")
    projects = ["django", "celery", "requests", "numpy", "pydantic", "sqlalchemy", "fastapi", "pandas"]
    for step in range(LONG_SESSION_STEPS):
        project = projects[step % len(projects)]
        version = f"{rng.randint(1, 5)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}"
        url = f"https://docs.example.org/{project}/releases/{version}"
        reasoning = "Continue with the next release note." if step % 100 == 0 else None
        (cid,) = chat.call([("fetch_page", {"url": url})], reasoning=reasoning)
        chat.now += dt.timedelta(seconds=1)
        if step % 97 == 13:
            chat.result(cid, {"error": "Timeout", "url": url, "after_s": 30}, is_error=True)
        elif step % 250 == 7:
            # Now and then a long changelog (several KB).
            entries = [
                {
                    "version": version,
                    "change": f"{rng.choice(['Removed', 'Renamed', 'Deprecated', 'Changed'])} "
                    f"{rng.choice(['setting', 'function', 'default', 'argument'])} `{project}_{rng.randint(1, 999)}`",
                    "breaking": rng.random() < 0.3,
                }
                for _ in range(60)
            ]
            chat.result(cid, {"url": url, "entries": entries})
        else:
            chat.result(cid, f"{project} {version}: " + rng.choice([
                "Bug fixes only; no breaking changes.", "Performance improvements; no API changes.",
                f"BREAKING: `{project}.config.{rng.choice(['timeout', 'retries', 'encoding'])}` default changed.",
                "Documentation updates.", "Security fix; upgrade recommended.",
            ]))
    chat.assistant(
        f"Done: {LONG_SESSION_STEPS} release notes read. {rng.randint(20, 60)} breaking changes affect us; "
        "the list is grouped by project below.\n\n- django: 6 changes\n- pydantic: 11 changes\n- sqlalchemy: 9 changes"
    )
    return Conversation(messages=chat.messages, external_id="crawl-release-notes-2026",
                        title="Long crawl: breaking changes in 2,600 release notes", started_at=start,
                        source_format="autogen")


# --- broken sessions ----------------------------------------------------------------------------------------


def _broken_sessions(rng: random.Random, start: dt.datetime) -> list[tuple[str, Conversation]]:
    """(agent slug, conversation) for each way the protocol breaks, each from a realistic exchange."""
    out: list[tuple[str, Conversation]] = []

    def orphan(chat: Chat) -> None:
        # A summariser replaced the older turns, call included, but kept the tool result after it.
        chat.system(TRAVEL_SYSTEM.format(today=chat.now.date().isoformat()))
        chat.user("Summary of earlier conversation: the customer wants a hotel in Lisbon for 3 nights.")
        chat.assistant("Noted. I'll look at Lisbon hotels for those dates.")
        chat.result(chat.call_id(), {"results": [{"name": "Casa Azul", "price_per_night": 140}]})
        chat.user("Which one is cheapest?")
        chat.assistant("Casa Azul at $140 a night.")

    def unanswered(chat: Chat) -> None:
        chat.system(REVIEW_SYSTEM)
        chat.user("Review acme/web#812")
        chat.call([("run_tests", {"repo": "acme/web", "ref": "pr-812"})])
        # The test runner crashed and the agent loop moved on without a result.
        chat.user("Any news? The CI run finished ten minutes ago.")
        chat.assistant("The tests look fine to me.")

    def interrupted(chat: Chat) -> None:
        chat.system(SUPPORT_SYSTEM)
        chat.user("Wo ist meine Bestellung ACM-41522873?")
        a, b = chat.call([("lookup_order", {"order_id": "ACM-41522873"}), ("search_kb", {"query": "Lieferverzug"})])
        chat.result(a, {"order_id": "ACM-41522873", "status": "shipped", "carrier": "DHL"})
        # The customer wrote again while the second tool was still running; the UI appended it in between.
        chat.user("Hallo? Ist da jemand?")
        chat.result(b, {"articles": [{"id": "KB-112", "title": "Lieferverzug"}]})
        chat.assistant("Ihre Bestellung ist bei DHL unterwegs.")

    def duplicate(chat: Chat) -> None:
        # A local model server numbers call ids per turn, so "call_0" comes back every turn.
        chat.system(RESEARCH_SYSTEM)
        chat.user("Compare heat pump efficiency in Norway and Canada.")
        chat.call([("web_search", {"query": "heat pump COP Norway"})], ids=["call_0"])
        chat.result("call_0", _search_results(rng, "heat pumps Norway", 3))
        chat.call([("web_search", {"query": "heat pump COP Canada"})], ids=["call_0"])
        chat.result("call_0", _search_results(rng, "heat pumps Canada", 3))
        chat.assistant("Both countries report seasonal COPs around 2.5-3 in cold regions.")

    def leading(chat: Chat) -> None:
        # An OpenManus-style window messages[-N:] cut the list between a call and its result.
        chat.result(chat.call_id(), {"results": [{"flight": "TP1345", "price": {"amount": 412, "currency": "USD"}}]})
        chat.assistant("The cheapest flight is TP1345 at $412.")
        chat.user("Book it.")
        (cid,) = chat.call([("book_flight", {"flight": "TP1345"})])
        chat.result(cid, {"status": "confirmed", "confirmation": "QX7T2L"})
        chat.assistant("Booked, confirmation QX7T2L.")

    def invalid_args(chat: Chat) -> None:
        # The model hit max_tokens in the middle of the arguments.
        chat.system(REVIEW_SYSTEM)
        chat.user("Post the review for acme/billing#77.")
        chat.call(
            [("post_review_comment", {})], raw_arguments=['{"repo": "acme/billing", "number": 77, "body": "Consider']
        )
        chat.user("It looks like the comment didn't go through.")
        chat.assistant("")

    def partial(chat: Chat) -> None:
        chat.system(TRAVEL_SYSTEM.format(today=chat.now.date().isoformat()))
        chat.user("Weather in Oslo and Kyoto next week?")
        a, _b = chat.call([("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Kyoto"})])
        chat.result(a, {"city": "Oslo", "high": 3, "low": -4})
        chat.assistant("Oslo: cold, around 3 °C. (Kyoto's forecast never came back.)")

    # (agent, external id, title, the exchange, its format), started four hours apart.
    for k, (agent, ext, title, build, fmt) in enumerate((
        ("travel-assistant", "broken-orphan-result", "Broken: orphan tool result (a summary replaced its call)", orphan,
         "openai"),
        ("code-review-bot", "broken-unanswered-call", "Broken: unanswered tool call (test runner crashed)", unanswered,
         "langchain"),
        ("support-agent", "broken-interrupted", "Broken: a user message between a call and its results", interrupted,
         "anthropic"),
        ("research-agent", "broken-duplicate-id", "Broken: duplicate tool call id (ids restart every turn)", duplicate,
         "openai"),
        ("travel-assistant", "broken-leading-result", "Broken: leading tool result (window cut the call)", leading,
         "openmanus"),
        ("code-review-bot", "broken-invalid-arguments", "Broken: truncated tool arguments and an empty reply",
         invalid_args, "openai"),
        ("travel-assistant", "broken-partial-parallel", "Broken: one of two parallel calls unanswered", partial,
         "openai"),
    )):
        begun = start + dt.timedelta(hours=3 + 4 * k)
        chat = Chat(rng, begun)
        build(chat)
        out.append((agent, Conversation(messages=chat.messages, external_id=ext, title=title, started_at=begun,
                                        source_format=fmt, metadata={"demo": "broken"})))
    return out


# --- everything ---------------------------------------------------------------------------------------------

GENERATORS: tuple[tuple[str, Callable[[random.Random, int, dt.datetime], Conversation], int], ...] = (
    ("travel-assistant", _travel_session, 12),
    ("support-agent", _support_session, 12),
    ("code-review-bot", _review_session, 9),
    ("research-agent", _research_session, 9),
)


def demo_sessions(seed: int = DEFAULT_SEED) -> list[DemoSession]:
    """Every demo conversation, in a fixed order; the same seed gives the same data."""
    rng = random.Random(seed)
    agents = {a.slug: a for a in AGENTS}
    out: list[DemoSession] = []
    for agent_slug, generate, count in GENERATORS:
        for n in range(count):
            start = EPOCH + dt.timedelta(days=rng.randint(0, 26), hours=rng.randint(0, 14), minutes=rng.randint(0, 59))
            out.append(DemoSession(agents[agent_slug].project, agent_slug, generate(rng, n + 1, start)))
    out.append(DemoSession("platform-eng", "research-agent", _long_crawl(rng, EPOCH + dt.timedelta(days=20, hours=2))))
    for agent_slug, conversation in _broken_sessions(rng, EPOCH + dt.timedelta(days=12)):
        out.append(DemoSession(agents[agent_slug].project, agent_slug, conversation))
    _make_titles_unique(out)
    return out


def _make_titles_unique(sessions: list[DemoSession]) -> None:
    """Two sessions with one title read as one session listed twice; the generators rarely collide (same
    trip, same research question and angle), and then the later one says when it started."""
    seen: set[str] = set()
    for demo in sessions:
        conversation = demo.conversation
        title, started = conversation.title or "", conversation.started_at
        if title in seen and started is not None:
            title = f"{title}, {started:%b} {started.day} {started:%H:%M}"
        number = 2
        base = title
        while title in seen:
            title, number = f"{base} #{number}", number + 1
        seen.add(title)
        if title != conversation.title:
            demo.conversation = conversation.model_copy(update={"title": title})
