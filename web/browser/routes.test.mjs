// A routed job's page in headless Chromium: its routes panel after route
// a's server was killed mid-run, with the run paused from another
// terminal (tenax pause) so that the page is read while the run lives.
//
// web/routes_browser_test.go starts the job and runs this file with:
//   TENAX_ROUTES_URL   the page of the routed job, paused, a's server closed
//   TENAX_SCREENSHOTS  optional: a directory for docs/'s screenshots
//   TENAX_CHROMIUM     optional: the browser (default /usr/bin/chromium)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const routesURL = process.env.TENAX_ROUTES_URL;
const shots = process.env.TENAX_SCREENSHOTS;
// Generous safety nets, never the measure of a test.
const patience = { timeout: 120_000 };

let browser, profile;

before(async () => {
  assert.ok(routesURL, "run me through go test ./web -run BrowserRoutePanel");
  profile = await mkdtemp(join(tmpdir(), "tenax-chromium-"));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.TENAX_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
});

after(async () => {
  await browser?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
});

const num = async (page, sel) => Number((await page.textContent(sel)).trim());

test("the routes panel shows the killed route's breaker open and the other carrying the rest", async () => {
  const page = await browser.newPage();
  await page.goto(routesURL);
  // Paused from another terminal: the page names who paused it.
  await page.waitForFunction(() => /paused by /.test(document.querySelector("#run-state")?.textContent), null, patience);
  assert.ok(await page.isVisible("#run-continue"), "a paused run offers Continue");
  // a's breaker opened on its failed calls; b's is closed.
  await page.waitForFunction(() => document.querySelector("#route-a .breaker-open") !== null, null, patience);
  assert.equal((await page.textContent("#route-b td.breaker")).trim(), "closed");
  assert.ok(await num(page, "#route-a td.faults") >= 3, "a's breaker opened on at least 3 failed calls");
  assert.equal(await num(page, "#route-b td.faults"), 0, "b failed no call");
  // b carries the rest: more records than a, and it keeps taking them.
  const aRecords = await num(page, "#route-a td.records");
  const bRecords = await num(page, "#route-b td.records");
  // The live columns beside them: calls in flight of b's limit, and the
  // records' item times.
  assert.match((await page.textContent("#route-b td.inflight")).trim(), /^\d+ \/ \d+$/);
  assert.notEqual((await page.textContent("#route-b td.p50")).trim(), "—", "b's items have a median time");
  assert.ok(bRecords > aRecords, `b has ${bRecords} records, a ${aRecords}: b should carry the rest`);
  await screenshot(page, "web-routes-down.png");

  // Continue on the page: the run goes on, on b alone, to its end.
  await page.click("#run-continue");
  await page.waitForSelector("#run-pause", patience);
  await page.waitForFunction((b) => Number(document.querySelector("#route-b td.records")?.textContent) > b,
    bRecords, patience);
  assert.equal(await num(page, "#route-a td.records"), aRecords, "a took no record after its server went away");
  await page.close();
});

async function screenshot(page, name) {
  if (shots) await page.screenshot({ path: join(shots, name), fullPage: true });
}
