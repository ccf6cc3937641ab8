"""Uploads waiting between the import preview and its confirmation.

A file named by a random token and the user's id (never the session cookie), in ``MEMORYVIZ_UPLOAD_DIR``: several
application servers behind one database need a folder they share, so that the confirm finds the upload whichever
server the preview ran on. A waiting upload is removed after ``MEMORYVIZ_UPLOAD_TTL_SECONDS``, and a user may
keep at most ``MEMORYVIZ_UPLOADS_PER_USER`` of them, ``MEMORYVIZ_UPLOAD_BYTES_PER_USER`` bytes in all.
"""
from __future__ import annotations

import re
import secrets
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.template.defaultfilters import filesizeformat

_TOKEN = re.compile(r"^[A-Za-z0-9_-]{20,64}$")


class UploadRefused(Exception):
    """The user's waiting uploads would go over their quota; ``str(e)`` says which and what to do."""


def upload_dir() -> Path:
    configured = settings.MEMORYVIZ_UPLOAD_DIR
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "memoryviz-uploads"


def upload_path(user: Any, token: str) -> Path | None:
    """Where the user's upload under ``token`` waits (whether or not it is still there); None for a token that
    is not one. The user's id is part of the name: a token leaked to someone else confirms nothing for them."""
    return upload_dir() / f"{user.pk}-{token}.upload" if _TOKEN.match(token) else None


def upload_save(user: Any, chunks: Iterable[bytes], *, size: int) -> tuple[str, Path]:
    """Keep ``size`` bytes for the user under a new token; UploadRefused over the user's quota."""
    _purge_expired()
    waiting = [p.stat().st_size for p in upload_dir().glob(f"{user.pk}-*.upload")]
    wait = f"confirm or cancel them, or wait {settings.MEMORYVIZ_UPLOAD_TTL_SECONDS // 60} minutes for them to expire"
    if len(waiting) >= settings.MEMORYVIZ_UPLOADS_PER_USER:
        raise UploadRefused(f"Uploads waiting for your confirmation: {len(waiting)}, the most one user may keep; "
                            f"{wait}.")
    if sum(waiting) + size > settings.MEMORYVIZ_UPLOAD_BYTES_PER_USER:
        raise UploadRefused(f"Your uploads waiting for confirmation would take {filesizeformat(sum(waiting) + size)}"
                            f", more than the {filesizeformat(settings.MEMORYVIZ_UPLOAD_BYTES_PER_USER)} one user "
                            f"may keep; {wait}.")
    token = secrets.token_urlsafe(24)
    path = upload_dir() / f"{user.pk}-{token}.upload"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)
    return token, path


def _purge_expired() -> None:
    folder = upload_dir()
    if not folder.is_dir():
        return
    limit = time.time() - settings.MEMORYVIZ_UPLOAD_TTL_SECONDS
    for item in folder.glob("*.upload"):
        try:
            if item.stat().st_mtime < limit:
                item.unlink()
        except OSError:  # removed meanwhile by another server's purge
            pass
