"""Microsoft Agent Framework (agent-framework-core 1.23.0): the compaction strategies of
``agent_framework._compaction`` (reference/trimming-2026.md §4).

MAF sees one message each and groups them (§4.0): a system message is a group, a user message is a group, an
assistant message with calls plus the tool messages right after it is a ``tool_call`` group, a run of tool messages
without a call is a ``tool_call`` group, anything else (assistant text, developer) an ``assistant_text`` group; then
a result answering an earlier, non-adjacent call (exactly one unmatched earlier call carries its id) joins that
call's group. Strategies exclude whole groups and may insert messages. Agent instructions are not in the list,
and system messages in it are kept by ``preserve_system``, so ``pin_system`` defaults to false.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, model_validator

from agents.memory.schema import Message
from agents.memory.trimming.registry import Insert, Outcome, StrategyParams, View, keep_all, plural, register
from agents.memory.trimming.summaries import (
    SummarizeWith,
    summarize_with_field,
    summary_insert,
    summary_text,
    summary_tokens_field,
)


class MafSlidingWindowParams(StrategyParams):
    keep_last_groups: int = Field(
        default=20, gt=0,
        description="The newest non-system groups kept. MAF has no default; memoryviz suggests 20 (MAF's docstring "
        "example).",
    )
    preserve_system: bool = Field(default=True, description="Keep system groups (false: they are all excluded).")


class MafTruncationParams(StrategyParams):
    max_n: int = Field(
        default=40, gt=0,
        description="Compact when the included messages (or tokens, with count_tokens) exceed this. MAF has no "
        "default; memoryviz suggests 40.",
    )
    compact_to: int = Field(
        default=20, gt=0,
        description="Exclude the oldest groups until this is reached (at most max_n). MAF has no default; memoryviz "
        "suggests 20.",
    )
    count_tokens: bool = Field(
        default=False,
        description="false: max_n and compact_to count included messages (MAF without a tokenizer); true: tokens by "
        "the counter.",
    )
    preserve_system: bool = Field(default=True, description="Never exclude system groups.")
    preserve_first_user_group: bool = Field(default=False, description="Never exclude the first user message.")

    @model_validator(mode="after")
    def _compact_to_at_most_max_n(self) -> MafTruncationParams:
        if self.compact_to > self.max_n:
            raise ValueError("compact_to must be less than or equal to max_n (MAF raises ValueError)")
        return self


class MafToolGroupsParams(StrategyParams):
    keep_last_tool_call_groups: int = Field(
        default=1, ge=0, description="The newest tool_call groups left as they are (0: none).",
    )


class MafSummarizationParams(StrategyParams):
    target_count: int = Field(default=4, gt=0, description="Non-system messages kept after summarizing (about).")
    threshold: int = Field(
        default=2, ge=0, description="Summarize when the non-system messages exceed target_count + threshold.",
    )
    max_summary_input_tokens: int | None = Field(
        default=8000, gt=0,
        description="The summarizer's input budget, estimated by MAF at 4 characters a token (null: no budget).",
    )
    summarize_with: SummarizeWith = summarize_with_field()
    summary_tokens: int = summary_tokens_field()


# ---------------------------------------------------------------------------------------------------------------
# Groups


@dataclass
class Group:
    kind: str  # system | user | tool_call | assistant_text
    members: list[int] = field(default_factory=list)  # view positions, ascending

    @property
    def start(self) -> int:
        return self.members[0]


def maf_groups(view: View) -> list[Group]:
    """``group_messages`` then the linking of non-adjacent results; groups in the order of their first message."""
    messages = view.messages
    spans: list[Group] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.role in ("system", "user"):
            spans.append(Group(m.role, [i]))
            i += 1
        elif m.role == "assistant" and m.tool_calls or m.role == "tool":
            k = i + 1
            while k < len(messages) and messages[k].role == "tool":
                k += 1
            spans.append(Group("tool_call", list(range(i, k))))
            i = k
        else:
            spans.append(Group("assistant_text", [i]))
            i += 1
    if len(spans) < 2:
        return spans
    span_of = {i: s for s, g in enumerate(spans) for i in g.members}
    parent = list(range(len(spans)))

    def find(s: int) -> int:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    unmatched: dict[str, list[int]] = {}
    for i, m in enumerate(messages):
        if m.role == "assistant":
            for tc in m.tool_calls:
                if tc.id:
                    unmatched.setdefault(tc.id, []).append(i)
        elif m.role == "tool" and m.tool_call_id:
            candidates = unmatched.get(m.tool_call_id)
            if candidates is None or len(candidates) != 1:
                continue
            declaration = candidates.pop()
            a, b = span_of[declaration], span_of[i]
            if a < b:
                ra, rb = find(a), find(b)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    merged: dict[int, Group] = {}
    order: list[int] = []
    for s, g in enumerate(spans):
        root = find(s)
        if root not in merged:
            merged[root] = Group(spans[root].kind, [])
            order.append(root)
        merged[root].members.extend(g.members)
    groups = [merged[r] for r in order]
    for g in groups:
        g.members.sort()
    return groups


def _outcome(view: View, groups: list[Group], excluded: set[int], reason: str, kept_reason: str) -> Outcome:
    dropped = {i: reason for gi in excluded for i in groups[gi].members}
    return Outcome(kept=[i for i in range(len(view)) if i not in dropped], dropped=dropped, kept_reason=kept_reason)


def _linked_note(view: View, groups: list[Group], excluded: set[int]) -> list[str]:
    split = [
        g for gi, g in enumerate(groups) if gi in excluded and g.members != list(range(g.start, g.members[-1] + 1))
    ]
    if not split:
        return []
    return [f"MAF links a result to its earlier, non-adjacent call, so {plural(len(split), 'group')} spanning other "
            "messages went whole (the messages between stay)."]


@register(
    "maf_sliding_window", MafSlidingWindowParams,
    "Keeps the newest keep_last_groups message groups (a call with its results is one group), and system groups.",
    "Microsoft Agent Framework SlidingWindowStrategy (agent-framework-core 1.23.0)",
)
def _maf_sliding_window(view: View, p: MafSlidingWindowParams) -> Outcome:
    groups = maf_groups(view)
    non_system = [gi for gi, g in enumerate(groups) if g.kind != "system"]
    old = non_system[: max(0, len(non_system) - p.keep_last_groups)]
    window = f"the newest {plural(p.keep_last_groups, 'group')}"
    out = _outcome(view, groups, set(old), f"excluded: older than {window} (a call and its results are one group)",
                   f"kept: within {window}")
    for g in groups:
        if g.kind != "system":
            continue
        for i in g.members:
            if p.preserve_system:
                out.kept_reasons[i] = "kept: a system group (preserve_system)"
            else:
                out.dropped[i] = "excluded: a system group, and preserve_system is false"
    if not p.preserve_system:
        out.kept = [i for i in out.kept if i not in out.dropped]
    out.notes = _linked_note(view, groups, set(old))
    return out


@register(
    "maf_truncation", MafTruncationParams,
    "Past max_n included messages (or tokens), excludes the oldest groups until compact_to is reached, never the "
    "newest group (nor system groups or the first user group when asked).",
    "Microsoft Agent Framework TruncationStrategy (agent-framework-core 1.23.0)",
)
def _maf_truncation(view: View, p: MafTruncationParams) -> Outcome:
    groups = maf_groups(view)
    unit = "tokens" if p.count_tokens else "messages"
    size = [sum(view.counts[i] for i in g.members) if p.count_tokens else len(g.members) for g in groups]
    measure = sum(size)
    if measure <= p.max_n:
        return keep_all(view, f"kept: {measure:,} {unit}, not more than max_n={p.max_n:,}")
    protected: set[int] = set()
    if p.preserve_system:
        protected |= {gi for gi, g in enumerate(groups) if g.kind == "system"}
    if p.preserve_first_user_group:
        first_user = next((gi for gi, g in enumerate(groups) if g.kind == "user"), None)
        if first_user is not None:
            protected.add(first_user)
    non_system = [gi for gi, g in enumerate(groups) if g.kind != "system"]
    if non_system:
        protected.add(non_system[-1])
    elif groups:
        protected.add(len(groups) - 1)
    excluded: set[int] = set()
    for gi in range(len(groups)):
        if measure <= p.compact_to:
            break
        if gi in protected:
            continue
        excluded.add(gi)
        measure -= size[gi]
    out = _outcome(view, groups, excluded,
                   f"excluded: among the oldest groups, until {p.compact_to:,} {unit} (compact_to) after more than "
                   f"max_n={p.max_n:,}", "kept: within compact_to, or protected")
    for gi in protected:
        g = groups[gi]
        why = ("the newest non-system group, which MAF always keeps" if gi == (non_system[-1] if non_system else None)
               else "a system group (preserve_system)" if g.kind == "system" else "the first user group "
               "(preserve_first_user_group)")
        for i in g.members:
            out.kept_reasons[i] = f"kept: {why}"
    if measure > p.compact_to:
        out.notes.append(f"Protected groups alone leave {measure:,} {unit}, more than compact_to={p.compact_to:,}.")
    out.notes += _linked_note(view, groups, excluded)
    out.notes.append("One run of the strategy; as an after_strategy that fired earlier, MAF would hold the list below "
                     "max_n already.")
    return out


def _tool_groups(groups: list[Group], keep: int) -> tuple[list[int], list[int]]:
    tools = [gi for gi, g in enumerate(groups) if g.kind == "tool_call"]
    if len(tools) <= keep:
        return tools, []
    return tools[len(tools) - keep:] if keep else [], tools[: len(tools) - keep]


@register(
    "maf_selective_tool_calls", MafToolGroupsParams,
    "Excludes every tool_call group (a call, the text sent with it, and its results) but the newest "
    "keep_last_tool_call_groups.",
    "Microsoft Agent Framework SelectiveToolCallCompactionStrategy (agent-framework-core 1.23.0)",
)
def _maf_selective_tool_calls(view: View, p: MafToolGroupsParams) -> Outcome:
    groups = maf_groups(view)
    _, old = _tool_groups(groups, p.keep_last_tool_call_groups)
    keep_text = f"the newest {plural(p.keep_last_tool_call_groups, 'tool_call group')}"
    out = _outcome(view, groups, set(old), f"excluded: a tool_call group older than {keep_text}",
                   "kept: not a tool_call group, or among the newest")
    if any(view.messages[groups[gi].start].text for gi in old if view.messages[groups[gi].start].role == "assistant"):
        out.notes.append("The assistant text sent with excluded calls goes with them.")
    out.notes += _linked_note(view, groups, set(old))
    return out


TOOL_RESULTS_MAX = 4096
TOOL_RESULTS_PREFIX = "[Tool results: "
TOOL_RESULTS_CUT = "... [truncated]"


def tool_results_text(view: View, group: Group) -> str:
    """``ToolResultCompactionStrategy._summary_text`` of a group's results, labelled with their tools."""
    names = {tc.id: tc.function.name for i in group.members for tc in view.messages[i].tool_calls
             if view.messages[i].role == "assistant" and tc.id and tc.function.name}
    labels = []
    for i in group.members:
        m = view.messages[i]
        if m.role == "tool":
            name = names.get(m.tool_call_id or "", "")
            labels.append((f"{name}: {m.text}" if name else m.text).strip())
    label = "; ".join(labels) if labels else "no results"
    text = f"{TOOL_RESULTS_PREFIX}{label}]"
    if len(text) <= TOOL_RESULTS_MAX:
        return text
    allowed = TOOL_RESULTS_MAX - len(TOOL_RESULTS_PREFIX) - len(TOOL_RESULTS_CUT) - 1
    return f"{TOOL_RESULTS_PREFIX}{label[:allowed].rstrip()}{TOOL_RESULTS_CUT}]"


