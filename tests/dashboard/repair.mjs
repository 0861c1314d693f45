// Opens a failed task in the dashboard, retries it and watches it complete, in Debian's
// Chromium driven by playwright-core. Run by tests/dashboard.rs, which reads the JSON report
// this prints on its last line and asserts on it.
//
// Environment: TASKER_URL (the orchestrator), TASKER_TOKEN (a write token, typed in when the page
// asks for one), TASK_ID (a task in error), TEMPLATE
// ("namespace/name@version" of a registered template), SCREENSHOTS (a folder), CHROMIUM (the
// browser; default /usr/bin/chromium).
import { openPage, tour } from './browser.mjs';

const { TASKER_URL: url, TASK_ID: taskId, TEMPLATE: template } = process.env;
const opened = await openPage();
const { browser, page, report, shot } = opened;
const nodes = () =>
  page.$$eval('#dag g.node', (ns) => Object.fromEntries(ns.map((n) => [n.dataset.step, n.dataset.state])));

await tour(opened, async () => {
  // The orchestrator requires a token: the page asks for one, then shows the list.
  await page.goto(`${url}/ui/#/tasks`);
  await page.waitForSelector('#token-form:not([hidden])');
  report.askedForToken = true;
  await page.fill('#token-input', process.env.TASKER_TOKEN);
  await page.click('#token-form button[type="submit"]');

  // The list shows the task; its link opens it.
  const row = page.locator(`tr[data-task-id="${taskId}"]`);
  await row.waitFor();
  report.listedState = (await row.textContent()).includes('error') ? 'error' : 'other';
  await shot('1-tasks');
  await row.locator('a').first().click();

  // The failed task, live.
  await page.waitForSelector('#task-state[data-state="error"]');
  await page.waitForSelector('#live[data-live="on"]');
  await page.waitForSelector('#dag g.node[data-state="failed"]');
  report.before = await nodes();
  report.failedSteps = await page.$$eval('button.resolve', (bs) => bs.map((b) => b.dataset.step));
  report.errorShown = (await page.textContent('#steps')).includes('transient');
  await shot('2-failed');

  // Retry it; the page changes only through the server's pushes.
  await page.fill('#repair-reason', 'retried from the dashboard test');
  await page.click('#retry');
  await page.waitForSelector('#task-state[data-state="complete"]', { timeout: 30_000 });
  await page.waitForFunction(
    () => [...document.querySelectorAll('#dag g.node')].every((n) => n.dataset.state === 'completed'),
  );
  report.after = await nodes();
  report.waterfallRows = await page.$$eval('#waterfall [data-step]', (rs) => rs.length);
  report.handlerBars = await page.$$eval('#waterfall .bar.handler', (bs) => bs.length);
  const historyText = await page.textContent('#history');
  report.historyHasReason = historyText.includes('retried from the dashboard test') && historyText.includes('by dashboard');
  report.retryHidden = !(await page.isVisible('#retry'));
  await shot('3-complete');

  // Templates: the same DAG drawn from the template alone.
  await page.goto(`${url}/ui/#/templates`);
  await page.locator(`tr[data-template="${template}"] a`).first().click();
  await page.waitForSelector('#template-dag g.node');
  report.templateNodes = await page.$$eval('#template-dag g.node', (ns) => ns.map((n) => n.dataset.step).sort());
  await shot('4-template');

  // Dead letters: the (empty) list renders.
  await page.goto(`${url}/ui/#/dead-letters`);
  await page.waitForSelector('table#dead-letters');
  report.deadLetters = await page.$$eval('tr[data-dead-letter-id]', (rs) => rs.length);
  await shot('5-dead-letters');
});
