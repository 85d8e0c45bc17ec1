/**
 * A focused button that becomes disabled (busy while its request runs, or with nothing
 * left to save after a save) drops focus to <body>: a keyboard user starts again from the
 * top of the page and a screen reader loses its place. Installed once per page: focus
 * goes to the part of the page the button is in (its table, form, card or section), and
 * back to the button when it is enabled again, if the user has not moved on meanwhile.
 */
export function keepFocusWhenDisabled(): void {
  let last: Element | null = null;
  /** The button that lost focus this way, and where focus waits for it. */
  let waiting: { button: HTMLButtonElement; holder: HTMLElement } | null = null;
  document.addEventListener("focusin", (event) => {
    last = event.target as Element;
  });
  const watcher = new MutationObserver((records) => {
    for (const record of records) {
      const button = record.target;
      if (!(button instanceof HTMLButtonElement)) continue;
      const active = document.activeElement;
      if (button.disabled && button === last && (active === button || active === document.body || active === null)) {
        const holder = button.closest<HTMLElement>("[role=region], form, section, .card, main");
        if (!holder) continue;
        // Focusable from script only; not a stop of the Tab order.
        if (!holder.hasAttribute("tabindex")) holder.setAttribute("tabindex", "-1");
        holder.dataset.focusHolder = "";
        holder.focus({ preventScroll: true });
        waiting = { button, holder };
      } else if (!button.disabled && waiting?.button === button) {
        if (document.activeElement === waiting.holder && button.isConnected) button.focus();
        waiting = null;
      }
    }
  });
  watcher.observe(document.body, { attributes: true, attributeFilter: ["disabled"], subtree: true });
}
