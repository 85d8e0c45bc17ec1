import { expect, test } from "bun:test";
import { createLogger } from "../../src/core/log.ts";
import { createWrittenCharges } from "../../src/metering/written-charges.ts";

const charges = (amount: number) => new Map([[1, amount]]);

test("written charges the State refuses are sent again, in order, until it takes them; the outage is logged once", async () => {
  let up = false;
  const taken: Array<[number, number | undefined]> = [];
  const logs: string[] = [];
  const written = createWrittenCharges(
    async (charged, version) => {
      if (!up) throw new Error("Redis connection lost");
      taken.push([charged.get(1)!, version]);
    },
    createLogger("info", (line) => logs.push(line)),
    5,
  );
  written.announce(charges(500), 7);
  written.announce(new Map());
  written.announce(charges(700));
  await Bun.sleep(30);
  expect(taken).toEqual([]);
  expect(written.waiting()).toBe(2);
  up = true;
  const deadline = Date.now() + 2_000;
  while (written.waiting() > 0 && Date.now() < deadline) await Bun.sleep(2);
  expect(taken).toEqual([[500, 7], [700, undefined]]);
  expect(logs.filter((line) => line.includes("could not note written charges"))).toHaveLength(1);
  expect(logs.filter((line) => line.includes("noted in the State again"))).toHaveLength(1);
  await written.stop();
});

test("a clean stop tries once more, and names what it could not hand over", async () => {
  let up = false;
  const taken: number[] = [];
  const logs: string[] = [];
  const flushed = async (charged: ReadonlyMap<number, number>) => {
    if (!up) throw new Error("Redis unreachable");
    taken.push(charged.get(1)!);
  };
  const first = createWrittenCharges(flushed, createLogger("info", (line) => logs.push(line)), 60_000);
  first.announce(charges(300));
  await Bun.sleep(5);
  up = true;
  await first.stop();
  expect(taken).toEqual([300]);

  up = false;
  const second = createWrittenCharges(flushed, createLogger("info", (line) => logs.push(line)), 60_000);
  second.announce(charges(200));
  second.announce(new Map([[1, 50], [2, 25]]));
  await second.stop();
  const lost = logs.find((line) => line.includes("written charges the State could not note"));
  expect(lost).toContain("accounts=2 cost=275");
});
