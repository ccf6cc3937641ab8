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
from typing import Any, NamedTuple, TypeVar, cast, overload

Run = tuple[int, int, str]  # start, stop (excluded), reason
Span = tuple[int, int]  # start, stop (excluded)
T = TypeVar("T")
C = TypeVar("C")


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


class Positions(Sequence[int]):
    """Sorted, distinct positions held as spans (``Outcome.kept`` of a strategy that keeps a few ranges: the head and
    the tail of head_and_tail), a list of them made only when read one by one."""

    __slots__ = ("_spans", "_items")

    def __init__(self, spans: Iterable[Span]) -> None:
        self._spans: list[Span] = [(a, b) for a, b in spans if a < b]
        self._items: list[int] | None = None

    def spans(self) -> list[Span]:
        return self._spans

    def _list(self) -> list[int]:
        if self._items is None:
            items: list[int] = []
            for a, b in self._spans:
                items.extend(range(a, b))
            self._items = items
        return self._items

    def __len__(self) -> int:
        return sum(b - a for a, b in self._spans)

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> list[int]: ...

    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, int) and self._spans:
            if index == 0:
                return self._spans[0][0]
            if index == -1:
                return self._spans[-1][1] - 1
        return self._list()[index]

    def __iter__(self) -> Iterator[int]:
        return (i for a, b in self._spans for i in range(a, b))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Positions):
            return self._spans == other._spans
        if isinstance(other, list | range):
            return self._list() == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        raise TypeError("unhashable type: 'Positions'")

    def __repr__(self) -> str:
        return f"Positions({self._spans!r})"


def spans_of_kept(kept: Sequence[int]) -> list[Span]:
    """``spans_of(kept)``, read from what ``kept`` already is when it is spans or a range."""
    if isinstance(kept, Positions):
        return kept.spans()
    return spans_of(kept)


# ---------------------------------------------------------------------------------------------------------------
# Fields computed when first read


class Later:
    """A field's value still to be made: ``make()`` gives it, the first time the field is read (``later_fields``)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make

    def __repr__(self) -> str:
        return "Later(...)"


def later(make: Callable[[], T]) -> T:
    """A field value made by ``make()`` when the field is first read, on a class with ``later_fields``. Typed as the
    value it stands for: whoever reads the field gets that value, never this."""
    return cast(T, Later(make))


class _LaterField:
    """A data descriptor over the instance's ``__dict__``: what was set is returned, except a ``Later``, which is made
    then, kept in its place and returned."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            raise AttributeError(self.name)
        d = obj.__dict__
        value = d[self.name]
        if type(value) is Later:
            value = d[self.name] = value.make()
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value


def later_fields(*names: str) -> Callable[[type[C]], type[C]]:
    """A class decorator (put above ``@dataclass``): each named field may be set to ``later(make)``, and is made the
    first time it is read; pickling an instance makes them all (its state holds values, never functions)."""

    def wrap(cls: type[C]) -> type[C]:
        for name in names:
            setattr(cls, name, _LaterField(name))

        def __getstate__(self: Any) -> dict[str, Any]:
            return {name: getattr(self, name) if name in names else value for name, value in self.__dict__.items()}

        cls.__getstate__ = __getstate__  # type: ignore[method-assign]
        return cls

    return wrap


def once(make: Callable[[], T]) -> Callable[[], T]:
    """``make`` called the first time only; later calls return what it returned."""
    box: list[T] = []

    def get() -> T:
        if not box:
            box.append(make())
        return box[0]

    return get
