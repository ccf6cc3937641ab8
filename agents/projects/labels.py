"""A project's labels: its label set (name and colour, the chip's ink chosen for contrast), kept by its admins."""
from __future__ import annotations

import re

from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet

from agents import access, models
from agents.access import User

LABEL_NAME_MAX = 60
LABEL_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")
# Offered on the settings page for a new label; any #rrggbb is accepted.
LABEL_COLORS = ("#dc2626", "#ea580c", "#ca8a04", "#16a34a", "#0891b2", "#2563eb", "#7c3aed", "#db2777", "#6b7280")

# The two inks a label chip's text can take: whichever contrasts more with the chip's colour. With pure black and
# white one of them always reaches WCAG's 4.5:1 (the worst colour gives 4.58:1 with both).
INK_DARK = "#000000"
INK_LIGHT = "#ffffff"


def relative_luminance(color: str) -> float:
    """WCAG 2's relative luminance of a ``#rrggbb`` colour (0 black, 1 white)."""
    channels = []
    for k in (1, 3, 5):
        c = int(color[k:k + 2], 16) / 255
        channels.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    r, g, b = channels
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(first: str, second: str) -> float:
    """WCAG 2's contrast ratio of two ``#rrggbb`` colours, from 1 to 21."""
    high, low = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def label_ink(color: str) -> str:
    """The text colour of a label chip of ``color``: black or white, whichever contrasts more (white when the
    colour is not ``#rrggbb``, the chip's default grey then showing)."""
    if not LABEL_COLOR.match(color or ""):
        return INK_LIGHT
    return INK_DARK if contrast_ratio(color, INK_DARK) > contrast_ratio(color, INK_LIGHT) else INK_LIGHT


# --- labels ---------------------------------------------------------------------------------------------------


def labels_for_project(project: models.Project) -> QuerySet[models.Label]:
    return models.Label.objects.filter(project=project).order_by("name")


def _label_fields(name: str, color: str) -> tuple[str, str]:
    name = " ".join(name.split())
    if not name:
        raise ValueError("name: a label needs a name")
    if len(name) > LABEL_NAME_MAX:
        raise ValueError(f"name: at most {LABEL_NAME_MAX} characters")
    color = color.strip().lower()
    if not LABEL_COLOR.match(color):
        raise ValueError(f"color: {color[:20]!r} is not a colour as #rrggbb")
    return name, color


def label_create(*, user: User, project: models.Project, name: str, color: str = LABEL_COLORS[-1]) -> models.Label:
    access.require_role(user, project, "admin")
    name, color = _label_fields(name, color)
    if models.Label.objects.filter(project=project, name__iexact=name).exists():
        raise ValueError(f"name: the project already has a label {name!r}")
    try:
        with transaction.atomic():
            return models.Label.objects.create(project=project, name=name, color=color)
    except IntegrityError:
        raise ValueError(f"name: the project already has a label {name!r}") from None


def label_update(*, user: User, label: models.Label, name: str, color: str) -> models.Label:
    access.require_role(user, label.project, "admin")
    name, color = _label_fields(name, color)
    if models.Label.objects.filter(project=label.project_id, name__iexact=name).exclude(pk=label.pk).exists():
        raise ValueError(f"name: the project already has a label {name!r}")
    label.name, label.color = name, color
    label.save(update_fields=["name", "color"])
    return label


def label_delete(*, user: User, label: models.Label) -> int:
    """Delete the label; annotations that were only this label (no comment) go with it, the others lose it.
    Returns how many annotations were removed."""
    access.require_role(user, label.project, "admin")
    with transaction.atomic():
        removed, _ = models.Annotation.objects.filter(label=label, comment="").delete()
        label.delete()
    return removed


def label_usage(project: models.Project) -> dict[int, int]:
    """label id -> how many annotations use it (one query)."""
    rows = models.Annotation.objects.filter(label__project=project).values("label").annotate(n=Count("id"))
    return {row["label"]: row["n"] for row in rows}
