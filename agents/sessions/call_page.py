"""What the page of one captured call shows: exactly what the call was sent, in its order, with the violations of
that list and the messages it left out, and what filled its window (its input by part against the agent's window)."""
from __future__ import annotations

from typing import Any

from agents import access
from agents.capture import calls
from agents.ledger import context, window_shown
from agents.sessions import find
from agents.sessions.pages import call_view, display_text


def llm_call_page(*, user: access.User, session_id: int, call_id: int) -> dict[str, Any]:
    """The call (404 when it or its session is not in the user's projects) and the stored messages it received."""
    session, call = calls.llm_call_for_user(user, session_id, call_id)
    sent = calls.llm_call_sent_messages(call)
    by_position: dict[int, list[dict[str, Any]]] = {}
    for violation in call.sent_violations:
        by_position.setdefault(violation.get("index", -1), []).append(violation)
    rows = []
    previous = -1
    for position, row in enumerate(sent):
        gap = row.seq - previous - 1 if row.seq > previous else 0
        rows.append({"row": row, "position": position, "gap": gap, "violations": by_position.get(position, []),
                     "permalink": find.permalink(session, row.seq), "text": display_text(row)[0],
                     "calls": [call_view(tc) for tc in row.tool_calls]})
        previous = max(previous, row.seq)
    before = call.reply_seq if call.reply_seq is not None else session.message_count
    # What filled the window: the call's input by part (ledger.context), drawn by the window bar's partial.
    window = window_shown.composition_context(context.reply_context(user=user, session_id=session.pk,
                                                                    call_id=call.pk))
    return {"session": session, "call": call, "rows": rows, "received": len(set(call.sent)), "before": before,
            "left_out": max(before - len(set(call.sent)), 0),
            "reply_href": find.permalink(session, call.reply_seq) if call.reply_seq is not None else "",
            "window": window}