@register(
    "maf_tool_result_compaction", MafToolGroupsParams,
    "Replaces every tool_call group but the newest keep_last_tool_call_groups with an assistant message "
    "'[Tool results: name: result; ...]' where the group started.",
    "Microsoft Agent Framework ToolResultCompactionStrategy (agent-framework-core 1.23.0)",
)
def _maf_tool_result_compaction(view: View, p: MafToolGroupsParams) -> Outcome:
    groups = maf_groups(view)
    _, old = _tool_groups(groups, p.keep_last_tool_call_groups)
    keep_text = f"the newest {plural(p.keep_last_tool_call_groups, 'tool_call group')}"
    out = _outcome(view, groups, set(old),
                   f"summarized into MAF's '[Tool results: …]' message: a tool_call group older than {keep_text}",
                   "kept: not a tool_call group, or among the newest")
    kept_before = 0
    kept_sorted = out.kept
    pointer = 0
    inserts: list[Insert] = []
    for n, gi in enumerate(old):
        g = groups[gi]
        while pointer < len(kept_sorted) and kept_sorted[pointer] < g.start:
            pointer += 1
        kept_before = pointer
        text = tool_results_text(view, g)
        inserts.append(Insert(
            kept_before + n, Message(role="assistant", content=text),
            f"MAF's compacted tool results of {plural(len(g.members), 'message')}: an assistant message where the "
            "group started", tuple(g.members),
        ))
    out.inserted = list(inserts)
    if any(len(x.message.text) == TOOL_RESULTS_MAX and x.message.text.endswith(TOOL_RESULTS_CUT + "]")
           for x in inserts):
        out.notes.append(f"MAF caps a '[Tool results: …]' message at {TOOL_RESULTS_MAX:,} characters (results were "
                         "copied uncapped before microsoft/agent-framework#7393).")
    out.notes += _linked_note(view, groups, set(old))
    return out


