"""A stored session trimmed: ``session_trim`` (the lab, the trim API, trimmed exports, the diff) with its cache, the
trim API's answer, and the replay of a session's run call by call (the lab's slider)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.cache import caches

from agents import models
from agents.access import User
from agents.lab import recalls as lab_recalls
from agents.lab.presets import PresetError, preset_by_name, preset_spec, trim_counter
from agents.memory import schema
from agents.memory.replay import Replay, replay, replay_call
from agents.memory.stored import DetachedTrim, StoredMessages, TrimmedMessages
from agents.memory.tokens import count_messages, get_counter
from agents.memory.trimming import (
    FALSE_WORDS,
    MEMORY_IDEMPOTENT,
    MEMORY_VIEW,
    TRUE_WORDS,
    StrategyError,
    StrategySpec,
    TrimResult,
    spec_from_query,
    trim,
)
from agents.store.outlines import session_stored_messages

# --- trimming -----------------------------------------------------------------------------------------------


@dataclass
class SessionTrim:
    """A stored session as the trimmer read it, and what each spec made of it (in the order of the specs)."""

    session: models.Session
    messages: StoredMessages  # outlines, and whole messages read when read (memory/stored.py)
    counts: Sequence[int]  # under the trim's counter: the stored ones, or each message counted again (``recounted``)
    results: list[TrimResult]
    recounted: bool  # another counter than the session's: every message was counted again


def session_trim(
    *,
    session: models.Session,
    specs: Sequence[StrategySpec],
    counter: str | None = None,
    read: tuple[StoredMessages, Sequence[int]] | None = None,
) -> SessionTrim:
    """Read the session with its stored token counts, then trim it with each spec: the lab's pages, the trim API
    and trimmed exports. The session's own counter (the default) trims with the stored counts, so nothing is
    recounted; another ``counter`` (a preset's: ``trim_counter``) counts every message once, for every spec. ``read``:
    the messages and stored counts when the caller read them already (the report reads many sessions per query,
    ``sessions_stored_messages``).

    The session is read as outlines (``session_stored_messages``): a strategy that reads no text decides on them,
    and the contents of the kept messages are read when its trimmed list is read; another counter, or a strategy
    that reads text, reads every message (in batches)."""
    counter = counter or session.token_counter
    recounted = counter != session.token_counter
    cache = caches[TRIM_CACHE]
    keys = [_trim_key(session, spec, counter) for spec in specs]
    found = cache.get_many(keys)
    messages, counts = read if read is not None else session_stored_messages(session)
    if recounted:
        # Counted once here, the same rule as the lab's replay (``session_replay``): every message read whole.
        counts = count_messages(messages, get_counter(counter))
    results: list[TrimResult] = []
    for key, spec in zip(keys, specs, strict=True):
        if key in found:
            results.append(_attached(found[key], messages))
            continue
        result = trim(messages, spec, counter=counter, token_counts=counts)
        cache.set(key, _detached(result))
        results.append(result)
    return SessionTrim(session, messages, counts, results, recounted)



# Query keys of the trim endpoint that are not strategy parameters (format: DRF's ?format=json).
TRIM_QUERY_KEYS = frozenset({"strategy", "preset", "format", "counter", "detail", "messages"})
TRIM_DETAILS = ("compact", "full")
DEFAULT_TRIM_STRATEGY = "safe_token_budget"


class TrimRequestError(ValueError):
    """The trim API's query is wrong; ``str(e)`` names the parameter."""


def session_trim_answer(*, user: User, session_id: int, query: Any, strategies_url: str) -> dict[str, Any]:
    """The trim API's answer for the session (404 when not in the user's projects) and its query: the strategy
    and parameters (``strategy=NAME&<param>=<value>``, else the recommended one, said so with a link to
    ``strategies_url``) or a preset of the session's project (``preset=NAME``, with its counter unless
    ``counter=`` is given); ``detail=compact|full``; ``messages=1`` for the trimmed list. TrimRequestError when
    the query is wrong, checked before a large session is read."""
    session = lab_recalls.session_for_lab(user, session_id)
    detail = query.get("detail", "compact")
    if detail not in TRIM_DETAILS:
        raise TrimRequestError(f"detail={detail}: expected {' or '.join(TRIM_DETAILS)}")
    with_messages = query.get("messages", "0").strip().lower()
    if with_messages not in TRUE_WORDS | FALSE_WORDS | {""}:
        raise TrimRequestError(f"messages={with_messages}: expected 1 or 0")
    preset_name = query.get("preset", "").strip()
    preset = None
    if preset_name:
        # A preset of the session's project: its strategy, parameters and counter (a ?counter= still wins).
        extra = sorted(set(query) - TRIM_QUERY_KEYS)
        if "strategy" in query or extra:
            raise TrimRequestError(f"preset={preset_name}: give the preset or a strategy with its parameters, not both")
        try:
            preset = preset_by_name(user=None, name=preset_name, project=session.agent.project)
            spec = preset_spec(preset)
        except PresetError as exc:
            raise TrimRequestError(str(exc)) from None
    counter = trim_counter(preset, query.get("counter")) or session.token_counter
    try:
        get_counter(counter)
    except ValueError as exc:
        raise TrimRequestError(f"counter: {exc}") from None
    # Without a strategy (the URL the browsable API's own breadcrumbs link to): the recommended one, said so.
    named = query.get("strategy", "").strip()
    if preset is None:
        try:
            spec = spec_from_query(named or DEFAULT_TRIM_STRATEGY, query, other_keys=TRIM_QUERY_KEYS)
        except StrategyError as exc:
            raise TrimRequestError(str(exc)) from None
    trimmed = session_trim(session=session, specs=[spec], counter=counter)
    result, recounted, sent_before = trimmed.results[0], trimmed.recounted, len(trimmed.messages)
    del trimmed  # the input list can go before the answer is built (200,000 messages: hundreds of MB)
    if detail == "full":
        data = result.to_dict()
    else:
        data = result.to_compact_dict(messages=with_messages in TRUE_WORDS)
    data["detail"] = detail
    data["recounted"] = recounted
    stored = lab_recalls.session_recalls_read(session)  # no query for a session without recalls
    if stored:
        data["recalls"] = _recalls_answer(lab_recalls.trim_recalls(stored, result, sent_before=sent_before))
    if not named and preset is None:
        data["note"] = (f"no strategy given: {DEFAULT_TRIM_STRATEGY} (memoryviz's recommendation); name one with "
                        f"?strategy=NAME, listed at {strategies_url}")
    return data

def _recalls_answer(found: lab_recalls.TrimRecalls) -> dict[str, Any]:
    """What the trim does to the session's recalls, as the lab shows it: how many the trimmed list still holds (sent
    edited or not), drops (``recall_trimmed``) or does not decide on (carried by no message of the list), the
    repeated injections among those kept (a persisted recall piling up), and the recalls of each kind (at most
    ``RECALLS_SHOWN``), by id, carrying message and store."""
    def listed(recall: lab_recalls.StoredRecall) -> dict[str, Any]:
        return {"id": recall.pk, "seq": recall.seq, "store": recall.store or None, "query": recall.query or None,
                "items": recall.item_count}

    return {
        "kept": found.kept_count, "dropped": found.dropped_count, "edited": found.found.edited,
        "elsewhere": found.elsewhere_count,
        "piled_up": [{"kind": f.kind, "seq": f.index, "message": f.message} for f in found.found.piled_up],
        "kept_recalls": [{**listed(recall), "edited": edited} for recall, edited in found.kept],
        "dropped_recalls": [listed(recall) for recall in found.dropped],
    }


# What a trim computed, per session version, counter, strategy and parameters (``session_trim``): the cache alias
# (settings.CACHES; the database cache serves several app servers). A session's outlines are not cached: they are
# stored (``session_structure``).
TRIM_CACHE = "trims"
_TRIM_CACHE_FORMAT = 4  # bumped when what is cached changes shape


def _trim_key(session: models.Session, spec: StrategySpec, counter: str) -> str:
    what = json.dumps([spec.strategy.name, spec.params.model_dump(mode="json")], sort_keys=True)
    digest = hashlib.sha256(what.encode()).hexdigest()[:32]
    return f"trim:{_session_key(session)}:{counter}:{digest}"


def _session_key(session: models.Session) -> str:
    # The import time too: an id can come back after a rolled-back import (SQLite), a time does not.
    stamp = session.imported_at.timestamp() if session.imported_at else 0
    return f"{_TRIM_CACHE_FORMAT}:{session.pk}:{stamp}:{session.content_version}:{session.token_counter}"


def _detached(result: TrimResult) -> tuple[TrimResult, DetachedTrim | None]:
    """The result as it is cached: a trimmed list over the stored messages keeps its positions, not the session."""
    if isinstance(result.messages, TrimmedMessages):
        return dataclasses.replace(result, messages=[]), result.messages.detached()
    return result, None


def _attached(cached: tuple[TrimResult, DetachedTrim | None], messages: StoredMessages) -> TrimResult:
    result, detached = cached
    if detached is not None:
        return dataclasses.replace(result, messages=detached.over(messages))
    return result


@dataclass
class SessionReplay:
    """A stored session's run replayed under a spec (the lab's slider), and what one call sent: ``result`` is the
    call at ``step`` (input indices, as ``replay_call``), or the whole list trimmed once when no step was asked for
    (``step`` None). ``counts`` are under the replay's counter (the stored ones for the session's own counter).
    ``messages`` is the stored list (outlines, whole messages read where read: ``sent`` gives the input of the
    shown result)."""

    session: models.Session
    messages: StoredMessages
    counts: Sequence[int]
    replay: Replay | None  # None: not replayed (``session_replay(replayed=False)``)
    step: int | None
    result: TrimResult
    recounted: bool

    @property
    def sent_from(self) -> int:
        """How many input messages the shown result is about: the messages before the chosen call."""
        if self.step is None or self.replay is None:
            return len(self.messages)
        return self.replay.steps[self.step].call

    @property
    def sent(self) -> StoredMessages:
        """The input messages the shown result is about (the messages before the chosen call)."""
        return self.messages.head(self.sent_from)


def replay_input(messages: StoredMessages, spec: StrategySpec, *, recounted: bool) -> Sequence[schema.Message]:
    """What a replay of a stored list runs on: the outlines when the strategy reads no text and the stored counts
    are used (``Strategy.reads_text``), else every whole message (read in batches)."""
    if spec.strategy.reads_text or recounted:
        return list(messages)
    return messages.outlines


def session_replay(
    *,
    session: models.Session,
    spec: StrategySpec,
    counter: str | None = None,
    step: int | None = None,
    replayed: bool = True,
) -> SessionReplay:
    """Read the session once, replay the spec on every call of the run (``memory.replay``) and trim what the
    chosen ``step`` sent (out of range or None: the whole list, as ``session_trim``). ``replayed=False`` with no
    ``step``: the whole list trimmed only (``session_trim``, its cache included), no replay (``replay`` None): the
    lab's first answer for a long session, whose replay follows in a second request. The session's own counter
    uses the stored counts; another counts every message once, for the replay and the trim alike.

    Read as ``session_trim`` reads: outlines in keyset batches, and for a strategy that reads no text under the
    stored counts, the replay runs on the outlines and the shown trim reads the contents of the rows a page
    renders only; a strategy that reads text, or another counter, reads every message. The replay is kept in the
    trim cache per session version, counter, strategy and parameters."""
    if not replayed and step is None:
        trimmed = session_trim(session=session, specs=[spec], counter=counter)
        return SessionReplay(session, trimmed.messages, trimmed.counts, None, None, trimmed.results[0],
                             trimmed.recounted)
    counter = counter or session.token_counter
    recounted = counter != session.token_counter
    cache = caches[TRIM_CACHE]
    key = "replay:" + _trim_key(session, spec, counter)
    run = cache.get(key)
    messages, counts = session_stored_messages(session)
    base: Sequence[schema.Message] | None = None
    if run is None or recounted or spec.strategy.reads_text:
        base = replay_input(messages, spec, recounted=recounted)
        if recounted:
            counts = count_messages(base, get_counter(counter))
    if run is None:
        assert base is not None
        run = replay(base, spec, counter=counter, token_counts=counts)
        cache.set(key, run)
    if step is not None and 0 <= step < len(run.steps):
        call = run.steps[step].call
        if base is None and spec.strategy.memory in (MEMORY_VIEW, MEMORY_IDEMPOTENT):
            # What the call sent is a trim of the messages before it: decided on their outlines.
            result = trim(messages.head(call), spec, counter=counter, token_counts=counts[:call])
        else:
            result = replay_call(base if base is not None else messages.outlines, spec, call=call, counter=counter,
                                 token_counts=counts)
    else:
        step = None
        if recounted:
            result = trim(messages, spec, counter=counter, token_counts=counts)
        else:
            result = session_trim(session=session, specs=[spec], read=(messages, counts)).results[0]
    return SessionReplay(session, messages, counts, run, step, result, recounted)
