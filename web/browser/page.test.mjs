// tenax's live web page in headless Chromium, driven by playwright-core.
//
// web/browser_test.go starts the jobs and runs this file with:
//   TENAX_LIVE_URL     the page of a long mock-LLM job (heals, failures)
//   TENAX_BREAKER_URL  the page of an exec job whose breaker has tripped
//   TENAX_RETRY_URL    tenax ui of a finished exec job with two error groups
//   TENAX_CONTROL_URL  the page of a long mock-LLM job to pause, continue and stop
//   TENAX_SCREENSHOTS  optional: a directory for the README's screenshots
//   TENAX_CHROMIUM     optional: the browser (default /usr/bin/chromium)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const liveURL = process.env.TENAX_LIVE_URL;
const breakerURL = process.env.TENAX_BREAKER_URL;
const retryURL = process.env.TENAX_RETRY_URL;
const controlURL = process.env.TENAX_CONTROL_URL;
const shots = process.env.TENAX_SCREENSHOTS;
// Generous safety nets, never the measure of a test.
const patience = { timeout: 90_000 };

let browser, profile;

before(async () => {
  assert.ok(liveURL && breakerURL && retryURL && controlURL, "run me through go test ./web -run Browser");
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

async function screenshot(page, name) {
  if (shots) await page.screenshot({ path: join(shots, name), fullPage: true });
}

test("a running job's page updates without a reload", async () => {
  const page = await browser.newPage();
  await page.goto(liveURL);
  // A mark that a reload would erase.
  await page.evaluate(() => { window.tenaxMark = "same page"; });
  const first = await page.textContent("#done");
  await page.waitForFunction(
    (f) => document.querySelector("#done")?.textContent !== f, first, patience);
  const second = await page.textContent("#done");
  assert.notEqual(second, first, "the done counter should have moved");
  assert.equal(await page.evaluate(() => window.tenaxMark), "same page", "the page was reloaded");
  assert.equal(await page.getAttribute("#conn", "data-state"), "live");
  // Wait for an error group, for the screenshot and to see them shown.
  await page.waitForSelector("#groups tbody tr", patience);
  assert.match(await page.textContent("#groups"), /retryable|invalid/);
  await page.close();
});

test("an item's timeline shows the heal feedback", async () => {
  const page = await browser.newPage();
  await page.goto(liveURL);
  // The recent items list: a row whose re-asks column is above zero.
  const href = await page.waitForFunction(() => {
    for (const row of document.querySelectorAll("#recent tbody tr")) {
      if (Number(row.children[3].textContent) > 0) return row.querySelector("a").getAttribute("href");
    }
    return null;
  }, null, patience);
  await page.goto(new URL(await href.jsonValue(), liveURL).href);
  const feedback = page.locator("pre.feedback").first();
  await feedback.waitFor(patience);
  assert.match(await feedback.textContent(), /Correct the problem and answer again/);
  assert.match(await page.locator(".step-heal").first().textContent(), /re-ask 1/);
  // Once its record is written, the errors the re-asks fixed are a
  // table, not a JSON blob.
  await page.waitForSelector("#tracked", patience);
  assert.match(await page.textContent("#tracked"), /fixed/);
  assert.doesNotMatch(await page.textContent("#timeline"), /\\u003c/);
  await screenshot(page, "web-item.png");
  await page.close();
});

test("a tripped breaker shows Continue / Abort / Inspect, and Continue resumes the run", async () => {
  const page = await browser.newPage();
  await page.goto(breakerURL);
  await page.waitForSelector("#continue", patience);
  assert.ok(await page.isVisible("#abort"));
  assert.ok(await page.isVisible("#inspect"));
  assert.match(await page.textContent(".question .summary"), /Circuit breaker open: 3 consecutive failures/);
  assert.equal(await page.textContent("#breaker"), "open");
  await screenshot(page, "web-breaker.png");

  // Inspect shows the last failure in full, on a page of its own.
  const inspect = await browser.newPage();
  await inspect.goto(new URL(await page.getAttribute("#inspect", "href"), breakerURL).href);
  assert.match(await inspect.textContent("#details"), /upstream unavailable \(call 3\)/);
  await inspect.close();

  await page.click("#continue");
  // The run goes on to its end: the page hears the end of the stream.
  await page.waitForSelector("#conn[data-state=ended]", patience);
  assert.equal(await page.textContent("#done"), "30");
  assert.equal(await page.textContent("#failed"), "3");
  assert.equal(await page.$("#continue"), null, "the question should be gone");
  await page.close();
});

test("the charts update as the mock job runs", async () => {
  const page = await browser.newPage();
  await page.goto(liveURL);
  await page.evaluate(() => { window.tenaxMark = "same page"; });
  await page.waitForSelector("#chart-rate path.line", patience);
  const first = await page.innerHTML("#chart-rate");
  // The rate chart is drawn again from the records as they come in.
  await page.waitForFunction(
    (f) => document.querySelector("#chart-rate")?.innerHTML !== f, first, patience);
  assert.equal(await page.evaluate(() => window.tenaxMark), "same page", "the page was reloaded");
  // Every chart has its axis labels and labels its lines where they end.
  for (const id of ["chart-rate", "chart-inflight", "chart-latency", "chart-failures", "chart-tokens", "chart-cost"]) {
    const axis = await page.locator(`#${id} text.axis`).count();
    assert.ok(axis >= 4, `${id} has ${axis} axis labels, want the y axis's three and a time`);
    assert.ok(await page.locator(`#${id} text.direct`).count() >= 1, `${id} labels no line`);
  }
  assert.match(await page.textContent("#chart-rate"), /items\/s \d/);
  assert.match(await page.textContent("#chart-latency"), /p50 .*p90|p90 .*p50/s);
  // The in-flight chart shows the spec's concurrency.max (2).
  assert.match(await page.textContent("#chart-inflight"), /concurrency\.max 2/);
  await screenshot(page, "web-job.png");
  await page.close();
});

test("the page follows a dark system scheme", async () => {
  const page = await browser.newPage();
  await page.emulateMedia({ colorScheme: "dark" });
  await page.goto(liveURL);
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const [r, g, b] = bg.match(/\d+/g).map(Number);
  assert.ok(r + g + b < 3 * 60, `a dark scheme's background should be dark, got ${bg}`);
  await page.emulateMedia({ colorScheme: "light" });
  const light = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.notEqual(light, bg, "the light scheme should differ from the dark");
  await page.close();
});

test("filter the items to one fingerprint and retry that group from the page", async () => {
  const page = await browser.newPage();
  await page.goto(retryURL);
  // The error group of the alpha failures, on the job's page.
  const row = page.locator("#groups tbody tr", { hasText: "alpha service rejected" });
  await row.waitFor(patience);
  const fp = (await row.locator("code").textContent()).trim();
  assert.match(fp, /^[0-9a-f]{16}$/);

  // The item list, filtered to that fingerprint through the form.
  await page.click("#all-items");
  await page.waitForSelector("#items tbody tr", patience);
  assert.ok(await page.locator("#items tbody tr").count() >= 20, "every item is listed first");
  await page.fill("#f-fingerprint", fp.slice(0, 8));
  await page.click("#filters button[type=submit]");
  await page.waitForURL(/fingerprint=/, patience);
  const fps = await page.locator("#items tbody tr td.fp code").allTextContents();
  assert.equal(fps.length, 5, "five alpha failures");
  assert.ok(fps.every((f) => f === fp), `every row has fingerprint ${fp}: ${fps}`);
  await screenshot(page, "web-items.png");

  // Retry these failures: a confirmation first, naming the CLI command.
  await page.click("#retry-these");
  await page.waitForSelector("#confirm-retry", patience);
  assert.match(await page.textContent("#retry-command"), new RegExp(`--fingerprint ${fp.slice(0, 8)}`));
  assert.match(await page.textContent("h1"), /Re-run 5 failed items/);
  await page.click("#confirm-retry");
  // Back on the job's page, which follows the re-run to its end.
  await page.waitForSelector("#retry-run", patience);
  await page.waitForFunction(() => /ended/.test(document.querySelector("#retry-run")?.textContent), null, patience);
  assert.match(await page.textContent("#retry-run"), /15 succeeded, 5 failed, 0 pending/);
  await page.waitForFunction(() => document.querySelector("#job-failed")?.textContent === "5", null, patience);

  // The re-run alpha item's page has both its records, oldest first: the
  // first run's failure with its error, then the re-run's success.
  await page.goto(page.url().split(/[?#]/)[0] + "/items/0");
  await page.waitForSelector("#history", patience);
  assert.equal(await page.locator("#history > li").count(), 2, "two records: the failure and the re-run");
  assert.match(await page.textContent("#record-1"), /failed[\s\S]*alpha service rejected the item/);
  assert.match(await page.textContent("#record-2"), /succeeded/);
  assert.match(await page.textContent("#record-2 h3"), /latest/);
  await screenshot(page, "web-item-history.png");
  await page.close();
});

test("pause a running job, continue it, and stop it with calls in flight", async () => {
  const page = await browser.newPage();
  await page.goto(controlURL);
  await page.waitForSelector("#run-pause", patience);
  await page.click("#run-pause");
  // The page shows who paused it and when, and offers Continue.
  await page.waitForSelector("#run-continue", patience);
  assert.match(await page.textContent("#run-state"), /paused by the web page at \d\d:\d\d:\d\d/);
  // The calls in flight at the pause finish; then nothing moves.
  await page.waitForFunction(() => document.querySelector("#inflight")?.textContent === "0", null, patience);
  const held = await page.textContent("#done");
  await screenshot(page, "web-paused.png");

  await page.click("#run-continue");
  await page.waitForSelector("#run-pause", patience);
  assert.match(await page.textContent("#run-state"), /running/);
  await page.waitForFunction((d) => document.querySelector("#done")?.textContent !== d, held, patience);

  // Stop while calls are in flight: they finish and are recorded, the
  // job ends aborted, resumable.
  await page.waitForFunction(() => Number(document.querySelector("#inflight")?.textContent) > 0, null, patience);
  await page.click("#run-stop");
  await page.waitForSelector("#conn[data-state=ended]", patience);
  assert.match(await page.textContent("#run-state"), /stopped stopped by the web page at/);
  assert.equal(await page.textContent("#state"), "aborted");
  assert.equal(await page.$("#run-pause"), null, "a stopped run offers no Pause");
  await screenshot(page, "web-stopped.png");
  await page.close();
});

test("drag across a chart to zoom into a time range, and download its CSV", async () => {
  const page = await browser.newPage();
  await page.goto(liveURL);
  // A chart of more than one bucket has its times for the zoom.
  await page.waitForSelector("#chart-rate[data-t0]", patience);
  const svg = page.locator("#chart-rate");
  // The stream replaces the chart as records come in: read its box again
  // when it was swapped out under the question.
  let box = null;
  while (!box) box = await svg.boundingBox();
  // Drag over the middle of the plot (the plot spans x 54..440 of 590).
  const left = box.x + box.width * (120 / 590), right = box.x + box.width * (380 / 590);
  await page.mouse.move(left, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(right, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  await page.waitForURL(/from=[\d.]+&to=[\d.]+/, patience);
  await page.waitForSelector("#zoomed", patience);
  const u = new URL(page.url());
  const from = Number(u.searchParams.get("from")), to = Number(u.searchParams.get("to"));
  assert.ok(to > from, `the zoom ${from}..${to} should be a range`);
  // Every chart's CSV link keeps the zoom; the download is the chart's series.
  const href = await page.getAttribute("#chart-rate-csv", "href");
  assert.match(href, /chart-rate\.csv\?from=/);
  const [download] = await Promise.all([page.waitForEvent("download", patience), page.click("#chart-rate-csv")]);
  const path = await download.path();
  const { readFile } = await import("node:fs/promises");
  const lines = (await readFile(path, "utf8")).trim().split("\n");
  assert.equal(lines[0], "time,bucket_seconds,items/s");
  assert.ok(lines.length >= 2, "the CSV has a row per bucket");
  for (const row of lines.slice(1)) {
    const t = Date.parse(row.split(",")[0]) / 1000;
    assert.ok(t >= from && t <= to + 1, `row ${row} lies outside the zoom ${from}..${to}`);
  }
  await screenshot(page, "web-zoomed.png");
  // The whole job is a link away (the stream replaces it too often for a
  // click to be sure to land on it).
  assert.equal(await page.getAttribute("#zoom-out", "href"), new URL(page.url()).pathname);
  await page.close();
});
