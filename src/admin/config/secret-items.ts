/**
 * The configuration items sealed at rest, by name (items.ts marks them `secret: true`,
 * and checks at load that this list says the same). Apart from items.ts so the commands
 * that only look at the stored values (backup, migrate-data, rekey) do not load every
 * item's parser: that doubled their start.
 */
export const SECRET_ITEMS: readonly string[] = ["EMAIL_PASS"];
