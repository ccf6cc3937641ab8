"""Stored sessions: the one writer and reader of their rows, and the session list's filters."""
