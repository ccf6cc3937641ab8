"""The code-review bot's conversations: multi-step tool loops over a diff, files and tests that fail with tracebacks,
and review comments."""
from __future__ import annotations

import datetime as dt
import random

from agents.demo.chat import Chat
from agents.memory.schema import Conversation

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


def review_session(rng: random.Random, n: int, start: dt.datetime) -> Conversation:
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
