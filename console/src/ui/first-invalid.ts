/**
 * After a form was sent with mistakes, focus goes to the first field marked invalid: a
 * keyboard user lands where the fixing starts and a screen reader reads the field with
 * its error, instead of staying on the submit button under a long form. Waits a frame:
 * the fields are marked on the render the submit causes.
 */
export function focusFirstInvalid(form: HTMLFormElement | null): void {
  requestAnimationFrame(() => form?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());
}
