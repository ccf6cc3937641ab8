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
  // An address with ?at= names the place ("load more" puts it there): a reload goes to that message rather than to
  // the scroll offset of the longer page the reader had loaded before.
  if (at && document.querySelector(".messages")) history.scrollRestoration = "manual";
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
  if (!link || link.hasAttribute("data-reload")) return; // data-reload: the page itself changes (a search cleared)
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

// The session page's place: the message the reader is looking at. The one the address names (#m-N) while it is on
// screen, else the first whose top is below the bars that stay at the top (the top bar, and on a wide screen the
// chain's tools), else the one filling the screen. Jumps and keys go from there rather than from where the page
// was opened.
function chainTools() {
  return document.getElementById("chain-tools");
}
function toolsStick() {
  const tools = chainTools();
  return !!tools && getComputedStyle(tools).position === "sticky";
}
function chainTop() {
  const bar = document.querySelector(".topbar");
  const tools = chainTools();
  return Math.max(bar ? bar.getBoundingClientRect().bottom : 0, toolsStick() ? tools.getBoundingClientRect().bottom : 0);
}
function namedMessage() {
  return /^#m-(\d+)$/.test(location.hash) ? document.getElementById(location.hash.slice(1)) : null;
}
function currentMessage() {
  const top = chainTop();
  const onScreen = (box) => box.bottom > top + 8 && box.top < window.innerHeight;
  const named = namedMessage();
  if (named && onScreen(named.getBoundingClientRect())) return named;
  let filling = null;
  for (const msg of document.querySelectorAll(".messages .msg")) {
    const box = msg.getBoundingClientRect();
    if (box.top >= top - 8 && box.top < window.innerHeight) return msg;
    if (!filling && onScreen(box)) filling = msg;
  }
  return filling;
}

// Where the tools scroll away with the page (a phone), reaching them moves away from the place: remember the last
// message read while they were out of sight, and go from there.
let readingAt = null;
let placePending = false;
document.addEventListener("scroll", () => {
  const tools = chainTools();
  if (!tools || toolsStick() || placePending) return;
  placePending = true;
  requestAnimationFrame(() => {
    placePending = false;
    const box = tools.getBoundingClientRect();
    if (box.bottom <= 0 || box.top >= window.innerHeight) readingAt = currentMessage();
  });
}, { passive: true });
function placeMessage() {
  if (toolsStick()) return currentMessage();
  return readingAt || namedMessage() || currentMessage();
}

// "Next tool error" and the other jumps: from the place (their href, for use without JS, goes from the message
// the page was opened at).
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("a.jump");
  const msg = link && placeMessage();
  if (!msg) return;
  const url = new URL(link.href, location.href);
  url.searchParams.set("from", msg.id.slice(2));
  link.href = url.href;
});

// "Load earlier" puts the page before in front of the one on screen: keep what the reader was looking at where it
// was (the browser's own scroll anchoring does not act at the top of the page, where that button is).
let earlierAnchor = null;
document.addEventListener("htmx:beforeSwap", (event) => {
  const target = event.detail.target;
  if (!target || !target.classList || !target.classList.contains("load-earlier-bar")) return;
  const first = target.nextElementSibling;
  earlierAnchor = first ? { element: first, top: first.getBoundingClientRect().top } : null;
});
document.addEventListener("htmx:afterSwap", () => {
  if (!earlierAnchor) return;
  window.scrollBy(0, earlierAnchor.element.getBoundingClientRect().top - earlierAnchor.top);
  earlierAnchor = null;
});

// The session page's keys (? lists them): j/k next and previous message, n/p next and previous hit, / the search,
// e/E next and previous tool error, g go to #N, G the last message. Not while typing, not with a modifier.
function moveToMessage(message) {
  document.querySelectorAll(".msg.key-current").forEach((m) => m.classList.remove("key-current"));
  message.classList.add("key-current");
  message.scrollIntoView({ block: "start" });
  // The address names the place (a reload or a copied link comes back to it) without a history entry per key.
  const url = new URL(location.href);
  url.hash = message.id;
  history.replaceState(history.state, "", url.href);
}
function stepMessage(forward) {
  const messages = Array.from(document.querySelectorAll(".messages .msg"));
  const marked = document.querySelector(".msg.key-current");
  const here = marked || currentMessage();
  if (!here) return;
  let index = messages.indexOf(here);
  // Read from the screen (not a message the keys or the address named): j first goes to the message at the top
  // unless it is already there.
  const fromScreen = !marked && here !== namedMessage();
  if (fromScreen && forward && here.getBoundingClientRect().top > chainTop() + 40) index -= 1;
  const next = messages[forward ? index + 1 : index - 1];
  if (next) return moveToMessage(next);
  // Past the last message of the page: load the next one ("load more"), as scrolling down would.
  const more = forward && document.querySelector(".load-more a.button");
  if (more) more.click();
}
function follow(id) {
  const link = document.getElementById(id);
  if (link) link.click();
}
const SESSION_KEYS = {
  j: () => stepMessage(true),
  k: () => stepMessage(false),
  n: () => follow("find-next"),
  p: () => follow("find-previous"),
  e: () => follow("jump-error-next"),
  E: () => follow("jump-error-prev"),
  G: () => follow("jump-last"),
  g: () => { const field = document.getElementById("goto-at"); field.focus(); field.select(); },
  "/": () => { const field = document.getElementById("find-q"); field.focus(); field.select(); },
  "?": () => { const help = document.getElementById("keys-help"); if (help.open) help.close(); else help.showModal(); },
};
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
  if (!document.getElementById("chain-tools")) return;
  const target = event.target;
  if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
  if (document.querySelector("dialog[open]") && event.key !== "?") return; // the list of keys is open: ? or Esc
  const action = SESSION_KEYS[event.key];
  if (!action) return;
  event.preventDefault();
  action();
});
document.addEventListener("click", (event) => {
  if (event.target.closest && event.target.closest("[data-keys-help]")) document.getElementById("keys-help").showModal();
});
document.querySelectorAll("[data-keys-help]").forEach((button) => { button.hidden = false; });
// Scrolled by hand, the keys go from the screen again, not from the message they last moved to.
document.addEventListener("wheel", () => {
  document.querySelectorAll(".msg.key-current").forEach((m) => m.classList.remove("key-current"));
}, { passive: true });

