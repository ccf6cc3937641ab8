"""The JSON API: the pages' twins, for scripts and other tools."""
