import type { ComponentChildren } from "preact";
import { useEffect, useId, useRef, useState } from "preact/hooks";

interface Base {
  label: string;
  hint?: ComponentChildren;
  error?: string;
  required?: boolean;
  class?: string;
}

/** Label, control, hint and error wired together with for/id and aria-describedby. */
function Wrap(props: Base & { id: string; children: ComponentChildren }) {
  return (
    <div class={`field ${props.class ?? ""} ${props.error ? "invalid" : ""}`}>
      <label for={props.id}>
        {props.label}
        {props.required && <span aria-hidden="true"> *</span>}
      </label>
      {props.children}
      {props.hint && (
        <div class="hint" id={`${props.id}-hint`}>
          {props.hint}
        </div>
      )}
      {props.error && (
        <div class="error-text" id={`${props.id}-error`} role="alert">
          {props.error}
        </div>
      )}
    </div>
  );
}

const describedBy = (id: string, props: Base) =>
  [props.hint && `${id}-hint`, props.error && `${id}-error`].filter(Boolean).join(" ") || undefined;

/**
 * The error a text control shows: an empty field keeps its complaint ("Required") to
 * itself until the user has been in it or has tried to submit its form; a field with
 * a value says at once what is wrong with it (validation as you type).
 */
function useShownError(value: string, error: string | undefined) {
  const ref = useRef<HTMLInputElement & HTMLTextAreaElement>(null);
  const [touched, setTouched] = useState(false);
  useEffect(() => {
    const form = ref.current?.form;
    if (!form) return;
    const tried = () => setTouched(true);
    // Capture: the form's own submit handler may re-render before a bubbling listener runs.
    form.addEventListener("submit", tried, true);
    return () => form.removeEventListener("submit", tried, true);
  }, []);
  return { ref, error: value === "" && !touched ? undefined : error, touch: () => setTouched(true) };
}

interface TextProps extends Base {
  value: string;
  onInput: (value: string) => void;
  type?: "text" | "password" | "date" | "email" | "number" | "url" | "search" | "datetime-local";
  placeholder?: string;
  autoComplete?: string;
  name?: string;
  inputMode?: "numeric" | "decimal" | "text" | "email";
  readOnly?: boolean;
}

export function TextField(props: TextProps) {
  const id = useId();
  const shown = useShownError(props.value, props.error);
  const shownProps = { ...props, error: shown.error };
  return (
    <Wrap {...shownProps} id={id}>
      <input
        ref={shown.ref}
        id={id}
        name={props.name}
        // Preact types narrow attributes per input type; the attributes used here suit every listed type.
        type={(props.type ?? "text") as "text"}
        value={props.value}
        placeholder={props.placeholder}
        autoComplete={props.autoComplete ?? "off"}
        inputMode={props.inputMode}
        required={props.required}
        readOnly={props.readOnly}
        spellcheck={false}
        aria-invalid={shown.error ? true : undefined}
        aria-describedby={describedBy(id, shownProps)}
        onBlur={shown.touch}
        onInput={(e) => (shown.touch(), props.onInput((e.currentTarget as HTMLInputElement).value))}
      />
    </Wrap>
  );
}

/** `masked`: the text is drawn as dots, as a password field's (a pasted key file stays off the screen). */
export function TextArea(props: TextProps & { rows?: number; masked?: boolean }) {
  const id = useId();
  const shown = useShownError(props.value, props.error);
  const shownProps = { ...props, error: shown.error };
  return (
    <Wrap {...shownProps} id={id}>
      <textarea
        ref={shown.ref}
        id={id}
        class={props.masked ? "masked" : undefined}
        autoComplete={props.masked ? "off" : undefined}
        name={props.name}
        rows={props.rows ?? 4}
        value={props.value}
        placeholder={props.placeholder}
        required={props.required}
        spellcheck={false}
        aria-invalid={shown.error ? true : undefined}
        aria-describedby={describedBy(id, shownProps)}
        onBlur={shown.touch}
        onInput={(e) => (shown.touch(), props.onInput((e.currentTarget as HTMLTextAreaElement).value))}
      />
    </Wrap>
  );
}

export function SelectField(props: Base & { value: string; onChange: (value: string) => void; options: Array<[string, string]> }) {
  const id = useId();
  return (
    <Wrap {...props} id={id}>
      <select id={id} value={props.value} aria-describedby={describedBy(id, props)} onChange={(e) => props.onChange((e.currentTarget as HTMLSelectElement).value)}>
        {props.options.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
    </Wrap>
  );
}

export function CheckField(props: { label: string; checked: boolean; onChange: (checked: boolean) => void; hint?: string }) {
  const id = useId();
  return (
    <div class="field check">
      <input id={id} type="checkbox" checked={props.checked} onChange={(e) => props.onChange((e.currentTarget as HTMLInputElement).checked)} />
      <label for={id}>{props.label}</label>
      {props.hint && <div class="hint">{props.hint}</div>}
    </div>
  );
}
