// memoryviz: the little JavaScript the pages use on top of htmx. Everything works without it.

// Filter forms marked data-drop-empty leave empty fields out of the URL they push, so a filtered list's
// link reads "?violations=on" rather than "?q=&project=&agent=&...&violations=on".
document.addEventListener("htmx:configRequest", (event) => {
  const elt = event.detail.elt;
  if (event.detail.verb !== "get" || !elt.closest || !elt.closest("form[data-drop-empty]")) return;
  const data = event.detail.formData;
  if (!data) return;
  for (const key of Array.from(new Set(data.keys()))) {
    if (data.getAll(key).every((value) => value === "")) data.delete(key);
  }
});

// A form that pushes its values to the URL also listens to "change", which a text field fires again when it loses
// focus after its "input" events were already sent: a request for what the page already shows would swap the
// result again under the user's hands (closing the Export menu they just opened). Skip it. A field that the last
// answer brought into the form (the lab's call slider, form="lab-form") and nobody moved yet is not in the URL:
// it asks for nothing new either.
document.addEventListener("htmx:configRequest", (event) => {
  const { elt, verb, formData, triggeringEvent } = event.detail;
  if (verb !== "get" || !triggeringEvent || triggeringEvent.type !== "change" || !formData) return;
  if (!elt.matches || !elt.matches("form[hx-push-url='true']")) return;
  const shown = Array.from(new URLSearchParams(location.search).entries());
  const inUrl = new Set(shown.map(([key]) => key));
  const untouched = (key) => {
    const field = elt.elements.namedItem(key);
    return field instanceof HTMLInputElement && field.type === "range" && field.value === field.defaultValue;
  };
  const asked = Array.from(formData.entries(), ([key, value]) => [key, String(value)])
    .filter(([key]) => inUrl.has(key) || !untouched(key));
  if (JSON.stringify(asked) === JSON.stringify(shown)) event.preventDefault();
});

// A control that sends its own request (the lab's strategy select loads its form) does not also send its form's:
// its "input" event bubbles to the form, whose request would replace the control's own (hx-sync) when the server
// takes longer than the form's delay, and the page would keep the old form under the new URL. (htmx:confirm comes
// before hx-sync aborts anything; htmx:configRequest would come after.)
document.addEventListener("htmx:confirm", (event) => {
  const { elt, triggeringEvent } = event.detail;
  const source = triggeringEvent && triggeringEvent.target;
  if (!source || source === elt || elt.tagName !== "FORM" || !source.hasAttribute) return;
  if (source.hasAttribute("hx-get") || source.hasAttribute("hx-post")) event.preventDefault();
});

// Forms whose values live in the URL (data-sync-url: the list's filters, the report's). After Back or Forward htmx
// puts back a snapshot of the page's markup, which does not hold what was typed or ticked before the snapshot; set
// every field from the URL, so that the form says what the table shows and the next change keeps every filter.
function syncFormFromUrl(form) {
  const params = new URLSearchParams(location.search);
  const seen = new Map(); // name -> how many text fields of that name were filled (the report's strategy boxes)
  for (const field of form.elements) {
    if (!field.name || ["hidden", "submit", "button", "reset"].includes(field.type)) continue;
    const values = params.getAll(field.name);
    if (field.type === "checkbox" || field.type === "radio") {
      field.checked = values.includes(field.value);
    } else if (field.tagName === "SELECT") {
      for (const option of field.options) option.selected = values.includes(option.value);
      if (field.selectedIndex === -1) field.selectedIndex = 0;
    } else {
      const k = seen.get(field.name) || 0;
      seen.set(field.name, k + 1);
      field.value = values[k] ?? "";
    }
  }
}
document.addEventListener("htmx:historyRestore", () => {
  document.querySelectorAll("form[data-sync-url]").forEach(syncFormFromUrl);
});

// A permalink (#m-N) to a message that is not on this page: open the page holding it (?at=N), which the server
// starts at that message's page boundary; the browser then scrolls to the anchor itself.
// ?at=N alone (the login page sends back to the permalink without its #m-N: a fragment does not travel through a
// form's POST) scrolls to that message and highlights it as #m-N would.
(() => {
  const params = new URLSearchParams(location.search);
  const at = params.get("at");
  if (!location.hash && at && /^\d+$/.test(at) && document.getElementById(`m-${at}`)) {
    location.replace(`#m-${at}`);
    return;
  }
  const match = /^#m-(\d+)$/.exec(location.hash);
  if (!match || document.getElementById(`m-${match[1]}`) || !document.querySelector(".messages")) return;
  if (at === match[1]) return; // already asked for it: the message does not exist, stay here
  location.replace(`${location.pathname}?at=${match[1]}${location.hash}`);
})();

