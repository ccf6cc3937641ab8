"""Dark mode: the pages follow the system's colour scheme (prefers-color-scheme), with readable contrast."""
from __future__ import annotations

import pytest

from tests.browser.conftest import CONTRAST, WCAG, screenshot
from tests.conversations import TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


# Surfaces that once kept a hard-coded light colour in dark mode: each must follow the scheme.
SURFACES = {
    "list": ["#session-table .badge-status"],
    "session": ["kbd"],
    "lab": [".strip-cell.strip-dropped"],
}
BACKGROUND = """(selector) => {
  const e = document.querySelector(selector);
  if (!e) return null;
  const [r, g, b] = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""

# Every text shown under an element whose contrast against its background is under 4.5 (WCAG's formula, as CONTRAST):
# "text (colour on background): ratio", once per kind. For a page whose styles are not ours (Redoc's, generated
# class names), where naming a few selectors would miss the rest.
UNREADABLE = f"""(root) => {{
  {WCAG}
  const found = new Map();
  for (const e of document.querySelectorAll(`${{root}} *`)) {{
    const text = [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent.trim()).join("");
    if (!text || !e.getBoundingClientRect().height) continue;  // no text of its own, or not shown
    const [ratio, colour, back] = contrastOf(e);
    if (ratio < 4.5 && !found.has(colour + back)) {{
      found.set(colour + back, `${{text.slice(0, 40)}} (${{colour}} on rgb(${{back}})): ${{ratio.toFixed(2)}}`);
    }}
  }}
  return [...found.values()];
}}"""


def _luminance(page) -> float:
    # A transparent body (DRF's light pages: a background image over the canvas) shows the white canvas.
    return page.evaluate(
        "() => { const [r, g, b, a] = getComputedStyle(document.body).backgroundColor.match(/[\\d.]+/g).map(Number);"
        " if (a === 0) return 1; return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255; }"
    )


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_the_pages_follow_the_system_colour_scheme_with_readable_text(browser, live_server, alice, make_session,
                                                                      scheme):
    session = make_session(TRAVEL, title="Paris and Tokyo")
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme=scheme)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "pw-alice-123")
        page.click("button[type=submit]")
        page.wait_for_selector("#session-table")
        pages = {
            "list": ("/", ["#session-table td.title-cell > a", "#session-table .muted", "label[for=id_q]",
                           "table.data th", ".sidebar-title"]),
            "session": (f"/sessions/{session.pk}/", ["article.msg .text", "article.msg .role", ".facts dt",
                                                     ".badge-violation, .badge-error, .badge-ok"]),
            "lab": (f"/sessions/{session.pk}/lab/?strategy=buffered&buffer_size=3",
                    [".strategy-about p", ".param .help", "#kept-count", ".lab-reason", "button.button.primary"]),
            # The browsable API (DRF's own pages, through templates/rest_framework/api.html and static/css/api.css).
            "api": (f"/api/sessions/{session.pk}/", ["ul.breadcrumb a", ".page-header h1", ".response-info pre",
                                                     ".content-main .pull-left code"]),
            # The top bar's "API": Swagger UI, in its own dark theme (html.dark-mode) when the system prefers dark.
            "docs": ("/api/docs/", [".swagger-ui .info .title", ".swagger-ui .opblock-tag",
                                    ".swagger-ui .opblock-summary-description"]),
            # Redoc: started with a dark theme (static/js/redoc_dark.js) when the system prefers dark.
            "redoc": ("/api/redoc/", [".api-info h1", ".menu-content label", ".api-content h2",
                                      ".api-content p"]),
        }
        for name, (path, selectors) in pages.items():
            page.goto(f"{live_server.url}{path}")
            page.wait_for_load_state()
            if name == "docs":
                page.wait_for_selector(".swagger-ui .opblock-summary-description")
            if name == "redoc":
                page.wait_for_selector(".api-content h2")
                assert page.evaluate(UNREADABLE, "#redoc-container") == [], scheme
            dark = _luminance(page) < 0.2
            assert dark is (scheme == "dark"), (name, _luminance(page))
            for selector in selectors:
                ratio = page.evaluate(CONTRAST, selector)
                assert ratio is not None, (name, selector)
                assert ratio >= 4.5, (scheme, name, selector, round(ratio, 2))
            for selector in SURFACES.get(name, []):
                surface = page.evaluate(BACKGROUND, selector)
                assert surface is not None, (name, selector)
                assert (surface < 0.4) if scheme == "dark" else (surface > 0.6), (scheme, name, selector, surface)
            for width in (1440, 390):
                page.set_viewport_size({"width": width, "height": 900})
                screenshot(page, f"{scheme}-{name}-{width}")
            page.set_viewport_size({"width": 1440, "height": 900})
    finally:
        context.close()



# Every colour an element paints, by property: its text, background (and gradient), the borders and outline it draws,
# its shadow, the line through a struck text, a shape's fill and stroke. A colour it does not show (a border of width
# 0, a transparent background, no outline) is left out, and so is one that only repeats its text's (a border in
# currentColor): what is left is what the stylesheet chose. Elements are named by their path from <main>, the same in
# both schemes.
PAINTED = """(root) => {
  const out = [];
  const shapes = new Set(["path", "rect", "circle", "ellipse", "line", "polyline", "polygon", "text"]);
  const shown = (c) => c && c !== "none" && c !== "transparent" && !/^rgba\\(.*,\\s*0\\)$/.test(c);
  const nodes = [...document.querySelectorAll(root)].flatMap((r) => [r, ...r.querySelectorAll("*")]);
  for (const e of nodes) {
    const box = e.getBoundingClientRect();
    if (!box.width || !box.height) continue;
    const s = getComputedStyle(e);
    const colours = {};
    if (shown(s.backgroundColor)) colours.background = s.backgroundColor;
    if (/(rgb|#)/.test(s.backgroundImage)) colours.gradient = s.backgroundImage;
    if ([...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) colours.color = s.color;
    for (const side of ["Top", "Right", "Bottom", "Left"]) {
      const c = s[`border${side}Color`];
      if (parseFloat(s[`border${side}Width`]) > 0 && s[`border${side}Style`] !== "none" && shown(c) && c !== s.color) {
        colours[`border-${side.toLowerCase()}`] = c;
      }
    }
    if (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0 && shown(s.outlineColor)
        && s.outlineColor !== s.color) colours.outline = s.outlineColor;
    if (s.boxShadow !== "none") colours.shadow = s.boxShadow;
    if (s.textDecorationLine !== "none" && shown(s.textDecorationColor) && s.textDecorationColor !== s.color) {
      colours.decoration = s.textDecorationColor;
    }
    if (shapes.has(e.tagName.toLowerCase())) {
      if (shown(s.fill) && s.fill !== s.color) colours.fill = s.fill;
      if (shown(s.stroke) && s.stroke !== s.color) colours.stroke = s.stroke;
    }
    if (!Object.keys(colours).length) continue;
    const path = [];
    for (let p = e; p && p !== document.body; p = p.parentElement) {
      const at = p.parentElement ? [...p.parentElement.children].indexOf(p) : 0;
      path.unshift(`${p.tagName.toLowerCase()}${[...p.classList].map((c) => `.${c}`).join("")}:${at}`);
    }
    out.push([path.join(" > "), colours]);
  }
  return out;
}"""

# What keeps its colour in both schemes on purpose: a label's chip is drawn in the colour its project chose.
SAME_ON_PURPOSE = (".label-chip",)


def test_no_colour_of_the_lab_the_diff_or_the_review_stays_as_it_is_in_light_mode(browser, live_server, alice, project,
                                                                                  make_session):
    """The places that once kept a light colour in dark mode (the lab's strip, the diff's outlines and word marks, the
    review's badges and queue bar) and the rest of their pages: every colour painted in dark mode differs from the
    same element's in light mode, and every text stays readable. A colour written into a rule, or a custom property
    the dark block forgets, fails here by the element that shows it."""
    from agents import models
    from tests.conversations import two_runs

    first, second = two_runs()
    a = make_session(first, title="Trip planner, run 1")
    b = make_session(second, title="Trip planner, run 2")
    done = make_session(TRAVEL, title="Lima run")
    broken = make_session([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "x"}],
                          title="Broken orphan")
    models.Session.objects.filter(pk=b.pk).update(review_status=models.ReviewStatus.IN_REVIEW, assignee=alice)
    # The queue opens the first run, the one unreviewed session.
    models.Session.objects.filter(pk__in=[done.pk, broken.pk]).update(review_status=models.ReviewStatus.DONE)
    label = models.Label.objects.create(project=project, name="hallucination", color="#dc2626")
    models.Annotation.objects.create(session=a, label=label, comment="made up", author=alice)
    models.Annotation.objects.create(session=a, message=a.messages.get(seq=5), comment="check the city", author=alice)
    pages = {
        # kept, dropped and inserted in the strip and the messages
        "lab": (f"/sessions/{a.pk}/lab/?strategy=head_and_tail&head_size=2&tail_size=4",
                [".strip-cell.strip-kept", ".strip-cell.strip-dropped", ".strip-cell.strip-inserted",
                 ".msg.lab-inserted", ".msg.lab-dropped"]),
        # edited messages, and what they were before the edit
        "lab-edited": (f"/sessions/{a.pk}/lab/?strategy=langchain_clear_tool_uses&trigger=0&keep=1"
                       "&clear_tool_inputs=true", [".strip-cell.strip-edited", ".msg.lab-edited"]),
        "diff": (f"/sessions/{a.pk}/diff/?with={b.pk}", [".diff-cell", ".del", ".ins"]),
        "diff-trimmed": (f"/sessions/{a.pk}/diff/?trim=head_and_tail:head_size=2,tail_size=4", [".diff-cell"]),
        "review-list": ("/", [".badge-status.status-unreviewed", ".badge-status.status-in_review",
                              ".badge-status.status-done"]),
        "review-queue": ("/review/next/", [".queue-bar", ".annotation", ".msg-annotation", "kbd"]),
    }
    painted: dict[tuple[str, str], dict[str, dict[str, str]]] = {}
    unreadable: list[str] = []
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme=scheme)
        try:
            page = context.new_page()
            page.goto(f"{live_server.url}/login/")
            page.fill("input[name=username]", "alice")
            page.fill("input[name=password]", "pw-alice-123")
            page.click("button[type=submit]")
            page.wait_for_selector("#session-table")
            for name, (path, shown) in pages.items():
                page.goto(f"{live_server.url}{path}")
                page.wait_for_load_state("networkidle")
                for selector in shown:  # the places this is about are on the page, so compared
                    assert page.locator(f"main {selector}").count(), (name, selector)
                painted[(scheme, name)] = dict(page.evaluate(PAINTED, "main"))
                if scheme == "dark":
                    unreadable += [f"{name}: {found}" for found in page.evaluate(UNREADABLE, "main")]
                    screenshot(page, f"dark-colours-{name}")
        finally:
            context.close()
    fixed = []
    for name in pages:
        light, dark = painted[("light", name)], painted[("dark", name)]
        assert light.keys() == dark.keys(), name  # the same elements drawn in both schemes
        assert len(light) > 50, name
        for element, colours in light.items():
            if any(f"{cls}" in element.replace(":", " ").replace(" > ", " ") for cls in SAME_ON_PURPOSE):
                continue
            for prop, value in colours.items():
                if dark[element].get(prop) == value:
                    fixed.append(f"{name}: {element.split(' > ', 2)[-1]} {prop} {value}")
    assert fixed == [] and unreadable == [], "\n".join(fixed + unreadable)
