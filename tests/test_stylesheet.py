"""The stylesheet keeps every colour in a custom property, so that dark mode (prefers-color-scheme) reaches all."""
from __future__ import annotations

import re
from pathlib import Path

CSS = (Path(__file__).resolve().parent.parent / "static" / "css" / "app.css").read_text()
COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}\b|\brgba?\(|\bhsla?\(")
DECLARATION = re.compile(r"(--[\w-]+)\s*:\s*([^;]*);")


def _without_comments(css: str) -> str:
    return re.sub(r"/\*.*?\*/", "", css, flags=re.S)


def test_it_writes_colours_only_as_custom_properties() -> None:
    # A colour written in a rule stays the same in dark mode (the lab strip, the diff outlines, the review badges,
    # kbd all did); a custom property's value is what the dark block overrides.
    css = DECLARATION.sub("", _without_comments(CSS))
    literals = [
        (css[: m.start()].count("\n") + 1, css[max(0, m.start() - 40): m.end() + 10].strip())
        for m in COLOUR.finditer(css)
    ]
    assert literals == []


def test_it_defines_every_custom_property_it_uses() -> None:
    css = _without_comments(CSS)
    defined = {name for name, _ in DECLARATION.findall(css)} | {"--chip"}  # --chip is set per label by app.js
    used = set(re.findall(r"var\(\s*(--[\w-]+)", css))
    assert used - defined == set()


def test_it_gives_the_dark_scheme_its_own_value_for_every_light_surface_and_ink() -> None:
    css = _without_comments(CSS)
    root, dark = css.split("@media (prefers-color-scheme: dark)", 1)
    light = dict(DECLARATION.findall(root.split(":root", 1)[1].split("}", 1)[0]))
    dark_values = dict(DECLARATION.findall(dark.split("}", 1)[0]))
    # Colours that are the same in both schemes on purpose: the top bar and login backdrop are dark already, hits
    # and label chips keep their hue, shadows stay black.
    same_on_purpose = {
        "--topbar-ink", "--topbar-link", "--topbar-muted", "--topbar-brand", "--brand-mark", "--login-from",
        "--login-mid", "--hit-strong", "--hit-strong-ink", "--chip-default", "--chip-ink",
    }
    colours = {name for name, value in light.items() if COLOUR.search(value)}
    assert colours - same_on_purpose - set(dark_values) == set()


def test_it_gives_each_colour_a_dark_value_other_than_its_light_one() -> None:
    # A dark value that repeats the light one is a fixed colour too: the lab strip's dropped cells, a light grey,
    # would sit on the dark page as they do on the white one.
    css = _without_comments(CSS)
    root, dark = css.split("@media (prefers-color-scheme: dark)", 1)
    light = dict(DECLARATION.findall(root.split(":root", 1)[1].split("}", 1)[0]))
    dark_values = dict(DECLARATION.findall(dark.split("}", 1)[0]))
    # The same in both schemes on purpose: the current find hit keeps its marker yellow (and its dark ink on it).
    same_on_purpose = {"--hit-strong", "--hit-strong-ink"}
    same = {name for name, value in dark_values.items()
            if light.get(name) is not None and COLOUR.search(value) and value.lower() == light[name].lower()}
    assert same - same_on_purpose == set()
