"""python manage.py api_key create --project SLUG --name NAME
python manage.py api_key list --project SLUG
python manage.py api_key revoke PREFIX

``create`` prints what the key is for, then the key alone on the last line (scripts take the last line), once:
only its hash is kept. ``list`` prints the project's keys as JSON (never a secret); ``revoke`` stops a key at once.
Bad input: one line on standard error and exit 2.
"""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser

from agents import models
from agents.management.cli import ContractCommand
from agents.projects import keys


class Command(ContractCommand):
    help = "Create, list or revoke a project's API keys (create prints the key alone on its last line)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Create a key; the key is printed once, on the last line.")
        create.add_argument("--project", required=True, help="The project's slug.")
        create.add_argument("--name", required=True, help="What uses the key, e.g. 'travel-agent in production'.")
        listing = actions.add_parser("list", help="The project's keys as JSON (prefixes, never secrets).")
        listing.add_argument("--project", required=True, help="The project's slug.")
        revoke = actions.add_parser("revoke", help="Revoke a key by its prefix.")
        revoke.add_argument("prefix", help="The key's prefix: the part after mvz_.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "revoke":
            api_key = models.ApiKey.objects.filter(prefix=options["prefix"]).select_related("project").first()
            if api_key is None:
                self.fail(f"prefix: no API key with prefix {options['prefix']!r}")
            keys.api_key_revoke(api_key=api_key)
            self.stdout.write(f"Revoked {api_key.name!r} ({api_key.prefix}) of project {api_key.project.slug}.")
            return
        project = models.Project.objects.filter(slug=options["project"]).first()
        if project is None:
            self.fail(f"--project: no project with slug {options['project']!r}")
        if options["action"] == "list":
            rows = [
                {"name": k.name, "prefix": k.prefix, "created_at": k.created_at.isoformat(),
                 "last_used_at": k.last_used_at.isoformat() if k.last_used_at else None,
                 "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None}
                for k in models.ApiKey.objects.filter(project=project)
            ]
            self.stdout.write(json.dumps({"project": project.slug, "keys": rows}, indent=2))
            return
        try:
            created = keys.api_key_create(project=project, name=options["name"])
        except ValueError as exc:
            self.fail(f"--{exc}")
        self.stdout.write(
            f"API key {created.api_key.name!r} for project {project.slug} (prefix {created.api_key.prefix})."
        )
        self.stdout.write("It is shown once; store it now. Send it as: Authorization: Bearer <key>")
        self.stdout.write(created.key)
