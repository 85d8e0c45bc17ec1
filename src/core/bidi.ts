/**
 * Bidirectional controls (embeddings, overrides, isolates, marks): shown, they reorder the
 * text after them, so "\u202Enimda" reads "admin". Account names refuse them; the CLI's
 * tables drop them from text that came from elsewhere (a client's model name).
 */
const BIDI_CLASS = "[\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]";

/** Whether the text holds a bidirectional control. */
export const BIDI_CONTROL = new RegExp(BIDI_CLASS);
/** Every bidirectional control in a text, to remove them. */
export const BIDI_CONTROLS = new RegExp(BIDI_CLASS, "g");
