"""Sessions broken in each way the protocol breaks, each titled "Broken: ..."."""
from __future__ import annotations

import datetime as dt
import random

from agents.demo.chat import Chat
from agents.demo.code_review import REVIEW_SYSTEM
from agents.demo.research import RESEARCH_SYSTEM, search_results
from agents.demo.support import SUPPORT_SYSTEM
from agents.demo.travel import TRAVEL_SYSTEM
from agents.memory.schema import Conversation

# --- broken sessions ----------------------------------------------------------------------------------------


def broken_sessions(rng: random.Random, start: dt.datetime) -> list[tuple[str, Conversation]]:
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
        chat.result("call_0", search_results(rng, "heat pumps Norway", 3))
        chat.call([("web_search", {"query": "heat pump COP Canada"})], ids=["call_0"])
        chat.result("call_0", search_results(rng, "heat pumps Canada", 3))
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