// A permalink to a message already on this page scrolls to it without reloading the page; the address bar
// still shows the ?at= form, so that copying it gives a link that works from anywhere.
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target.closest && event.target.closest("a[href*='?at=']");
  if (!link) return;
  const url = new URL(link.href, location.href);
  const match = /^#m-(\d+)$/.exec(url.hash);
  if (url.pathname !== location.pathname || !match || !document.getElementById(`m-${match[1]}`)) return;
  event.preventDefault();
  location.hash = url.hash; // scrolls and moves :target (the highlight)
  history.replaceState(history.state, "", url.href);
});

// A long request refused (too many of yours, or the server busy: 429/503 with Retry-After) says so where its
// answer would have gone, instead of leaving the old content as if nothing happened.
document.addEventListener("htmx:beforeSwap", (event) => {
  const status = event.detail.xhr.status;
  if ((status === 429 || status === 503) && event.detail.xhr.responseText.includes('id="busy-message"')) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});

// "Back" links go back in history when there is somewhere to go back to; their href is the way without JS.
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("a[data-history-back]");
  if (!link || event.button !== 0 || history.length < 2) return;
  event.preventDefault();
  history.back();
});

// A field that shows something to copy (a new API key) selects all of it when focused.
document.addEventListener("focusin", (event) => {
  if (event.target.matches && event.target.matches("input[data-select-on-focus]")) event.target.select();
});

// The report's strategy boxes wrap a long spec (a one-line field cut it off), and Enter runs the report as it would
// in a one-line field.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || event.shiftKey || !event.target.matches || !event.target.matches("textarea.spec-input")) return;
  event.preventDefault();
  event.target.form.requestSubmit();
});

// Escape closes an open Export menu (a <details>) and gives the focus back to its button.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  for (const menu of document.querySelectorAll("details.export-menu[open]")) {
    menu.open = false;
    if (menu.contains(document.activeElement) || document.activeElement === document.body) menu.querySelector("summary").focus();
  }
});

// A field the browser rejects (Min tokens below 0, "1e" in a number field) stops htmx's request, which said nothing:
// say which field and why, in the form's [data-validation-message] box, until a request goes out again.
function labelOf(field) {
  const label = field.id && document.querySelector(`label[for="${field.id}"]`);
  return label ? label.textContent.trim() : field.name;
}
document.addEventListener("htmx:validation:halted", (event) => {
  const box = event.detail.elt.querySelector && event.detail.elt.querySelector("[data-validation-message]");
  if (!box) return;
  const problems = event.detail.errors.map((e) => `${labelOf(e.elt)}: ${e.message}`);
  box.textContent = `${problems.join(" ")} The list still shows the filters before this change.`;
  box.hidden = false;
});
document.addEventListener("htmx:beforeRequest", (event) => {
  const box = event.detail.elt.querySelector && event.detail.elt.querySelector("[data-validation-message]");
  if (box) box.hidden = true;
});

// The lab's copy buttons: the text of a field (data-copy-from="id"), or one key of a JSON answer
// (data-copy-json="url", data-copy-key="messages"), pretty-printed. The status line says what happened; where the
// clipboard is not available (plain http), the field is selected so that a person can copy it.
function copyStatus(button, text) {
  const status = button.closest(".elsewhere-item, .copy-row")?.parentElement?.querySelector(".copy-status")
    || button.closest(".elsewhere-item")?.querySelector(".copy-status");
  if (status) status.textContent = text;
  button.dataset.copied = text;
}

async function writeClipboard(text) {
  if (!navigator.clipboard) throw new Error("no clipboard here");
  await navigator.clipboard.writeText(text);
}

document.addEventListener("click", async (event) => {
  const button = event.target.closest && event.target.closest("button[data-copy-from], button[data-copy-json]");
  if (!button) return;
  if (button.dataset.copyFrom) {
    const field = document.getElementById(button.dataset.copyFrom);
    if (!field) return;
    field.select();
    try {
      await writeClipboard(field.value);
      copyStatus(button, "Copied.");
    } catch (error) {
      copyStatus(button, "Selected: copy it with Ctrl+C.");
    }
    return;
  }
  try {
    const response = await fetch(button.dataset.copyJson, {headers: {Accept: "application/json"}, credentials: "same-origin"});
    if (!response.ok) throw new Error(`the API answered ${response.status}`);
    const data = await response.json();
    const value = button.dataset.copyKey ? data[button.dataset.copyKey] : data;
    await writeClipboard(JSON.stringify(value, null, 2));
    copyStatus(button, `Copied ${Array.isArray(value) ? value.length + " messages" : "the answer"} as JSON.`);
  } catch (error) {
    copyStatus(button, `Not copied: ${error.message}. Open the JSON instead.`);
  }
});
