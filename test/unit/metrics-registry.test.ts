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
