/**
 * Settled promises the in-memory State hands back without making one per call: its
 * answers are ready at once, and the request path asks it several times per call.
 * (An `async` method would make a promise and a frame each time.)
 */
export const DONE: Promise<void> = Promise.resolve();
export const YES: Promise<boolean> = Promise.resolve(true);
export const NO: Promise<boolean> = Promise.resolve(false);
export const NOTHING: Promise<undefined> = Promise.resolve(undefined);

/** A value as a settled promise, a throw as a rejected one (the interface's contract either way). */
export function settle<T>(step: () => T): Promise<T> {
  try {
    return Promise.resolve(step());
  } catch (error) {
    return Promise.reject(error);
  }
}
