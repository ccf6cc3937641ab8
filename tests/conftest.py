from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from agents.models import Agent, Membership, Project


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def project(db, alice) -> Project:
    proj = Project.objects.create(name="Alpha", slug="alpha")
    Membership.objects.create(project=proj, user=alice, role=Membership.Level.ADMIN)
    return proj


@pytest.fixture
def agent(project) -> Agent:
    return Agent.objects.create(project=project, name="Travel bot", slug="travel-bot", model="gpt-4o", context_window=128_000)


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client