# ---------------------------------------------------------------------------------------------------------------
# SummarizationStrategy

# agent_framework._compaction.DEFAULT_SUMMARIZATION_PROMPT (1.23.0).
MAF_SUMMARY_PROMPT = """**Generate a clear and complete summary of the entire conversation in no more than five sentences.**

The summary must always:
- Reflect contributions from both the user and the assistant
- Preserve context to support ongoing dialogue
- Incorporate any previously provided summary
- Emphasize the most relevant and meaningful points

The summary must never:
- Offer critique, correction, interpretation, or speculation
- Highlight errors, misunderstandings, or judgments of accuracy
- Comment on events or ideas not present in the conversation
- Omit any details included in an earlier summary
"""  # noqa: E501 (the framework's prompt, verbatim)


def _estimate(text: str) -> int:
    return max(1, len(text) // 4)


def maf_transcript_line(number: int, m: Message) -> str:
    """``_format_summary_message``: ``{i}. [{role}] {text; function_call name(args) [call_id=…]; …}``."""
    parts: list[str] = []
    if m.role == "tool":
        # An empty result is one empty text item, which MAF renders by its type ("text content").
        result = m.text or "text content"
        parts.append(f"function_result: {result} [call_id={m.tool_call_id}]" if m.tool_call_id
                     else f"function_result: {result}")
    else:
        if m.text:
            parts.append(m.text)
        for tc in m.tool_calls:
            call = f"function_call {tc.function.name}({tc.function.arguments})"
            parts.append(call + (f" [call_id={tc.id}]" if tc.id else ""))
    return f"{number}. [{m.role}] {'; '.join(parts)}"


def maf_transcript(messages: list[Message], start: int = 1) -> str:
    return "\n".join(maf_transcript_line(start + k, m) for k, m in enumerate(messages))


def maf_summary_prompt(messages: list[Message]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": MAF_SUMMARY_PROMPT}, {"role": "user", "content": maf_transcript(messages)}]


@register(
    "maf_summarization", MafSummarizationParams,
    "Past target_count + threshold non-system messages, replaces the oldest groups (those that fit MAF's "
    "summarizer budget) with an assistant summary where the first of them started.",
    "Microsoft Agent Framework SummarizationStrategy (agent-framework-core 1.23.0)",
)
def _maf_summarization(view: View, p: MafSummarizationParams) -> Outcome:
    groups = maf_groups(view)
    candidates_all = [gi for gi, g in enumerate(groups) if g.kind != "system"]
    m = sum(len(groups[gi].members) for gi in candidates_all)
    if m <= p.target_count + p.threshold:
        return keep_all(view, f"kept: {plural(m, 'non-system message')}, not more than target_count + threshold = "
                              f"{p.target_count + p.threshold}")
    keep: list[int] = []
    retained = 0
    for gi in reversed(candidates_all):
        if retained >= p.target_count and keep:
            break
        keep.append(gi)
        retained += len(groups[gi].members)
    keep_set = set(keep)
    candidates = [gi for gi in candidates_all if gi not in keep_set]
    selected: list[int] = []
    notes: list[str] = []
    if p.max_summary_input_tokens is None:
        selected = list(candidates)
    else:
        prompt_tokens = _estimate(MAF_SUMMARY_PROMPT)
        text_tokens = 0
        count = 0
        for gi in candidates:
            text = maf_transcript([view.messages[i] for i in groups[gi].members], start=count + 1)
            candidate = text_tokens + _estimate(text) + (1 if selected else 0)
            if prompt_tokens + candidate > p.max_summary_input_tokens:
                if not selected:
                    continue
                break
            selected.append(gi)
            count += len(groups[gi].members)
            text_tokens = candidate
    if not candidates:
        return keep_all(view, "kept: every group is among the newest kept")
    if not selected:
        out = keep_all(view, "kept: no complete group fits max_summary_input_tokens")
        out.notes = [f"No complete message group fits max_summary_input_tokens={p.max_summary_input_tokens:,} "
                     "(MAF warns 'Skipping summarization compaction' and changes nothing)."]
        return out
    covers = sorted(i for gi in selected for i in groups[gi].members)
    summary = summary_text(
        n=len(covers), params=p, framework="MAF",
        prompt=lambda: maf_summary_prompt([view.messages[i] for gi in selected for i in groups[gi].members]),
    )
    if summary.note:
        notes.append(summary.note)
    selected_set = set(selected)
    out = _outcome(view, groups, selected_set,
                   f"summarized: among the oldest groups, beyond the newest {plural(p.target_count, 'message')} kept "
                   "(target_count)", "kept: not summarized")
    for gi in keep:
        for i in groups[gi].members:
            out.kept_reasons[i] = f"kept: among the newest groups holding target_count={p.target_count} messages"
    for gi in candidates:
        if gi not in selected_set:
            for i in groups[gi].members:
                out.kept_reasons[i] = (f"kept: not summarized, as it does not fit max_summary_input_tokens="
                                       f"{p.max_summary_input_tokens:,} (MAF's estimate: 4 characters a token)")
    start = min(groups[gi].start for gi in selected)
    position = sum(1 for i in out.kept if i < start)
    out.inserted = [summary_insert(
        view, p, position=position, role="assistant", summary=summary, covers=covers,
        reason=f"MAF's summary of {plural(len(covers), 'message')}: an assistant message where the first summarized "
               "group started",
    )]
    skipped_first = [gi for gi in candidates if gi not in selected_set and gi < max(selected)]
    if skipped_first:
        notes.append("A group too large for max_summary_input_tokens was skipped and later ones summarized, so the "
                     "summary sits among kept messages it does not cover.")
    out.notes = notes + _linked_note(view, groups, selected_set)
    return out
