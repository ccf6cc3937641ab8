"""Diffs: two sessions side by side, or a session against a trimmed view of it."""
