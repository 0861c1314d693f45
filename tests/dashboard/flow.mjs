// Priorities, concurrency limits and rate limits in the dashboard, in Debian's Chromium driven by
// playwright-core: a task whose step is throttled shows the step as `throttled` (its card, its
// graph node) with the key that holds it back, and its priority when it is not normal; the
// Limits page (from the navigation) lists the rate key (and a concurrency key), pauses the rate
// key from its form — a first confirmation dismissed sends nothing, the second accepted pauses
// it — and resumes it. No console or page error on the way. Run by tests/fast/dashboard.rs,
// which reads the JSON report this prints on its last line and asserts on it (the script checks
// the same and sets `ok: false`, with `failure`, when one fails).
//
// Environment: TASKER_URL (the orchestrator), TASKER_TOKEN (optional: an API token, put in the
// page's storage before it loads; pausing needs one of scope write for every namespace),
// THROTTLED_TASK_ID (a task one of whose steps is `throttled` and stays so while the script
// runs), THROTTLED_STEP (that step's name), THROTTLE_KEY (the key its `throttle` names),
// THROTTLE_KIND (optional: concurrency | rate | paused), PRIORITY (optional: the task's
// priority, high or low, expected on its page and in the task list), RATE_KEY (a rate key, not
// paused, listed by GET /v1/rate-limits), CONCURRENCY_KEY (optional: a key GET
// /v1/concurrency-limits lists), PAUSE_MINUTES (optional, default 10), PAUSE_NOTE,
// SCREENSHOTS (a folder), CHROMIUM (the browser; default /usr/bin/chromium).
import { openPage, tour } from './browser.mjs';

const {
  TASKER_URL: url, TASKER_TOKEN: token, THROTTLED_TASK_ID: taskId, THROTTLED_STEP: stepName,
  THROTTLE_KEY: throttleKey, THROTTLE_KIND: throttleKind, PRIORITY: priority, RATE_KEY: rateKey,
  CONCURRENCY_KEY: concurrencyKey, PAUSE_MINUTES: pauseMinutes = '10', PAUSE_NOTE: note = '',
} = process.env;
// Every console error counts: nothing on this tour is refused on purpose.
const opened = await openPage({ consoleErrors: true });
const { browser, page, report, shot, text } = opened;
if (token) await page.addInitScript((t) => localStorage.setItem('tasker.token', t), token);
const check = (ok, what) => { if (!ok) throw new Error(`expected: ${what}`); };
// The answer to the next confirmation dialog (accept or dismiss), and the dialogs seen.
let answer = 'dismiss';
report.dialogs = [];
page.on('dialog', async (d) => {
  report.dialogs.push({ type: d.type(), message: d.message(), answer });
  await (answer === 'accept' ? d.accept() : d.dismiss());
});

