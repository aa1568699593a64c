// A fix run's page in headless Chromium, driven by playwright-core.
//
// web/fix_browser_test.go starts `tenax fix --ui` and runs this file with:
//   TENAX_FIX_URL      the fix run's page
//   TENAX_FIX_GATE     a directory: creating N in it lets attempt N's fixer go
//   TENAX_SCREENSHOTS  optional: a directory for docs/web.md's screenshot
//   TENAX_CHROMIUM     optional: the browser (default /usr/bin/chromium)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const fixURL = process.env.TENAX_FIX_URL;
const gate = process.env.TENAX_FIX_GATE;
const shots = process.env.TENAX_SCREENSHOTS;
// Generous safety nets, never the measure of a test.
const patience = { timeout: 90_000 };

let browser, profile;

before(async () => {
  assert.ok(fixURL && gate, "run me through go test ./web -run BrowserFixPage");
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

// row is the errors table's row of the test named name.
function row(page, name) {
  return page.locator("#fix-error-table tbody tr", { has: page.locator(`b:text-is("${name}")`) });
}

test("an error goes from new to fixed, and a skip takes effect on the next attempt", async () => {
  const page = await browser.newPage();
  await page.goto(fixURL);
  await page.evaluate(() => { window.tenaxMark = "same page"; });

  // Attempt 1: the fixer works on TestA, new.
  const a = row(page, "TestA");
  await a.locator(".working").waitFor(patience);
  assert.equal(await a.getAttribute("data-status"), "new");
  assert.equal(await row(page, "TestB").getAttribute("data-status"), "new");
  assert.match(await page.textContent("#fix-doing"), /attempt 1: the fixer works on TestA/);
  assert.equal(await page.textContent("#attempt-1 .verdict"), "in progress");

  // Skip TestB while the fixer works: queued for the next attempt.
  await row(page, "TestB").locator("button.skip").click();
  await page.waitForSelector("#fix-operator-list .queued", patience);
  assert.match(await page.textContent("#fix-operator-list"), /waiting for the next attempt: skip/);

  // Let attempt 1 go: TestA is fixed, live.
  await writeFile(join(gate, "1"), "");
  await page.waitForSelector('#fix-error-table tr[data-status="fixed"]', patience);
  assert.match(await a.locator("td").first().textContent(), /fixed/);
  await page.waitForFunction(
    () => document.querySelector("#attempt-1 .verdict")?.textContent === "fixed", null, patience);
  assert.match(await page.textContent("#attempt-1 pre.diff"), /\+ok/);

  // Attempt 2 is TestC's: the skip took effect (TestB, seen first, would
  // have come next), and it says so.
  const c = row(page, "TestC");
  await c.locator(".working").waitFor(patience);
  assert.match(await row(page, "TestB").locator(".mark").textContent(), /skipped/);
  assert.match(await page.textContent("#fix-operator-list"), /applied: skip/);
  assert.equal(await page.evaluate(() => window.tenaxMark), "same page", "the page was reloaded");
  if (shots) await page.screenshot({ path: join(shots, "web-fix.png"), fullPage: true });

  // Let attempt 2 go: the run ends with TestB left, skipped.
  await writeFile(join(gate, "2"), "");
  await page.waitForSelector("#conn[data-state=ended]", patience);
  assert.equal(await page.textContent("#fix-outcome"), "failed");
  assert.equal(await c.getAttribute("data-status"), "fixed");
  await page.close();
});
