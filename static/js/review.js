// memoryviz: QA review on top of htmx (label colours, the session page's keys). Everything works without it.
// No inline script or style (the Content-Security-Policy refuses them): colours are set through the CSSOM.

function paintLabels(root) {
  for (const chip of root.querySelectorAll("[data-color]")) {
    if (/^#[0-9a-fA-F]{6}$/.test(chip.dataset.color)) chip.style.setProperty("--chip", chip.dataset.color);
  }
}
paintLabels(document);
document.addEventListener("htmx:afterSettle", () => paintLabels(document));
