import { renderUsage, type ArgsDef, type CommandDef } from "citty";

type AnyCommand = CommandDef<ArgsDef>;

const resolved = async <T>(value: T | (() => T | Promise<T>) | Promise<T> | undefined): Promise<T | undefined> =>
  typeof value === "function" ? await (value as () => T | Promise<T>)() : await value;

/**
 * The help screen citty draws, with two things it cannot know: the usage line names
 * the program (`router keys add`, not `keys add`), and positional arguments a command
 * needs are shown as required (`<ID>`). Commands check their own arguments, to answer
 * a missing one with a usage error (exit 2) of their own, so citty sees every
 * positional as optional; a description ending in "(required)" marks the needed ones.
 */
export async function showUsage<T extends ArgsDef = ArgsDef>(command: CommandDef<T>, parentCommand?: CommandDef<T>): Promise<void> {
  // citty's CommandDef is invariant in its argument types; this screen reads only meta and args.
  const cmd = command as unknown as AnyCommand;
  const parent = parentCommand as unknown as AnyCommand | undefined;
  let named = parent;
  const parentMeta = await resolved(parent?.meta);
  if (parent && parentMeta?.name && parentMeta.name !== "router") named = { ...parent, meta: { ...parentMeta, name: `router ${parentMeta.name}` } };
  let text = await renderUsage(cmd, named);
  const args = (await resolved(cmd.args)) ?? {};
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional" && /\(required\)\s*$/.test(def.description ?? "")) {
      text = text.replaceAll(`[${name.toUpperCase()}]`, `<${name.toUpperCase()}>`);
    }
  }
  console.log(text + "\n");
}
