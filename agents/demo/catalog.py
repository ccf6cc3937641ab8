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
import random
from collections.abc import Callable
from dataclasses import dataclass

from agents.demo.broken import broken_sessions
from agents.demo.chat import EPOCH
from agents.demo.code_review import review_session
from agents.demo.research import long_crawl, research_session
from agents.demo.support import support_session
from agents.demo.travel import travel_session
from agents.memory.schema import Conversation

DEFAULT_SEED = 2026


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


# --- everything ---------------------------------------------------------------------------------------------

GENERATORS: tuple[tuple[str, Callable[[random.Random, int, dt.datetime], Conversation], int], ...] = (
    ("travel-assistant", travel_session, 12),
    ("support-agent", support_session, 12),
    ("code-review-bot", review_session, 9),
    ("research-agent", research_session, 9),
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
    out.append(DemoSession("platform-eng", "research-agent", long_crawl(rng, EPOCH + dt.timedelta(days=20, hours=2))))
    for agent_slug, conversation in broken_sessions(rng, EPOCH + dt.timedelta(days=12)):
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