// Copy buttons (a message's text, a tool result, a call's arguments): shown only when this script runs.
document.documentElement.classList.add("js");
function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  // Plain http (a team's server on its network): the clipboard API is not offered; a selected textarea is.
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "visually-hidden";
  document.body.appendChild(area);
  area.select();
  const done = document.execCommand("copy");
  area.remove();
  return done ? Promise.resolve() : Promise.reject(new Error("copy refused"));
}
document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("button[data-copy]");
  if (!button) return;
  const source = button.dataset.copy === "arguments"
    ? button.closest(".call").querySelector("pre")
    // The text as written: for Markdown, the raw view's, not the formatted one's.
    : button.closest(".msg").querySelector(".raw-view > .text")
      || button.closest(".msg").querySelector(".msg-body > .text, .msg-body > details.folded > .text");
  if (!source) return;
  const label = button.textContent;
  copyText(source.dataset.raw || source.textContent).then(() => {
    button.textContent = "copied";
    button.classList.add("copied");
    setTimeout(() => { button.textContent = label; button.classList.remove("copied"); }, 1500);
  }, () => { button.textContent = "copy failed"; });
});

// JSON on the session page (tool results and call arguments) folded by level: the first level open, deeper ones
// closed, values coloured by type; "raw" shows the text as stored again. Built with DOM nodes and textContent, so
// nothing in the JSON is read as markup. Left as text when it holds a search hit (its marks stay) or is not JSON.
function jsonNode(value, depth) {
  const span = (cls, text) => { const s = document.createElement("span"); s.className = cls; s.textContent = text; return s; };
  if (value === null) return span("json-null", "null");
  if (typeof value === "string") return span("json-string", JSON.stringify(value));
  if (typeof value === "number") return span("json-number", String(value));
  if (typeof value === "boolean") return span("json-bool", String(value));
  const isArray = Array.isArray(value);
  const entries = isArray ? value.map((v, i) => [i, v]) : Object.entries(value);
  if (!entries.length) return span("json-punct", isArray ? "[]" : "{}");
  const details = document.createElement("details");
  details.className = "json-fold";
  details.open = depth < 1;
  const summary = document.createElement("summary");
  summary.append(span("json-punct", isArray ? "[" : "{"),
    span("json-count", isArray ? ` ${entries.length} item${entries.length === 1 ? "" : "s"} ` : ` ${entries.length} key${entries.length === 1 ? "" : "s"} `),
    span("json-punct", isArray ? "]" : "}"));
  details.append(summary);
  const body = document.createElement("div");
  body.className = "json-body";
  for (const [key, item] of entries) {
    const line = document.createElement("div");
    if (!isArray) line.append(span("json-key", JSON.stringify(key)), span("json-punct", ": "));
    line.append(jsonNode(item, depth + 1));
    body.append(line);
  }
  details.append(body);
  return details;
}
function foldJson(root) {
  for (const element of root.querySelectorAll("#messages .msg .text.json, #messages .msg .call pre.json")) {
    if (element.dataset.folded || element.querySelector("mark")) continue;
    let value;
    try { value = JSON.parse(element.textContent); } catch (error) { continue; }
    if (value === null || typeof value !== "object") continue;
    element.dataset.folded = "1";
    element.dataset.raw = element.textContent;
    const tree = document.createElement("div");
    tree.className = "json-tree";
    tree.append(jsonNode(value, 0));
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.className = "copy-button json-raw-toggle";
    toggle.textContent = "raw";
    toggle.addEventListener("click", () => {
      const raw = tree.hidden;
      tree.hidden = !raw;
      element.hidden = raw;
      toggle.textContent = raw ? "raw" : "tree";
    });
    element.hidden = true;
    element.after(toggle, tree);
  }
}
foldJson(document);
document.addEventListener("htmx:afterSettle", () => foldJson(document));
