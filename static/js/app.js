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
