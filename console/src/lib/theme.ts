/**
 * The console's colour theme: `auto` follows the system (prefers-color-scheme), or the
 * user's choice of light or dark, kept in this browser (it is no secret).
 */
export type Theme = "auto" | "light" | "dark";

const KEY = "router-console-theme";
const ORDER: Theme[] = ["auto", "dark", "light"];

export function storedTheme(): Theme {
  try {
    const value = localStorage.getItem(KEY);
    return value === "light" || value === "dark" ? value : "auto";
  } catch {
    return "auto";
  }
}

const systemDark = () => typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches;
let following: MediaQueryList | undefined;
const followSystem = () => {
  document.documentElement.dataset.theme = systemDark() ? "dark" : "light";
};

/**
 * Sets the theme on the page (the stylesheet reads `data-theme`) and remembers it; in
 * auto the page follows the system's setting, also when it changes.
 */
export function applyTheme(theme: Theme): void {
  following?.removeEventListener("change", followSystem);
  following = undefined;
  if (theme === "auto") {
    followSystem();
    if (typeof matchMedia === "function") {
      following = matchMedia("(prefers-color-scheme: dark)");
      following.addEventListener("change", followSystem);
    }
  } else document.documentElement.dataset.theme = theme;
  try {
    if (theme === "auto") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, theme);
  } catch {
    // Storage refused (private mode): the choice lasts for this page.
  }
}

export const nextTheme = (theme: Theme): Theme => ORDER[(ORDER.indexOf(theme) + 1) % ORDER.length]!;

export const themeLabel = (theme: Theme) => (theme === "auto" ? "Theme: auto" : theme === "dark" ? "Theme: dark" : "Theme: light");
