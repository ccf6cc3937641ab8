"""The support agent's conversations, with customers who write in English, German and Japanese: order lookups,
returns, refunds, "order not found" tool errors."""
from __future__ import annotations

import datetime as dt
import random
import string

from agents.demo.chat import Chat
from agents.memory.schema import Conversation

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


def support_session(rng: random.Random, n: int, start: dt.datetime) -> Conversation:
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
