import { expect, test } from "bun:test";
import { Registry } from "../../src/metrics/registry.ts";

test("label values are escaped for the exposition format; control characters and lone surrogates from a client's model name become U+FFFD", () => {
  const registry = new Registry();
  const requests = registry.counter("router_requests_total", "Model calls", ["model"]);
  requests.inc({ model: 'a"b\\c\nd' });
  requests.inc({ model: "x\u0000y\ud800z\u001b" });
  const page = registry.render();
  expect(page).toContain('router_requests_total{model="a\\"b\\\\c\\nd"} 1');
  expect(page).toContain('router_requests_total{model="x\ufffdy\ufffdz\ufffd"} 1');
  expect(page).not.toMatch(/[\u0000-\u0008\u000b-\u001f]/);
});

test("a series is found by its label values whatever the object holding them; a missing label is the empty value", () => {
  const registry = new Registry();
  const requests = registry.counter("router_requests_total", "Model calls", ["family", "model", "status"]);
  requests.inc({ family: "openai", model: "m", status: "200" });
  requests.inc({ status: "200", model: "m", family: "openai" }, 2);
  requests.inc({ family: "openai", model: "m" });
  requests.inc({ family: "openai", model: "m", status: "" });
  // Values that would run together if joined: distinct series.
  requests.inc({ family: "a", model: "bc", status: "" });
  requests.inc({ family: "ab", model: "c", status: "" });
  const lines = registry.render().split("\n");
  expect(lines).toContain('router_requests_total{family="openai",model="m",status="200"} 3');
  expect(lines).toContain('router_requests_total{family="openai",model="m",status=""} 2');
  expect(lines).toContain('router_requests_total{family="a",model="bc",status=""} 1');
  expect(lines).toContain('router_requests_total{family="ab",model="c",status=""} 1');
  // Series appear in the order they were first counted.
  expect(lines.filter((l) => l.startsWith("router_requests_total{")).map((l) => l.split("{")[1]!.split(",")[0])).toEqual([
    'family="openai"',
    'family="openai"',
    'family="a"',
    'family="ab"',
  ]);
});

test("a metric without labels is one series; past 1,000 series a counter and a histogram count new label values as other", () => {
  const registry = new Registry();
  const total = registry.counter("router_things_total", "Things");
  total.inc();
  total.inc(undefined, 4);
  const byModel = registry.counter("router_model_total", "By model", ["model", "kind"]);
  const latency = registry.histogram("router_latency_seconds", "Latency", [0.1, 1], ["model"]);
  for (let i = 0; i < 1000; i++) {
    byModel.inc({ model: `m${i}`, kind: "k" });
    latency.observe(0.05, { model: `m${i}` });
  }
  byModel.inc({ model: "m5", kind: "k" }, 2);
  byModel.inc({ model: "new-1", kind: "k" });
  byModel.inc({ model: "new-2", kind: "x" }, 3);
  latency.observe(0.5, { model: "new-1" });
  latency.observe(0.5, { model: "m7" });
  const lines = registry.render().split("\n");
  expect(lines).toContain("router_things_total 5");
  expect(lines).toContain('router_model_total{model="m5",kind="k"} 3');
  expect(lines).toContain('router_model_total{model="other",kind="other"} 4');
  expect(lines.some((l) => l.includes("new-"))).toBe(false);
  expect(lines).toContain('router_latency_seconds_count{model="m7"} 2');
  expect(lines).toContain('router_latency_seconds_bucket{model="m7",le="0.1"} 1');
  // The histogram's count stays the counter's: new label values past the cap go under other.
  expect(lines).toContain('router_latency_seconds_count{model="other"} 1');
  expect(lines.filter((l) => l.startsWith("router_latency_seconds_count")).length).toBe(1001);
});
