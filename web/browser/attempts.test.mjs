// An item's page in headless Chromium: three attempts over two runs.
//
// web/attempts_browser_test.go runs the job twice (a failure on both
// routes, then tenax resume --retry-failures) and runs this file with:
//   TENAX_ATTEMPTS_URL  tenax ui's page of the item "flaky"
//   TENAX_SCREENSHOTS   optional: a directory for docs/'s screenshots
//   TENAX_CHROMIUM      optional: the browser (default /usr/bin/chromium)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const itemURL = process.env.TENAX_ATTEMPTS_URL;
const shots = process.env.TENAX_SCREENSHOTS;
// Generous safety nets, never the measure of a test.
const patience = { timeout: 120_000 };

let browser, profile;

before(async () => {
  assert.ok(itemURL, "run me through go test ./web -run BrowserItemWithThreeAttempts");
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

test("an item's page shows its three attempts over two runs", async () => {
  const page = await browser.newPage();
  await page.goto(itemURL);
  await page.waitForSelector("#history", patience);
  assert.equal(await page.locator("#history > li").count(), 2, "two records: run 1's failure, run 2's success");

  // Run 1: two attempts. The first route's 503 moved the item (its tries),
  // the other route's 503 failed it.
  const first = page.locator("#record-1");
  assert.match(await first.locator("td.outcome").textContent(), /failed \(retryable\)/);
  assert.equal((await first.locator("td.calls").textContent()).trim().split(" ")[0], "2");
  const tries = first.locator("table.tries tbody tr");
  assert.equal(await tries.count(), 1, "one route left, in the record's tries");
  const left = (await tries.locator("td").first().textContent()).trim().split(" ")[0];
  const last = (await first.locator("td.route").textContent()).trim().split(" ")[0];
  assert.deepEqual([left, last].sort(), ["a", "b"], `the attempts were on ${left} then ${last}: one on each route`);
  assert.match(await tries.textContent(), new RegExp(`deployment ${left.toUpperCase()} is down for this item`));
  assert.match(await tries.locator(".class").textContent(), /retryable/);
  assert.match(await first.textContent(), new RegExp(`deployment ${last.toUpperCase()} is down for this item`));

  // Run 2: the third attempt, which succeeded.
  const second = page.locator("#record-2");
  assert.match(await second.locator("td.outcome").textContent(), /succeeded/);
  assert.equal((await second.locator("td.calls").textContent()).trim().split(" ")[0], "1");
  assert.match(await second.locator("h3").textContent(), /latest/);
  if (shots) await page.screenshot({ path: join(shots, "web-item-attempts.png"), fullPage: true });
  await page.close();
});
