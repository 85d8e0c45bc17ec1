import { useEffect, useRef, useState } from "preact/hooks";

/** An element's name as a button is known by: its aria-label, else its text. */
const nameOf = (el: Element) => el.getAttribute("aria-label") ?? el.textContent ?? "";

/**
 * The element that last had focus. Preact may take the opener's button out of the page
 * before the editor that replaces it renders, and focus goes to <body> with it; this
 * still knows which button it was.
 */
let lastFocused: HTMLElement | null = null;
if (typeof document !== "undefined") {
  document.addEventListener("focusin", (event) => {
    if (event.target instanceof HTMLElement) lastFocused = event.target;
  });
}

/**
 * Focus for an editor drawn in place on the page (not a dialog: the account and key
 * forms). When it opens, focus moves to its heading (`tabIndex={-1}`): the button that
 * opened it may be gone ("+ Create account" gives way to the form) or far below (a row's
 * Edit), and a keyboard or screen-reader user would be left on nothing or not know the
 * form appeared. When it closes, focus goes back to the opener, or to the button of the
 * same name drawn again in its place; unless something else took focus meanwhile.
 */
export function useEditorFocus<T extends HTMLElement>() {
  const heading = useRef<T>(null);
  const [opener] = useState(() => {
    const active = document.activeElement;
    return active instanceof HTMLElement && active !== document.body ? active : lastFocused;
  });
  useEffect(() => {
    const name = opener ? nameOf(opener) : null;
    heading.current?.focus();
    return () => {
      // After the re-render that removed the editor (the opener's button may come back with it).
      requestAnimationFrame(() => {
        const now = document.activeElement;
        if (!opener || (now && now !== document.body)) return;
        const again = opener.isConnected ? opener : Array.from(document.querySelectorAll<HTMLElement>("main button")).find((b) => nameOf(b) === name);
        again?.focus();
      });
    };
  }, []);
  return heading;
}
