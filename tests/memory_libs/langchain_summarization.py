"""LangChain 1.x's SummarizationMiddleware summarising a conversation (in .venv-ref-2026, langchain 1.5.0), as
``create_agent`` runs it before a model call: ``before_model`` on the agent's state; the summary model is LangChain's
own FakeListChatModel answering with a fixed summary. Writes ``summarized.json``: the state's messages after the
update (the RemoveMessage applied), dumped with ``messages_to_dict``, as a LangChain history file; and ``api.json``:
the summary text and how many messages went out.

Run: python langchain_summarization.py OUT_DIR
"""
import json
import os
import sys

from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, messages_to_dict

OUT = os.path.abspath(sys.argv[1])
SUMMARY = "Alice plans a week in Lisbon (3-10 May), vegan, no early flights; hotel in Alfama chosen."

messages = []  # create_agent keeps its system prompt out of the state
for i, (question, answer) in enumerate([
        ("I want a week in Lisbon in May, from the 3rd to the 10th.", "Noted: Lisbon, 3-10 May."),
        ("I'm vegan and I hate early flights.", "Noted: vegan, no early flights."),
        ("Pick a hotel in Alfama, please.", "Booked a hotel in Alfama."),
        ("Now plan a day trip to Sintra.", "Here is a Sintra plan.")]):
    messages += [HumanMessage(question, id=f"h{i}"), AIMessage(answer, id=f"a{i}")]
messages.append(HumanMessage("And the budget?", id="h4"))

middleware = SummarizationMiddleware(FakeListChatModel(responses=[SUMMARY]), trigger=("messages", 8),
                                     keep=("messages", 3))
update = middleware.before_model({"messages": messages}, None)
assert update is not None, "the middleware did not summarise"
kept = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
with open(os.path.join(OUT, "summarized.json"), "w") as f:
    json.dump(messages_to_dict(kept), f, indent=1)
with open(os.path.join(OUT, "api.json"), "w") as f:
    json.dump({"summary": SUMMARY, "before": len(messages), "after": len(kept),
               "kept_ids": [m.id for m in kept]}, f, indent=1)
