import { afterAll, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, serveBinary, type ServingBinary } from "../helpers/binary.ts";

// The console is embedded in dist/router: copied alone into an empty directory (no
// console/ sources, no node_modules), the binary still serves the pages (the three
// main ones and the Requests page every account has) and every script and stylesheet
// they load.
const { dir, bin } = isolatedBinary();
let server: ServingBinary | undefined;
afterAll(() => server?.kill("SIGKILL"));

/** Console bytes budget (bundled JS + CSS of the pages fetched below); README states the measured size. */
const BUDGET = 220_000;

test("dist/router alone serves the console pages and their bundled assets", async () => {
  expect(readdirSync(dir)).toEqual(["router"]);
  server = await serveBinary(bin, ["--port", "0"], { cwd: dir });
  const ownerKey = readFileSync(join(dir, "data", "initial-owner-key"), "utf8").trim();

  const redirect = await fetch(`${server.url}/console`, { redirect: "manual" });
  expect(redirect.status).toBe(308);
  expect(redirect.headers.get("location")).toBe("/console/");

  // Every file a page needs: its scripts and stylesheets, and the chunks those scripts import.
  const assets = new Map<string, number>();
  const fetchAsset = async (ref: string): Promise<void> => {
    if (assets.has(ref)) return;
    assets.set(ref, 0);
    const asset = await fetch(server!.url + ref);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toMatch(ref.endsWith(".js") ? /javascript/ : /text\/css/);
    const body = await asset.text();
    expect(body).not.toContain(ownerKey);
    assets.set(ref, new TextEncoder().encode(body).length);
    for (const m of body.matchAll(/(?:from|import\()\s*"([^"]+\.js)"/g)) await fetchAsset(new URL(m[1]!, server!.url + ref).pathname);
  };
  for (const path of ["/console/", "/console/owner", "/console/accounts", "/console/requests"]) {
    const page = await fetch(server.url + path);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    expect(html).toContain('<div id="app">');
    const refs = [...html.matchAll(/(?:src|href)="([^"]+\.(?:js|css))"/g)].map((m) => new URL(m[1]!, server!.url + path).pathname);
    expect(refs.some((r) => r.endsWith(".js"))).toBe(true);
    expect(refs.some((r) => r.endsWith(".css"))).toBe(true);
    for (const ref of refs) await fetchAsset(ref);
  }
  const total = [...assets.values()].reduce((a, b) => a + b, 0);
  console.log(`console assets: ${assets.size} files, ${total} bytes`);
  expect(total).toBeGreaterThan(10_000);
  expect(total).toBeLessThan(BUDGET);

  // The API still answers next to the console.
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  server.kill("SIGTERM");
  expect(await server.exited).toBe(0);
}, 30_000);