await tour(opened, async () => {
  // The throttled step: its card says which key holds it, its graph node is drawn throttled.
  await page.goto(`${url}/ui/#/tasks/${taskId}`);
  await page.waitForSelector('#live[data-live="on"]');
  const card = page.locator(`#steps .step[data-step="${stepName}"]`);
  await page.waitForSelector(`#steps .step[data-step="${stepName}"][data-state="throttled"] .throttle-info`, { timeout: 30_000 });
  const node = `#dag g.node[data-step="${stepName}"]`;
  await page.waitForSelector(`${node}[data-state="throttled"]`);
  report.throttled = {
    state: await text(card.locator('.badge').first()),
    kind: await card.locator('.throttle-info').getAttribute('data-kind'),
    key: await text(card.locator('.throttle-info code.throttle-key')),
    text: await text(card.locator('.throttle-info')),
    limits: (await card.locator('.limits-info').count()) ? await text(card.locator('.limits-info')) : null,
    dagState: await page.getAttribute(node, 'data-state'),
    dagTitle: await text(page.locator(`${node} title`)),
    priority: (await page.isVisible('#task-priority')) ? await text(page.locator('#task-priority')) : null,
  };
  check(report.throttled.state === 'throttled', 'the step card says throttled');
  check(report.throttled.key === throttleKey, `the throttled step names the key ${throttleKey}`);
  if (throttleKind) check(report.throttled.kind === throttleKind, `the step is throttled by ${throttleKind}`);
  check(report.throttled.dagTitle.includes(throttleKey), 'the graph node names the key in its tooltip');
  if (priority && priority !== 'normal') check(report.throttled.priority === `${priority} priority`, `the task page says ${priority} priority`);
  else check(report.throttled.priority === null, 'no priority shown for a normal task');
  await shot('f1-throttled');

  // The task list: the task's row carries its priority beside its state.
  if (priority) {
    await page.goto(`${url}/ui/#/tasks`);
    const row = page.locator(`#tasks tr[data-task-id="${taskId}"]`);
    await row.waitFor();
    report.listed = {
      state: await text(row.locator('.badge')),
      priority: (await row.locator('.prio').count()) ? await text(row.locator('.prio')) : null,
    };
    check(report.listed.state === 'running', 'the task with a throttled step is running');
    if (priority !== 'normal') check(report.listed.priority === priority, `the list row says ${priority}`);
  }

  // The Limits page, from the navigation: the rate key (and the concurrency key).
  await page.click('header nav a[href="#/limits"]');
  const rateRow = page.locator(`#rate-limits tr[data-key="${rateKey}"]`);
  await rateRow.waitFor();
  report.rate = {
    paused: await rateRow.getAttribute('data-paused'),
    rate: await text(rateRow.locator('td.rate')),
    burst: await text(rateRow.locator('td.burst')),
    throttled: await text(rateRow.locator('td.throttled')),
    pauseShown: await rateRow.locator('button.pause').isVisible(),
  };
  check(report.rate.paused === 'false', `${rateKey} is not paused yet`);
  if (concurrencyKey) {
    const row = page.locator(`#concurrency-limits tr[data-key="${concurrencyKey}"]`);
    await row.waitFor();
    report.concurrency = {
      inUse: await text(row.locator('td.in-use')),
      throttled: await text(row.locator('td.throttled')),
    };
  }
  report.limitsStatus = await text(page.locator('#limits-status'));
  await shot('f2-limits');

  // Pause, for some minutes with a note: dismissed at the confirmation, nothing is sent and the
  // form stays open; accepted, the row says paused, until when, with the note.
  await rateRow.locator('button.pause').click();
  const confirm = page.locator(`tr[data-confirm-for="${rateKey}"]`);
  await confirm.locator('input.pause-minutes').fill(pauseMinutes);
  await confirm.locator('input.pause-note').fill(note);
  await shot('f3-pause');
  answer = 'dismiss';
  await confirm.locator('button.pause-confirm').click();
  report.dismissed = {
    formOpen: await confirm.isVisible(),
    buttonEnabled: await confirm.locator('button.pause-confirm').isEnabled(),
    paused: await rateRow.getAttribute('data-paused'),
  };
  check(report.dialogs.length === 1 && report.dialogs[0].type === 'confirm', 'the pause asks for confirmation');
  check(report.dismissed.formOpen && report.dismissed.paused === 'false', 'a dismissed confirmation pauses nothing');
  answer = 'accept';
  await confirm.locator('button.pause-confirm').click();
  await page.waitForSelector(`#rate-limits tr[data-key="${rateKey}"][data-paused="true"]`);
  report.paused = {
    state: await text(rateRow.locator('td.paused-state')),
    until: await rateRow.locator('td.paused-state time').getAttribute('datetime'),
    notice: await text(page.locator('#notice')),
    resumeShown: await rateRow.locator('button.resume').isVisible(),
  };
  check(report.dialogs.length === 2 && report.dialogs[1].message.includes(rateKey), 'the confirmation names the key');
  check(report.paused.state.includes('paused'), 'the row says paused');
  if (note) check(report.paused.state.includes(note), 'the row shows the pause note');
  check(report.paused.resumeShown, 'a paused key offers Resume');
  await shot('f4-paused');

  // Resume: the pause is gone.
  await rateRow.locator('button.resume').click();
  await page.waitForSelector(`#rate-limits tr[data-key="${rateKey}"][data-paused="false"]`);
  report.resumed = {
    state: await text(rateRow.locator('td.paused-state')),
    notice: await text(page.locator('#notice')),
    pauseShown: await rateRow.locator('button.pause').isVisible(),
  };
  check(!report.resumed.state.includes('paused'), 'the row no longer says paused');
  check(report.resumed.notice.includes('resumed'), 'a notice says the key was resumed');
  await shot('f5-resumed');

  check(report.pageErrors.length === 0, 'no page error');
  check(report.consoleErrors.length === 0, 'no console error');
});
