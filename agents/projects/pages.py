"""What the project settings page shows."""
from __future__ import annotations

from typing import Any

from agents import models
from agents.projects.labels import LABEL_COLORS, label_usage, labels_for_project
from agents.projects.members import members_for_project


def settings_context(project: models.Project) -> dict[str, Any]:
    """What the project settings page shows of members and labels (three queries)."""
    labels = list(labels_for_project(project))
    usage = label_usage(project)
    used_colors = {label.color for label in labels}
    return {
        "members": list(members_for_project(project)),
        "roles": models.Membership.Level.choices,
        "labels": [{"label": label, "used": usage.get(label.pk, 0)} for label in labels],
        "next_color": next((c for c in LABEL_COLORS if c not in used_colors), LABEL_COLORS[-1]),
    }
