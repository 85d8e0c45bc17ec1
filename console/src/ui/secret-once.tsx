import { useEffect, useRef, useState } from "preact/hooks";

/** A freshly issued API key, shown once, with a copy button. It is never stored by this component. */
export function SecretOnce(props: { label: string; value: string; onDismiss?: () => void }) {
  const [copied, setCopied] = useState<string | null>(null);
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => {
    // The key appears where a form's button was (rotate, create), and focus would go to
    // <body> with it: it goes to the key instead (selected, ready to copy).
    field.current?.focus();
    return () => {
      // Done removes the key, and its button with it: focus stays in the section.
      requestAnimationFrame(() => {
        if (!document.activeElement || document.activeElement === document.body) document.querySelector<HTMLElement>("main .section-title")?.focus();
      });
    };
  }, []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied("Copied to the clipboard.");
    } catch {
      setCopied("Copying was refused by the browser: select the key and copy it by hand.");
    }
  };
  return (
    <div class="note secret" role="status">
      <p>
        <strong>{props.label}</strong> This is the only time it is shown: copy it now.
      </p>
      <div class="secret-row">
        <input ref={field} aria-label={props.label} class="mono" readOnly value={props.value} onFocus={(e) => (e.currentTarget as HTMLInputElement).select()} />
        <button type="button" class="primary" onClick={copy}>
          Copy
        </button>
        {props.onDismiss && (
          <button type="button" onClick={props.onDismiss}>
            Done
          </button>
        )}
      </div>
      {copied && <p class="hint">{copied}</p>}
    </div>
  );
}
