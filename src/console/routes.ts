/**
 * The console's pages (spec 1, issue 9), as Bun HTML imports: `bun build
 * --compile` bundles each page with its scripts and styles and embeds them in the
 * executable, so the console works offline with nothing next to the binary. When
 * run from source, Bun bundles them on first request. Served through Bun.serve's
 * `routes`, ahead of the Elysia app; the hashed asset files Bun adds next to them.
 */
import accountsPage from "../../console/accounts.html";
import ownerPage from "../../console/owner.html";
import userPage from "../../console/index.html";
import playgroundPage from "../../console/playground.html";
import requestsPage from "../../console/requests.html";

export const CONSOLE_BASE = "/console";

export const consoleRoutes = {
  // A browser opening the router's address lands on the console.
  "/": { GET: () => new Response(null, { status: 302, headers: { location: `${CONSOLE_BASE}/` } }) },
  [CONSOLE_BASE]: () => new Response(null, { status: 308, headers: { location: `${CONSOLE_BASE}/` } }),
  [`${CONSOLE_BASE}/`]: userPage,
  [`${CONSOLE_BASE}/owner`]: ownerPage,
  [`${CONSOLE_BASE}/accounts`]: accountsPage,
  [`${CONSOLE_BASE}/requests`]: requestsPage,
  [`${CONSOLE_BASE}/playground`]: playgroundPage,
};
