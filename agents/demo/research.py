"""The research agent's conversations on a reasoning model: web searches returning several KB of JSON, page fetches,
reasoning; and one long crawl of more than 5,000 messages."""
from __future__ import annotations

import datetime as dt
import random
from typing import Any

from agents.demo.chat import EPOCH, Chat
from agents.memory.schema import Conversation

LONG_SESSION_STEPS = 2600  # tool-loop steps of the long crawl: 2 messages each, so more than 5,000 messages


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


def search_results(rng: random.Random, topic: str, count: int) -> dict[str, Any]:
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


def research_session(rng: random.Random, n: int, start: dt.datetime) -> Conversation:
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
        result = search_results(rng, topic, 10)
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


def long_crawl(rng: random.Random, start: dt.datetime) -> Conversation:
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
