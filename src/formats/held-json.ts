/**
 * Members of a parsed body still held as their JSON text (lazy-body.ts leaves a large
 * conversation so): each is a property that parses its text the first time something
 * reads it, so every reader sees the value `JSON.parse` would have given. What only
 * copies or re-sends the body keeps them as text: `withMembers` copies without reading
 * them, `stringifyBody` writes their text as it came.
 */

interface HeldMember {
  /** The member's JSON text, as the client sent it. */
  text: string;
  /** Whether its text names no part field the unsized check reads (content-parts.ts), so it holds no unsized part. */
  plain: boolean;
  /** The getter that parses it: while the member still has it, the member is still text. */
  getter: () => unknown;
}

/** The held members of each body that has some. */
const held = new WeakMap<object, Map<string, HeldMember>>();

/** Sets `key` of `target` as a plain data member (in its place, when it has one). */
const setMember = (target: object, key: string, value: unknown) => Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });

/**
 * Defines `key` of `json` as a property that parses `text` when first read (or takes a
 * value when first written). `plain`: see `conversationIsPlain`.
 */
export function holdAsText(json: Record<string, unknown>, key: string, text: string, plain: boolean): void {
  const getter = function (this: object): unknown {
    const value: unknown = JSON.parse(text);
    setMember(this, key, value);
    return value;
  };
  Object.defineProperty(json, key, {
    get: getter,
    set(this: object, value: unknown) {
      setMember(this, key, value);
    },
    enumerable: true,
    configurable: true,
  });
  let members = held.get(json);
  if (!members) held.set(json, (members = new Map()));
  members.set(key, { text, plain, getter });
}

/** Whether `key` of `json` still has the member's getter: not read or replaced since it was held. */
const isStillHeld = (json: object, key: string, member: HeldMember) => Object.getOwnPropertyDescriptor(json, key)?.get === member.getter;

/** The members of `json` still held as text. */
function stillHeld(json: object): Array<[string, HeldMember]> | undefined {
  const members = held.get(json);
  if (!members) return undefined;
  const still = [...members].filter(([key, member]) => isStillHeld(json, key, member));
  return still.length > 0 ? still : undefined;
}

/**
 * Whether `field` of a body is a conversation still held as text whose text names no
 * part field the unsized check reads: then it holds no unsized part, and need not be
 * parsed to say so.
 */
export function conversationIsPlain(json: object, field: string): boolean {
  const member = held.get(json)?.get(field);
  return member !== undefined && member.plain && isStillHeld(json, field, member);
}

/** A copy of `json`'s own members, held ones still held (a spread would read them). */
function copyOf(json: Record<string, unknown>): Record<string, unknown> {
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(json)) as Record<string, unknown>;
  held.set(copy, held.get(json)!);
  return copy;
}

/** `json` with `members` set, as `{ ...json, ...members }` would make it, without reading the members still held as text. */
export function withMembers(json: Record<string, unknown>, members: Record<string, unknown>): Record<string, unknown> {
  if (!held.has(json)) return { ...json, ...members };
  const copy = copyOf(json);
  for (const key of Object.keys(members)) setMember(copy, key, members[key]);
  return copy;
}

/** Stands in for a held member while its body is serialized; random, so no client can write it. */
const STAND_IN = `\u0000held:${crypto.randomUUID()}:`;

/**
 * `JSON.stringify(json)`, with the members still held as text written as the client
 * sent them instead of parsed and serialized again (a body whose model MODEL_MAPPER
 * rewrote: 256 KiB of conversation pass through unread).
 */
export function stringifyBody(json: Record<string, unknown>): string {
  const members = stillHeld(json);
  if (!members) return JSON.stringify(json);
  const standIn = copyOf(json);
  for (const [key] of members) setMember(standIn, key, STAND_IN + key);
  let out = JSON.stringify(standIn);
  for (const [key, member] of members) {
    const placed = JSON.stringify(STAND_IN + key);
    const at = out.indexOf(placed);
    // Only a member that JSON.stringify leaves out (never a held array) has no place: it is then parsed like any other.
    if (at < 0) return JSON.stringify(json);
    out = out.slice(0, at) + member.text + out.slice(at + placed.length);
  }
  return out;
}
