// memoryviz: Redoc (/api/redoc/) with a dark theme when the system prefers a dark colour scheme, as every other
// page follows it. Redoc has no dark stylesheet to switch on: its colours come from the theme it is started with,
// so it is started again when the scheme changes. A file, not inline: the Content-Security-Policy refuses inline
// scripts.
const DARK_THEME = {
  colors: {
    primary: { main: "#8fb4ff" },
    text: { primary: "#e6e9ef", secondary: "#a3acba" },
    border: { dark: "#3d4657", light: "#2b3341" },
    // A response's status on the dark middle column (light), its tab on the dark right panel.
    responses: {
      success: { color: "#7fd88a", backgroundColor: "rgba(127, 216, 138, 0.08)", tabTextColor: "#7fd88a" },
      error: { color: "#ffa59b", backgroundColor: "rgba(255, 165, 155, 0.08)", tabTextColor: "#ffa59b" },
      redirect: { color: "#ffc677", backgroundColor: "rgba(255, 198, 119, 0.08)", tabTextColor: "#ffc677" },
      info: { color: "#8fd3f0", backgroundColor: "rgba(143, 211, 240, 0.08)", tabTextColor: "#8fd3f0" },
    },
  },
  schema: {
    linesColor: "#5a6478",
    typeNameColor: "#a3acba",
    typeTitleColor: "#c8ced8",
    requireLabelColor: "#ff9b8f",
    nestedBackground: "#23292c",
    arrow: { color: "#a3acba" },
  },
  typography: {
    code: { color: "#ffb08f", backgroundColor: "rgba(255, 255, 255, 0.08)" },
    links: { color: "#8fb4ff", visited: "#8fb4ff", hover: "#b9d0ff" },
  },
  sidebar: { backgroundColor: "#161a1c", textColor: "#e6e9ef", activeTextColor: "#8fb4ff" },
  rightPanel: { backgroundColor: "#101315" },
  fab: { backgroundColor: "#2b3341", color: "#8fb4ff" },  // the menu button of a narrow screen
  // "Authorizations:", "Request Body schema:" (with its media type), "path Parameters": a fixed dark grey and
  // black in Redoc's own styles.
  extensionsHook: (name) => (name === "UnderlinedHeader"
    ? "color: #a3acba; border-bottom-color: rgba(163, 172, 186, 0.3); span { color: #e6e9ef; }" : ""),
};
const redocContainer = document.getElementById("redoc-container");
const darkScheme = window.matchMedia("(prefers-color-scheme: dark)");
const showRedoc = () => {
  document.documentElement.classList.toggle("dark-mode", darkScheme.matches);
  Redoc.init(redocContainer.dataset.specUrl, darkScheme.matches ? { theme: DARK_THEME } : {}, redocContainer);
};
showRedoc();
darkScheme.addEventListener("change", showRedoc);
