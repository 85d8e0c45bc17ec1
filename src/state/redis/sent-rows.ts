/** More rows than this are not kept, whatever their age: memory stays bounded under any rate. */
const MAX_KEPT = 200_000;

/**
 * The usage rows this process sent to Redis lately, as the JSON it sent, each with the
 * connection that acknowledged it (`RedisConnection.connects()` after the reply), oldest
 * first. The rows of the current connection are kept for `windowMs`; those of a
 * connection that was lost are kept until `forget` drops them, however long
 * Redis took to come back, and then only their last `windowMs` (what Redis acknowledged
 * just before it went away is what it may have lost) are sent again, then forgotten.
 */
export function createSentRows(windowMs: number) {
  let texts: string[] = [];
  let times: number[] = [];
  let connections: number[] = [];
  /** The dataset's generation (dataset.ts) each row was sent in: 0 when not known yet. */
  let generations: number[] = [];
  /** Index of the oldest row kept. */
  let head = 0;

  const compact = () => {
    // The dropped front is cut off once it is most of the arrays.
    if (head > 1024 && head * 2 > times.length) {
      texts = texts.slice(head);
      times = times.slice(head);
      connections = connections.slice(head);
      generations = generations.slice(head);
      head = 0;
    }
  };

  /** Index just past the rows acknowledged by connections before `connection` (connections only grow). */
  const endBefore = (connection: number) => {
    let end = head;
    while (end < times.length && connections[end]! < connection) end++;
    return end;
  };

  return {
    add(text: string, now: number, connection: number, generation = 0): void {
      texts.push(text);
      times.push(now);
      connections.push(connection);
      generations.push(generation);
      const horizon = now - windowMs;
      while (head < times.length && ((connections[head] === connection && times[head]! < horizon) || times.length - head > MAX_KEPT)) head++;
      compact();
    },
    /** The rows acknowledged by connections before `connection`: the last `windowMs` of them, oldest first, with the generation each was sent in. */
    before(connection: number): Array<{ text: string; generation: number }> {
      const end = endBefore(connection);
      if (end === head) return [];
      const horizon = times[end - 1]! - windowMs;
      let start = head;
      while (start < end && times[start]! < horizon) start++;
      const rows: Array<{ text: string; generation: number }> = [];
      for (let i = start; i < end; i++) rows.push({ text: texts[i]!, generation: generations[i]! });
      return rows;
    },
    /**
     * The rows acknowledged by `connection` or a later one and sent in a dataset generation
     * before `generation` (0, not known, excepted): the last `windowMs` of them, oldest
     * first. Redis lost them without the connection dropping (a FLUSHALL), which `before`
     * (the rows of earlier connections) cannot see.
     */
    ofEarlierGeneration(generation: number, connection: number): string[] {
      const earlier: number[] = [];
      for (let i = endBefore(connection); i < times.length; i++) if (generations[i]! !== 0 && generations[i]! < generation) earlier.push(i);
      if (earlier.length === 0) return [];
      const horizon = times[earlier[earlier.length - 1]!]! - windowMs;
      return earlier.filter((i) => times[i]! >= horizon).map((i) => texts[i]!);
    },
    /** Drops the rows `ofEarlierGeneration(generation, connection)` names and those past its window (sent again). */
    forgetEarlierGeneration(generation: number, connection: number): void {
      const keep = (i: number) => connections[i]! < connection || generations[i]! === 0 || generations[i]! >= generation;
      const kept = { texts: [] as string[], times: [] as number[], connections: [] as number[], generations: [] as number[] };
      for (let i = head; i < times.length; i++) {
        if (!keep(i)) continue;
        kept.texts.push(texts[i]!);
        kept.times.push(times[i]!);
        kept.connections.push(connections[i]!);
        kept.generations.push(generations[i]!);
      }
      ({ texts, times, connections, generations } = kept);
      head = 0;
    },
    /** Drops the rows acknowledged by connections before `connection` (sent again). */
    forget(connection: number): void {
      head = endBefore(connection);
      compact();
    },
    get size(): number {
      return times.length - head;
    },
  };
}
