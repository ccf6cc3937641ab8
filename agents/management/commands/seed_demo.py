"""``python manage.py seed_demo``: realistic demo data (broken sessions and memory layers too) and the demo login.

Deterministic (seeded) and idempotent: projects and agents are matched by slug, sessions by (agent,
external id), so a second run adds nothing and changes nothing. The memory layers are files the libraries wrote
(``agents.demo.memory_layers``), imported as any file is (``transfer.imports.import_file``), which adds nothing the
second time. ``--reset`` deletes the demo agents' sessions and the memory projects' layers first and stores them
again.
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from agents.demo import catalog, memory_layers
from agents.models import Agent, Membership, MemoryStore, Project, Session, Snapshot
from agents.store import outlines, writing
from agents.transfer import imports

# The demo user may browse the agents app in the admin, read-only: staff (not superuser) with "view" permissions.
ADMIN_VIEW_MODELS = ("project", "membership", "agent", "session", "message", "toolcall", "exportrecord")

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "memoryviz-demo"


class Command(BaseCommand):
    help = "Create demo projects, agents, sessions (some deliberately broken) and the demo user."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed", type=int, default=catalog.DEFAULT_SEED, help="Random seed of the generator.")
        parser.add_argument(
            "--reset", action="store_true", help="Delete the demo agents' sessions and store them again."
        )

    def handle(self, *args: Any, seed: int, reset: bool, **options: Any) -> None:
        started = time.monotonic()
        with transaction.atomic():
            projects = {
                p.slug: Project.objects.update_or_create(slug=p.slug, defaults={"name": p.name})[0]
                for p in (*catalog.PROJECTS, *memory_layers.PROJECTS)
            }
            agents = {
                a.slug: Agent.objects.update_or_create(
                    project=projects[a.project],
                    slug=a.slug,
                    defaults={"name": a.name, "description": a.description, "model": a.model,
                              "context_window": a.context_window},
                )[0]
                for a in catalog.AGENTS
            }
            user, created_user = self._demo_user()
            for project in projects.values():
                Membership.objects.update_or_create(
                    project=project, user=user, defaults={"role": Membership.Level.ADMIN}
                )
            if reset:
                deleted, _ = Session.objects.filter(agent__in=agents.values()).delete()
                self.stdout.write(f"Deleted {deleted} rows of the demo agents' sessions.")
                layers = [projects[p.slug] for p in memory_layers.PROJECTS]
                deleted = sum(rows.delete()[0] for rows in (
                    Session.objects.filter(agent__project__in=layers), MemoryStore.objects.filter(project__in=layers),
                    Snapshot.objects.filter(agent__project__in=layers)))
                self.stdout.write(f"Deleted {deleted} rows of the memory layers' projects.")
            existing = set(
                Session.objects.filter(agent__in=agents.values()).values_list("agent__slug", "external_id")
            )
            skipped = messages = 0
            stored_sessions: list[Session] = []
            for demo in catalog.demo_sessions(seed):
                key = (demo.agent, demo.conversation.external_id)
                if key in existing:
                    skipped += 1
                    continue
                session = writing.session_store(agent=agents[demo.agent], conversation=demo.conversation)
                stored_sessions.append(session)
                messages += session.message_count
        stored = len(stored_sessions)
        added = self._memory_layers()
        writing.tables_analyze()  # a bulk load: the memory layers' sessions counted too
        outlines.sessions_structure_keep(stored_sessions)  # as an import does: a first trim reads one value
        elapsed = time.monotonic() - started
        self.stdout.write(self.style.SUCCESS(
            f"Demo data: {len(projects)} projects, {len(agents)} agents; {stored} sessions stored "
            f"({messages:,} messages), {skipped} already there; memory layers from "
            f"{len(memory_layers.FILES_IN_ORDER)} files: {added['sessions']} sessions, {added['stores']} stores, "
            f"{added['records']} records, {added['versions']} versions, {added['recalls']} recalls, "
            f"{added['snapshots']} snapshots added. {elapsed:.1f} s."
        ))
        if created_user:
            self.stdout.write(f"Log in as {DEMO_USERNAME} / {DEMO_PASSWORD}")
        else:
            self.stdout.write(f"Log in as {DEMO_USERNAME} (existing user, password left as it was; "
                              f"created with {DEMO_PASSWORD})")

    def _memory_layers(self) -> Counter[str]:
        """Each file imported as a user would import it (each its own run, all or nothing); a file imported before
        adds nothing."""
        added: Counter[str] = Counter()
        for demo in memory_layers.FILES_IN_ORDER:
            report = imports.import_file(memory_layers.FILES / demo.path, project=demo.project, agent=demo.agent,
                                         label=demo.path)
            memory = report.memory or {}
            added["sessions"] += sum(1 for s in report.sessions if s.status == "imported")
            added["stores"] += sum(1 for s in memory.get("stores", []) if s["status"] == "new")
            for key in ("records", "versions", "recalls", "snapshots"):
                added[key] += memory.get(key, 0)
        return added

    def _demo_user(self) -> tuple[Any, bool]:
        User = get_user_model()
        user, created = User.objects.get_or_create(username=DEMO_USERNAME)
        if created:
            user.set_password(DEMO_PASSWORD)
        # Never a superuser: the demo login must not be able to change users or delete data from the admin.
        user.is_staff, user.is_superuser = True, False
        user.save()
        user.user_permissions.add(*Permission.objects.filter(
            content_type__app_label="agents", content_type__model__in=ADMIN_VIEW_MODELS, codename__startswith="view_"
        ))
        return user, created
