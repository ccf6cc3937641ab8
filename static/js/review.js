// memoryviz: QA review on top of htmx (label colours, the session page's keys). Everything works without it.
// No inline script or style (the Content-Security-Policy refuses them): colours are set through the CSSOM.

function paintLabels(root) {
  for (const chip of root.querySelectorAll("[data-color]")) {
    if (/^#[0-9a-fA-F]{6}$/.test(chip.dataset.color)) chip.style.setProperty("--chip", chip.dataset.color);
  }
}
paintLabels(document);
document.addEventListener("htmx:afterSettle", () => paintLabels(document));

// The review queue's keys, as the page's <kbd> hints say: s skips to the next unreviewed session, d marks this one
// done and opens the next, l and c go to the annotation's label and comment. Not while typing, not with a modifier.
const REVIEW_KEYS = {
  s: () => document.getElementById("queue-skip"),
  d: () => document.getElementById("queue-done"),
  l: () => document.getElementById("annotate-label"),
  c: () => document.getElementById("annotate-comment"),
};
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
  const target = event.target;
  if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
  const find = REVIEW_KEYS[event.key];
  const element = find && find();
  if (!element) return;
  event.preventDefault();
  if (element.matches("a, button")) element.click();
  else element.focus();
});
