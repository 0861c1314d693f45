// Retries every failed task of one template from the task list, as an on-call engineer would:
// the counts by state of the template's tasks, a click on the error count to filter on it, "Retry all matching…", the count in the confirmation,
// a reason, then the operation's page until it completes; and the Operations page lists it.
// Run by tests/fast/dashboard/operations.rs, which reads the JSON report this prints on its last
// line and asserts on it.
//
// Environment: TASKER_URL (the orchestrator), TASKER_TOKEN (a write token, typed in when the page
// asks for one), NAME (the failed tasks' template name), SCREENSHOTS, CHROMIUM.
import { openPage, tour } from './browser.mjs';

const { TASKER_URL: url, TASKER_TOKEN: token, NAME: name } = process.env;
// Console errors other than the browser's own line for the first, refused load (the page asks
// for a token after a 401).
const opened = await openPage({
  consoleErrors: true, ignored: (t) => t.includes('status of 401'),
});
const { browser, page, report, shot } = opened;

await tour(opened, async () => {
  await page.goto(`${url}/ui/#/tasks`);
  await page.waitForSelector('#token-form:not([hidden])');
  await page.fill('#token-input', token);
  await page.click('#token-form button[type="submit"]');
  await page.waitForSelector('#tasks');
  // No state filter: no bulk action, a hint instead.
  report.hintWithoutState = await page.isVisible('#bulk-hint');

  // Counts by state for the filter; a count's link filters on its state.
  await page.fill('#filter-name', name);
  await page.click('form.filters button[type="submit"]');
  // The counts of this filter (not those of the unfiltered list, which may still be on screen).
  await page.waitForSelector(`#task-counts[data-query*="name=${name}"] a.count[data-state="error"]`);
  report.counts = await page.$$eval('#task-counts a.count',
    (as) => Object.fromEntries(as.map((a) => [a.dataset.state, Number(a.dataset.count)])));
  await page.click('#task-counts a.count[data-state="error"]');
  await page.waitForSelector('#bulk-bar button.bulk-retry');
  // The address says the filter: opened in a new tab (a new browser context, the token kept as
  // a user's browser keeps it), it shows the same view.
  report.address = decodeURIComponent(new URL(page.url()).hash);
  const other = await browser.newContext();
  await other.addInitScript((t) => localStorage.setItem('tasker.token', t), token);
  const tab = await other.newPage();
  await tab.goto(page.url());
  await tab.waitForSelector('#tasks tr[data-task-id]');
  await tab.waitForSelector('#task-counts a.count[aria-current="true"]');
  report.newTab = {
    state: await tab.inputValue('#filter-state'),
    name: await tab.inputValue('#filter-name'),
    rows: await tab.locator('#tasks tr[data-task-id]').count(),
    current: await tab.getAttribute('#task-counts a.count[aria-current="true"]', 'data-state'),
  };
  await other.close();
  report.cancelOffered = await page.isVisible('#bulk-bar button.bulk-cancel');
  await page.click('#bulk-bar button.bulk-retry');
  const count = page.locator('#bulk-count');
  await count.waitFor();
  report.matched = Number(await count.getAttribute('data-matched'));
  report.okLabel = await page.textContent('#bulk-ok');
  await shot('operations-1-confirm');
  await page.fill('#bulk-reason', 'upstream fixed (browser)');
  await page.click('#bulk-ok');

  await page.waitForURL(/#\/operations\/[0-9a-f-]+$/);
  report.operationId = page.url().split('/').pop();
  const done = page.locator('#operation[data-state="complete"]');
  // The progress bar's values while it runs (a big operation shows some short of its end).
  report.progressSeen = await page.evaluate(() => new Promise((resolve) => {
    const seen = new Set();
    const end = Date.now() + 60_000;
    const look = () => {
      const bar = document.querySelector('#operation-progress');
      if (bar) seen.add(bar.value);
      if (document.querySelector('#operation[data-state="complete"]') || Date.now() > end) {
        return resolve([...seen]);
      }
      setTimeout(look, 50);
    };
    look();
  }));
  await done.waitFor({ timeout: 60_000 });
  report.acted = Number(await done.getAttribute('data-acted'));
  report.skipped = Number(await done.getAttribute('data-skipped'));
  report.progress = await page.$eval('#operation-progress', (p) => [p.value, p.max]);
  report.cancelShownWhenDone = await page.isVisible('#operation-cancel');
  await shot('operations-2-done');

  await page.click('a[href="#/operations"]');
  const row = page.locator(`tr[data-operation-id="${report.operationId}"]`);
  await row.waitFor();
  report.listed = (await row.textContent()).includes('complete');
  await shot('operations-3-list');
});
