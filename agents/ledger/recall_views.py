"""The recall page: one recall with its items, QA's marks and the figures they give, and the retrieval what-if. Each
view reads its input, calls one function of ``ledger.recall_page`` and renders what it returns; over htmx, only the
part asked for (``what-if``) or the part a form changed (``quality``); without htmx, a form's POST redirects back."""
from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from agents.http import HtmxHttpRequest
from agents.ledger import recall_page

# The parts of the page that change on their own (the id of the element each replaces).
RECALL_PARTS = ("what-if", "quality")


@require_GET
def memory_recall(request: HtmxHttpRequest, recall_id: int) -> HttpResponse:
    """A recall: its items, their marks and figures, and what a different limit or threshold would have kept."""
    shown = recall_page.recall_page(user=request.user, recall_id=recall_id, query=request.GET)
    template_name = "agents/memory_recall.html"
    if request.htmx and request.htmx.target in RECALL_PARTS:
        template_name += f"#{request.htmx.target}"
    return render(request, template_name, {"page": shown})


def _answer(request: HtmxHttpRequest, answer: recall_page.MarkAnswer) -> HttpResponse:
    """A mark form's answer: with htmx the marks and figures again (an error among them, 200: htmx swaps no 4xx);
    without, back to the page at the item, or the page with the error (400)."""
    if request.htmx:
        shown = recall_page.recall_page(user=request.user, recall_id=answer.recall.pk, query={}, error=answer.error)
        return render(request, "agents/memory_recall.html#quality", {"page": shown})
    if answer.error:
        shown = recall_page.recall_page(user=request.user, recall_id=answer.recall.pk, query={}, error=answer.error)
        return render(request, "agents/memory_recall.html", {"page": shown}, status=400)
    return redirect(f"{recall_page.recall_path(answer.recall)}#{answer.anchor}")


@require_POST
def memory_recall_mark(request: HtmxHttpRequest, recall_id: int) -> HttpResponse:
    """Mark an item relevant or not (``item``, ``relevant``: yes, no, or blank to take the mark back)."""
    return _answer(request, recall_page.recall_marked(user=request.user, recall_id=recall_id, data=request.POST))


@require_POST
def memory_recall_judgement(request: HtmxHttpRequest, recall_id: int) -> HttpResponse:
    """How many records of the store answer the query (``relevant_total``; blank takes it back)."""
    return _answer(request, recall_page.recall_judged(user=request.user, recall_id=recall_id, data=request.POST))
