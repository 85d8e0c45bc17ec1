import type { ComponentChildren } from "preact";
import { useEffect, useId, useRef } from "preact/hooks";

/**
 * A modal confirmation (native <dialog>: focus moves into it, Escape cancels,
 * focus returns to the opener). Rendered only while `open`.
 */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  /** The part of the page the opener is in: where focus goes if the opener goes (a deleted row's button). */
  const around = useRef<HTMLElement | null>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (props.open && !dialog.open) {
      around.current = document.activeElement?.closest<HTMLElement>("section, main, [role=region], [role=tabpanel]") ?? null;
      dialog.showModal();
    }
    if (!props.open && dialog.open) {
      dialog.close();
      keepFocusIn(around.current);
    }
  }, [props.open]);
  return (
    <dialog ref={ref} class="confirm" aria-labelledby={titleId} onCancel={(e) => (e.preventDefault(), props.onCancel())}>
      <h3 id={titleId}>{props.title}</h3>
      <div>{props.children}</div>
      <div class="actions">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class={props.danger ? "danger" : "primary"} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** How long after a dialog closed its opener's removal (the list reloading) is watched for. */
const WATCH_MS = 5000;

/**
 * Focus returns to the opener when the dialog closes; a confirmed delete then removes the
 * opener with its row, and focus would fall to <body> (a keyboard or screen-reader user
 * starts again from the top). While that can happen, focus lost to <body> goes to the
 * part of the page the opener was in.
 */
function keepFocusIn(region: HTMLElement | null): void {
  if (!region) return;
  const rescue = () => {
    if (region.isConnected && (document.activeElement === document.body || document.activeElement === null)) {
      if (!region.hasAttribute("tabindex")) region.setAttribute("tabindex", "-1");
      region.focus();
      return true;
    }
    return false;
  };
  const observer = new MutationObserver(() => {
    if (rescue()) observer.disconnect();
  });
  observer.observe(region, { childList: true, subtree: true });
  setTimeout(() => observer.disconnect(), WATCH_MS);
}
