// memoryviz: Swagger UI (/api/docs/) in its own dark theme, the html.dark-mode rules of its stylesheet, when the
// system prefers a dark colour scheme, as every other page follows it. A file, not inline: the
// Content-Security-Policy refuses inline scripts.
const darkScheme = window.matchMedia("(prefers-color-scheme: dark)");
const followScheme = () => document.documentElement.classList.toggle("dark-mode", darkScheme.matches);
followScheme();
darkScheme.addEventListener("change", followScheme);
