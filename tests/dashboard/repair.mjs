// Opens a failed task in the dashboard, retries it and watches it complete, in Debian's
// Chromium driven by playwright-core; then, on the completed task: the flaky step's earlier error
// folded, its every attempt in the timeline, the timeline zoomed in, fitted, and zoomed on a
// step and on a handler bar of a few µs; a task started from a template's page (a context the
// schema refuses first, then one it accepts); the task list showing a task created meanwhile
// without a reload, and filtered on its context and creation time. Run by tests/dashboard.rs,
// which reads the JSON report this prints on its last line and asserts on it.
//
// Environment: TASKER_URL (the orchestrator), TASKER_TOKEN (a write token, typed in when the page
// asks for one), TASK_ID (a task in error), TEMPLATE ("namespace/name@version" of a registered
// template), START_TEMPLATE (the same, of a template whose context schema requires an integer
// `value` and whose tasks complete), SCREENSHOTS (a folder), CHROMIUM (the browser; default
// /usr/bin/chromium).
import { openPage, tour } from './browser.mjs';

const {
  TASKER_URL: url, TASKER_TOKEN: token, TASK_ID: taskId, TEMPLATE: template, START_TEMPLATE: startTemplate,
} = process.env;
const opened = await openPage();
const { browser, page, report, shot, text } = opened;
const nodes = () =>
  page.$$eval('#dag g.node', (ns) => Object.fromEntries(ns.map((n) => [n.dataset.step, n.dataset.state])));
// The timeline's window: [from, to] in µs from the task's creation.
const timelineWindow = () =>
  page.$eval('#waterfall', (w) => [Number(w.dataset.fromUs), Number(w.dataset.toUs)]);
// The window after `act`, once it changed.
const windowAfter = async (act) => {
  const before = await timelineWindow();
  await act();
  await page.waitForFunction((b) => {
    const w = document.querySelector('#waterfall');
    return Number(w.dataset.fromUs) !== b[0] || Number(w.dataset.toUs) !== b[1];
  }, before);
  return timelineWindow();
};

