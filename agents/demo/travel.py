"""The travel assistant's conversations: parallel weather and flight calls, hotel search, bookings that sometimes
fail."""
from __future__ import annotations

import datetime as dt
import random
import string
from typing import Any

from agents.demo.chat import Chat
from agents.memory.schema import Conversation

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


def travel_session(rng: random.Random, n: int, start: dt.datetime) -> Conversation:
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
