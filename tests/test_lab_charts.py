"""The lab's inline SVG charts: geometry that stays small and keeps what matters visible."""
from __future__ import annotations

from agents.lab.charts import HEIGHT, MAX_POINTS, PAD, WIDTH, replay_chart, savings_chart
from agents.memory.replay import ReplayStep


def step(call: int, tokens: int, *, errors: int = 0, question: bool | None = True) -> ReplayStep:
    return ReplayStep(call, 3, tokens, tokens * 2, errors, question)


def test_it_draws_a_long_run_with_few_points_and_keeps_its_peak() -> None:
    steps = [step(k, 100) for k in range(5_000)]
    steps[2_345] = step(2_345, 9_000)
    chart = replay_chart(steps)

    points = chart.sent.split()
    assert len(points) == MAX_POINTS
    ys = [float(p.split(",")[1]) for p in points]
    assert min(ys) == PAD + (HEIGHT - 2 * PAD) * (1 - 9_000 / 18_000)  # the peak is drawn, against the top
    assert chart.max_tokens == 18_000 and chart.calls == 5_000


def test_it_marks_the_calls_that_broke_the_protocol_or_lost_the_question() -> None:
    steps = [step(0, 10), step(2, 20, errors=2), step(4, 30, question=False), step(6, 40)]
    chart = replay_chart(steps, chosen=3)

    assert [(m.kind, m.call) for m in chart.marks] == [("violation", 2), ("question", 4)]
    assert chart.cursor_x == WIDTH - PAD
    assert all(0 <= m.x <= WIDTH and 0 <= m.y <= HEIGHT for m in chart.marks)


def test_it_draws_nothing_for_no_calls_and_a_point_for_one() -> None:
    assert replay_chart([]).sent == ""
    assert replay_chart([step(0, 5)]).sent == f"{WIDTH / 2:.1f},{HEIGHT / 2:.1f}"  # half of what untrimmed sends


def test_a_savings_bar_is_as_long_as_the_share_saved() -> None:
    chart = savings_chart([("AutoGen: buffered context", 1_000, 250), ("summary", 1_000, 1_100), ("empty", 0, 0)])
    assert [round(b.saved, 2) for b in chart.bars] == [0.75, -0.1, 0.0]
    assert chart.bars[0].width > 0 and chart.bars[1].width == 0 and chart.bars[2].width == 0
