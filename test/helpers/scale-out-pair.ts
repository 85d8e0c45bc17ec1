import { RedisClient } from "bun";
import { rmSync } from "node:fs";
import { expect } from "bun:test";
import type { ServeConfig } from "../../src/config.ts";
import { json, startMockUpstream, type MockUpstream } from "./mock-upstream.ts";
import { api } from "./owner-ops.ts";
import { startPostgres, type PostgresServer } from "./postgres-server.ts";
import { startRedisServer, type RedisServer } from "./redis-server.ts";
import { startRouter, tempDir, type TestRouter } from "./router.ts";

/** Prices of the pair's models (`acme-*`), per 1M tokens. */
export const PAIR_PRICING = { ChatPricing: { "acme-*": { InputText: 2, OutputText: 8 } } };
/** What the pair's upstream reports for every chat call. */
export const PAIR_USAGE = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
/** (10 × 2 + 10 × 8) × 1000 nano-credits per call (Rates 1). */
export const PAIR_CALL_COST = (10 * 2 + 10 * 8) * 1000;

/** Two routers in this process on one PostgreSQL database and one Redis, one mock chat upstream behind a Level 1 key. */
export interface ScaleOutPair {
  postgres: PostgresServer;
  redis: RedisServer;
  /** A client of the pair's Redis, for the tests' own reads and faults. */
  redisClient: RedisClient;
  dataDir: string;
  config: Partial<ServeConfig>;
  a: TestRouter;
  b: TestRouter;
  upstream: MockUpstream;
  /** Stops both routers (and `others` started on the same config), the upstream and the servers; removes the data directory. */
  stop(...others: Array<TestRouter | undefined>): Promise<void>;
}

/**
 * Starts the pair: `name` names its data directory, `secret` is the provider key's secret.
 * The upstream answers every chat call with PAIR_USAGE, priced by PAIR_PRICING.
 */
export async function startScaleOutPair(name: string, secret: string): Promise<ScaleOutPair> {
  const [postgres, redis] = await Promise.all([startPostgres(), startRedisServer()]);
  const redisClient = new RedisClient(redis.url);
  const dataDir = tempDir(`router-${name}-`);
  const config = { database: postgres.url(await postgres.createDatabase()), redis: redis.url };
  const a = await startRouter({ dataDir, config, pricing: false });
  const b = await startRouter({ dataDir, config, pricing: false });
  const upstream = startMockUpstream();
  upstream.route("POST", "/v1/chat/completions", (req) =>
    json({ id: "c", object: "chat.completion", created: 1, model: req.json.model, choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: PAIR_USAGE }),
  );
  expect((await api(a, "/x-config", { method: "PUT", body: { PRICING: PAIR_PRICING } })).status).toBe(200);
  expect((await api(a, "/x-keys", { body: { Provider: `${upstream.url}/v1`, SecretKey: secret, Level: 1, Status: true } })).status).toBe(201);
  return {
    postgres,
    redis,
    redisClient,
    dataDir,
    config,
    a,
    b,
    upstream,
    async stop(...others) {
      await Promise.allSettled([a, b, ...others].map((router) => router?.stop()));
      redisClient.close();
      await upstream.stop();
      await redis.close();
      await postgres.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
