"""Runs: how a trim says which messages it dropped, and why, without one object per message.

A long session trimmed to a short window drops most of its messages for one reason. Explaining each dropped
message with an object of its own was most of a trim's cost (78% of ``langchain_last``'s time at 10,000 messages,
bench/README.md), so a strategy may answer its drops as runs, ``(start, stop, reason)`` for the positions
``start <= i < stop`` (sorted, not overlapping), and a result keeps them so: the per-message list is built only
when something reads it (``DroppedRuns``), while the runs answer ``TrimResult.dropped_runs`` directly.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from typing import Any, NamedTuple, overload

Run = tuple[int, int, str]  # start, stop (excluded), reason
Span = tuple[int, int]  # start, stop (excluded)


def spans_of(positions: Sequence[int]) -> list[Span]:
    """The sorted, distinct ``positions`` as maximal spans of consecutive positions."""
    if isinstance(positions, range) and positions.step == 1:
        return [(positions.start, positions.stop)] if positions.start < positions.stop else []
    if positions and positions[-1] - positions[0] + 1 == len(positions):  # sorted and distinct: one span
        return [(positions[0], positions[-1] + 1)]
    spans: list[Span] = []
    start = previous = -2
    for i in positions:
        if i == previous + 1:
            previous = i
            continue
        if start >= 0:
            spans.append((start, previous + 1))
        start = previous = i
    if start >= 0:
        spans.append((start, previous + 1))
    return spans


def gaps_of(spans: Sequence[Span], length: int) -> list[Span]:
    """The spans of ``range(length)`` that ``spans`` (sorted, not overlapping) leave out."""
    gaps: list[Span] = []
    at = 0
    for start, stop in spans:
        if start > at:
            gaps.append((at, start))
        at = max(at, stop)
    if at < length:
        gaps.append((at, length))
    return gaps


def merged(runs: Iterable[Run]) -> list[Run]:
    """Runs without empty ones, adjacent runs of the same reason joined."""
    out: list[Run] = []
    for start, stop, reason in runs:
        if start >= stop:
            continue
        if out and out[-1][1] == start and out[-1][2] == reason:
            out[-1] = (out[-1][0], stop, reason)
        else:
            out.append((start, stop, reason))
    return out


class ReasonRuns(MutableMapping[int, str]):
    """A position -> reason mapping held as runs (``Outcome.dropped`` of the strategies that drop whole ranges).

    It reads like the dict it stands for (``out.dropped[i]``, ``i in out.dropped``, iterating positions in
    order); a strategy that then changes it (``out.dropped[i] = ...``) gets a plain dict underneath."""

    __slots__ = ("_runs", "_starts", "_dict")

    def __init__(self, runs: Iterable[Run] = ()) -> None:
        self._runs: list[Run] = merged(runs)
        self._starts = [r[0] for r in self._runs]
        self._dict: dict[int, str] | None = None

    @classmethod
    def over(cls, spans: Iterable[Span], reason: str) -> ReasonRuns:
        """Every position of ``spans`` with one ``reason``."""
        return cls((start, stop, reason) for start, stop in spans)

    def runs(self) -> list[Run]:
        if self._dict is None:
            return self._runs
        runs: list[Run] = []
        for i in sorted(self._dict):
            why = self._dict[i]
            if runs and runs[-1][1] == i and runs[-1][2] == why:
                runs[-1] = (runs[-1][0], i + 1, why)
            else:
                runs.append((i, i + 1, why))
        return runs

    def _materialize(self) -> dict[int, str]:
        if self._dict is None:
            self._dict = {i: reason for start, stop, reason in self._runs for i in range(start, stop)}
            self._runs, self._starts = [], []
        return self._dict

    def __getitem__(self, i: int) -> str:
        if self._dict is not None:
            return self._dict[i]
        k = bisect_right(self._starts, i) - 1
        if k >= 0:
            start, stop, reason = self._runs[k]
            if start <= i < stop:
                return reason
        raise KeyError(i)

    def __contains__(self, i: object) -> bool:
        if self._dict is not None:
            return i in self._dict
        if not isinstance(i, int):
            return False
        k = bisect_right(self._starts, i) - 1
        return k >= 0 and self._runs[k][0] <= i < self._runs[k][1]

    def __iter__(self) -> Iterator[int]:
        if self._dict is not None:
            return iter(self._dict)
        return (i for start, stop, _ in self._runs for i in range(start, stop))

    def __len__(self) -> int:
        if self._dict is not None:
            return len(self._dict)
        return sum(stop - start for start, stop, _ in self._runs)

    def __setitem__(self, i: int, reason: str) -> None:
        self._materialize()[i] = reason

    def __delitem__(self, i: int) -> None:
        del self._materialize()[i]

    def __repr__(self) -> str:
        return f"ReasonRuns({self.runs()!r})"


class DroppedRuns(Sequence[Any]):
    """``TrimResult.dropped`` held as runs: a sequence of ``make(index, reason)`` (``Dropped``) in input order,
    built the first time an item is read; its length and its runs cost nothing per message. Equal to the list
    it stands for."""

    __slots__ = ("_runs", "_make", "_items")

    def __init__(self, runs: list[Run], make: Callable[[int, str], NamedTuple]) -> None:
        self._runs = runs
        self._make = make
        self._items: list[Any] | None = None

    def runs(self) -> list[Run]:
        return self._runs

    def _list(self) -> list[Any]:
        if self._items is None:
            make = self._make
            self._items = [make(i, reason) for start, stop, reason in self._runs for i in range(start, stop)]
        return self._items

    def __len__(self) -> int:
        if self._items is not None:
            return len(self._items)
        return sum(stop - start for start, stop, _ in self._runs)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        return self._list()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DroppedRuns):
            return self._runs == other._runs
        if isinstance(other, list):
            return self._list() == other
        return NotImplemented

    def __hash__(self) -> int:  # a list is not hashable either
        raise TypeError("unhashable type: 'DroppedRuns'")

    def __repr__(self) -> str:
        return f"DroppedRuns({self._runs!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (DroppedRuns, (self._runs, self._make))


class ReadLater(Sequence[Any]):
    """A list made the first time it is read, then kept: ``TrimResult.violations``, whose check of the trimmed
    list costs a few microseconds per kept message, paid by a caller that reads them and by no other. Equal to the
    list it stands for; pickled as that list."""

    __slots__ = ("_make", "_items")

    def __init__(self, make: Callable[[], list[Any]]) -> None:
        self._make: Callable[[], list[Any]] | None = make
        self._items: list[Any] | None = None

    def _list(self) -> list[Any]:
        if self._items is None:
            assert self._make is not None
            self._items, self._make = self._make(), None
        return self._items

    def __len__(self) -> int:
        return len(self._list())

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        return self._list()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReadLater):
            return self._list() == other._list()
        if isinstance(other, list):
            return self._list() == other
        return NotImplemented

    def __hash__(self) -> int:  # a list is not hashable either
        raise TypeError("unhashable type: 'ReadLater'")

    def __repr__(self) -> str:
        return f"ReadLater({self._list()!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (self._list(),))