await tour(opened, async () => {
  // The orchestrator requires a token: the page asks for one, then shows the list.
  await page.goto(`${url}/ui/#/tasks`);
  await page.waitForSelector('#token-form:not([hidden])');
  report.askedForToken = true;
  await page.fill('#token-input', token);
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
  report.replayHint = await page.$$eval('.step .replay code', (cs) => cs.map((c) => c.textContent));
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

  // `flaky` completed at its 4th attempt: the 3rd's error is folded as an earlier one, no red box.
  const flaky = page.locator('#steps .step[data-step="flaky"]');
  report.earlierError = {
    summary: await text(flaky.locator('details.earlier-error > summary')),
    open: await flaky.locator('details.earlier-error').evaluate((d) => d.open),
    redBoxes: await flaky.locator(':scope > pre.error').count(),
  };

  // The timeline: a bar for each attempt of `flaky`, the failed ones drawn failed.
  const attemptsIn = (sel) => page.$$eval(sel, (bs) => [...new Set(bs.map((b) => Number(b.dataset.attempt)))].sort((a, b) => a - b));
  report.attempts = {
    all: await attemptsIn('#waterfall .wf-row[data-step="flaky"] .bar'),
    failed: await attemptsIn('#waterfall .wf-row[data-step="flaky"] .bar.failed'),
  };
  report.attemptBars = report.attempts.all.length;

  // Zoom in halves the window (all of the task at first); Fit shows all of it again.
  const all = await timelineWindow();
  const zoomedIn = await windowAfter(() => page.click('#timeline-zoom-in'));
  await shot('6-zoomed-in');
  report.zoom = { before: all, zoomedIn, fit: await windowAfter(() => page.click('#timeline-fit')) };

  // A handler of less than 1 ms (the longest such of a step of one attempt): 2 px wide at first,
  // wider zoomed on its step (a click on its name), most of the track zoomed on the bar (a click
  // on it).
  const micro = await page.$$eval('#waterfall .wf-row', (rows) => {
    const handlers = rows.map((r) => [r, r.querySelector('.bar.handler')]).filter(([r, b]) => b &&
      Number(b.dataset.us) < 1000 && new Set([...r.querySelectorAll('.bar')].map((x) => x.dataset.attempt)).size === 1);
    handlers.sort((x, y) => Number(y[1].dataset.us) - Number(x[1].dataset.us));
    return handlers.length ? handlers[0][0].dataset.step : null;
  });
  if (!micro) throw new Error('no step of one attempt whose handler took less than 1 ms');
  const microBar = `#waterfall .wf-row[data-step="${micro}"] .bar.handler`;
  const width = () => page.$eval(microBar, (b) => b.getBoundingClientRect().width);
  const widths = [await width()];
  const stepWindow = await windowAfter(() => page.click(`#waterfall .wf-row[data-step="${micro}"] .wf-label`));
  widths.push(await width());
  // (clicked in the page: at some zooms the bar is too thin for a pointer)
  const barWindow = await windowAfter(() => page.$eval(microBar, (b) => b.click()));
  widths.push(await width());
  const track = await page.$eval(microBar, (b) => b.parentElement.getBoundingClientRect().width);
  report.microBar = { step: micro, widths, track, stepWindow, barWindow };
  report.microBarTitle = await page.getAttribute(microBar, 'title');
  report.microBarUs = Number(await page.getAttribute(microBar, 'data-us'));
  await shot('7-zoomed-handler');

  // Templates: the same DAG drawn from the template alone.
  await page.goto(`${url}/ui/#/templates`);
  await page.locator(`tr[data-template="${template}"] a`).first().click();
  await page.waitForSelector('#template-dag g.node');
  report.templateNodes = await page.$$eval('#template-dag g.node', (ns) => ns.map((n) => n.dataset.step).sort());
  await shot('4-template');

  // Start a task from a template's page: the context prefilled from its schema, a syntax error
  // caught as it is typed, a context the schema refuses shown with the API's error, then one it
  // accepts: the new task opens and completes.
  const [startNs, startName, startVersion] = startTemplate.split(/[/@]/);
  await page.goto(`${url}/ui/#/templates/${startNs}/${startName}/${startVersion}`);
  await page.waitForSelector('#start-context');
  report.startPrefill = JSON.parse(await page.inputValue('#start-context'));
  await page.fill('#start-context', '{"value": ');
  report.startSyntax = { error: await text(page.locator('#start-error')), submitDisabled: await page.isDisabled('#start-submit') };
  await page.fill('#start-context', '{"value": "six"}');
  report.startSyntax.clearedWhenFixed = (await page.isHidden('#start-error')) && (await page.isEnabled('#start-submit'));
  await page.click('#start-submit');
  await page.waitForSelector('#start-error:not([hidden])');
  report.startRefused = await text(page.locator('#start-error'));
  await shot('8-start-refused');
  await page.fill('#start-context', '{"value": 6}');
  await page.fill('#start-key', 'started-from-the-dashboard');
  await page.click('#start-submit');
  await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/);
  report.startedTaskId = decodeURIComponent(new URL(page.url()).hash.split('/').pop());
  await page.waitForSelector('#task-state[data-state="complete"]', { timeout: 30_000 });
  report.startedState = await page.getAttribute('#task-state', 'data-state');
  report.startNotice = await text(page.locator('#notice'));
  await shot('9-started');

  // The task list is live: a task created meanwhile (here, through the API) shows up, highlighted,
  // with no reload.
  await page.goto(`${url}/ui/#/tasks`);
  await page.waitForSelector('#tasks-live[data-live="on"]');
  await page.evaluate(() => { window.notReloaded = true; });
  const resp = await fetch(`${url}/v1/tasks`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ namespace: 'rust_examples', name: 'repairable', context: { value: 1, succeed_on_attempt: 1 } }),
  });
  const created = await resp.json();
  if (!resp.ok) throw new Error(`POST /v1/tasks: ${resp.status} ${JSON.stringify(created)}`);
  const liveRow = `#tasks tr[data-task-id="${created.id}"]`;
  await page.waitForSelector(liveRow, { timeout: 10_000 });
  report.liveRowAppeared = true;
  report.liveRow = {
    id: created.id,
    highlighted: await page.$eval(liveRow, (r) => r.classList.contains('new')),
    notReloaded: await page.evaluate(() => window.notReloaded === true),
  };
  await shot('10-live');

  // Filtered on the context (tasks whose context contains a JSON object): only that task; a
  // filter that is not JSON is refused before any request; created before 2000: none.
  await page.fill('#filter-context', '{"succeed_on_attempt": 1}');
  await page.press('#filter-context', 'Enter');
  await page.waitForFunction((id) => JSON.stringify([...document.querySelectorAll('#tasks tr[data-task-id]')]
    .map((r) => r.dataset.taskId)) === JSON.stringify([id]), created.id);
  report.contextFiltered = await page.$$eval('#tasks tr[data-task-id]', (rs) => rs.map((r) => r.dataset.taskId));
  await page.fill('#filter-context', '{"succeed_on_attempt": ');
  await page.press('#filter-context', 'Enter');
  await page.waitForSelector('#error:not([hidden])');
  report.contextFilterRefused = {
    error: await text(page.locator('#error')),
    invalid: await page.getAttribute('#filter-context', 'aria-invalid'),
    rows: await page.$$eval('#tasks tr[data-task-id]', (rs) => rs.map((r) => r.dataset.taskId)),
  };
  await page.fill('#filter-context', '');
  await page.fill('#filter-before', '2000-01-01T00:00');
  await page.press('#filter-context', 'Enter');
  await page.waitForSelector('#tasks td.muted');
  report.createdBefore2000 = await text(page.locator('#tasks tbody'));
  await shot('11-filtered');

  // Dead letters: the (empty) list renders.
  await page.goto(`${url}/ui/#/dead-letters`);
  await page.waitForSelector('table#dead-letters');
  report.deadLetters = await page.$$eval('tr[data-dead-letter-id]', (rs) => rs.length);
  await shot('5-dead-letters');
});
