"""The memory pages: an agent's memory, one record, an agent's snapshots. Each view reads its input, calls one
function of ``ledger.pages`` (``ledger.snapshots``) and renders what it returns; over htmx, only the part asked for."""
from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents.http import HtmxHttpRequest, collector_paused
from agents.ledger import pages, record_page, snapshots

# The parts of the record page that page or change on their own (the id of the element each replaces).
RECORD_PARTS = ("versions", "diff", "reads")
# The snapshots page's part that pages on its own.
SNAPSHOT_PARTS = ("timeline",)


@require_GET
def agent_memory(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    """The agent's stores, and one store's records searched, filtered, sorted and paged (the filters in the URL)."""
    if request.htmx and request.htmx.target == "memory-live":
        # Following live: the poller again while nothing arrived, else it, the stores and the records.
        token = request.GET.get("live", "")
        followed = pages.memory_follow(user=request.user, agent_id=agent_id, query=request.GET, token=token)
        return render(request, "agents/agent_memory.html#memory-live-update",
                      {"memory": followed, "poll_url": request.get_full_path()})
    shown = pages.agent_memory_page(user=request.user, agent_id=agent_id, query=request.GET,
                                    fragment=bool(request.htmx))
    template_name = "agents/agent_memory.html"
    if request.htmx:
        # The records' table alone (with the filters' errors out of band): the stores and the form stay.
        template_name += "#records"
    return render(request, template_name, {"memory": shown})


@require_GET
def memory_record(request: HtmxHttpRequest, record_id: int) -> HttpResponse:
    """A record: its versions as a timeline, the word diff of two (``?from=&to=``), and every read of it."""
    template_name = "agents/memory_record.html"
    if request.htmx and request.htmx.target == "record-live":
        # Following live: the poller again while nothing arrived, else it and the newest versions and reads.
        token = request.GET.get("live", "")
        followed = record_page.record_follow(user=request.user, record_id=record_id, token=token)
        return render(request, template_name + "#record-live-update",
                      {"page": followed, "token": token, "path": request.path})
    shown = record_page.memory_record_page(user=request.user, record_id=record_id, query=request.GET)
    if request.htmx and request.htmx.target in RECORD_PARTS:
        template_name += f"#{request.htmx.target}"
    return render(request, template_name, {"page": shown})


@require_GET
@collector_paused  # two snapshots of a long session are hundreds of thousands of objects, in no cycle
def agent_snapshots(request: HtmxHttpRequest, agent_id: int) -> HttpResponse:
    """An agent's snapshots on a timeline (paged), one opened as a tree (``?snapshot=``), two compared (``?a=&b=``)."""
    shown = snapshots.agent_snapshots_page(user=request.user, agent_id=agent_id, query=request.GET)
    template_name = "agents/agent_snapshots.html"
    if request.htmx and request.htmx.target in SNAPSHOT_PARTS:
        template_name += f"#{request.htmx.target}"
    return render(request, template_name, {"page": shown})
