// Schedules, delayed tasks and wait steps in the dashboard, in Debian's Chromium driven by
// playwright-core: a schedule is listed with its next fire, triggered (the page opens the new
// task) and paused with a note; a scheduled task is found with the `scheduled` filter; a task
// whose step waits for a signal says so (and its deadline), a refused signal shows the API's error and the signal
// sent from the form completes the step; a purged task's page says it was purged; the retention
// page shows the policy and the last purge; the scheduled task is cancelled from its page after
// a confirmation, a dead letter discarded from its page after one, and the others discarded by
// filter as one operation. Run by tests/fast/dashboard.rs, which reads the JSON
// report this prints on its last line and asserts on it (and on what the API then says).
//
// Environment: TASKER_URL (the orchestrator, tokens off), SCHEDULE ("namespace/name" of a
// schedule, not paused), SCHEDULED_TASK_ID (a task in state `scheduled`), WAIT_TASK_ID (a task
// whose step WAIT_STEP waits for the signal SIGNAL), PAUSE_NOTE, PURGED_TASK_ID (a task purged by
// retention, whose id the API answers 410 task_purged), DEAD_LETTER_ID (a dead letter),
// SCREENSHOTS (a folder),
// CHROMIUM (the browser; default /usr/bin/chromium).
import { openPage, tour } from './browser.mjs';

const {
  TASKER_URL: url, SCHEDULE: schedule, SCHEDULED_TASK_ID: scheduledId, WAIT_TASK_ID: waitTaskId,
  WAIT_STEP: waitStep, SIGNAL: signalName, PAUSE_NOTE: note, PURGED_TASK_ID: purgedId,
  DEAD_LETTER_ID: deadLetterId,
} = process.env;
// Console errors other than the browser's own lines for refused requests (two are on purpose: a
// signal name the API refuses, a purged task's 410).
const opened = await openPage({
  consoleErrors: true, ignored: (t) => t.startsWith('Failed to load resource'),
});
const { browser, page, report, shot, text } = opened;

await tour(opened, async () => {
  // The schedule's row, with its next fire (the exact time in the datetime attribute).
  await page.goto(`${url}/ui/#/schedules`);
  const row = page.locator(`tr[data-schedule="${schedule}"]`);
  await row.waitFor();
  report.listed = {
    paused: await row.getAttribute('data-paused'),
    nextFireAt: await row.locator('td.next-fire time').getAttribute('datetime'),
    nextFire: await text(row.locator('td.next-fire')),
    cron: await text(row.locator('td.cron')),
    template: await text(row.locator('td').nth(1)),
  };
  await shot('t1-schedules');

  // Trigger now, confirmed: the page opens the task it started.
  await row.locator('button.trigger').click();
  await page.locator(`tr[data-confirm-for="${schedule}"] button.trigger-confirm`).click();
  await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/);
  report.triggeredTaskId = decodeURIComponent(new URL(page.url()).hash.split('/').pop());
  await page.waitForSelector('#task-state[data-state]');
  report.triggerNotice = await text(page.locator('#notice'));

  // Pause with a note, confirmed: the row says paused, with the note, and offers Resume.
  await page.goto(`${url}/ui/#/schedules`);
  await row.locator('button.pause').click();
  const confirm = page.locator(`tr[data-confirm-for="${schedule}"]`);
  await confirm.locator('input.pause-note').fill(note);
  await shot('t2-pause');
  await confirm.locator('button.pause-confirm').click();
  await page.waitForSelector(`tr[data-schedule="${schedule}"][data-paused="true"]`);
  report.paused = {
    state: await text(row.locator('td.paused-state')),
    notice: await text(page.locator('#notice')),
    resumeShown: await row.locator('button.resume').isVisible(),
  };

  // A click on the row opens the schedule: its fields and next fire times.
  await row.locator('td.cron').click();
  await page.waitForSelector('#schedule-cron');
  report.detail = {
    hash: decodeURIComponent(new URL(page.url()).hash),
    cron: await text(page.locator('#schedule-cron')),
    upcoming: await page.locator('#upcoming li').count(),
    text: await text(page.locator('main')),
  };
  await shot('t3-schedule');

  // The task scheduled for later: in the list filtered on `scheduled`, with when it starts.
  await page.goto(`${url}/ui/#/tasks`);
  await page.locator('#filter-state').selectOption('scheduled');
  await page.waitForFunction((id) => {
    const badges = [...document.querySelectorAll('#tasks tr[data-task-id] .badge')];
    return document.querySelector(`#tasks tr[data-task-id="${id}"]`) &&
      badges.every((b) => b.textContent === 'scheduled');
  }, scheduledId);
  const scheduledRow = page.locator(`tr[data-task-id="${scheduledId}"]`);
  report.scheduledRow = await text(scheduledRow);
  report.scheduledBadge = await scheduledRow.locator('.badge').getAttribute('class');
  await shot('t4-scheduled');

  // The waiting task: the step says what it waits for, the graph shows it waiting.
  await page.goto(`${url}/ui/#/tasks/${waitTaskId}`);
  await page.waitForSelector('#live[data-live="on"]');
  const step = page.locator(`#steps .step[data-step="${waitStep}"]`);
  await page.waitForSelector(`#steps .step[data-step="${waitStep}"][data-state="waiting"]`, { timeout: 30_000 });
  const node = `#dag g.node[data-step="${waitStep}"]`;
  await page.waitForSelector(`${node}[data-state="waiting"]`);
  report.waiting = {
    text: await text(step.locator('.wait-info')),
    dagKind: await page.getAttribute(node, 'data-kind'),
    formShown: await page.isVisible('#signal-section'),
    prefilled: await page.inputValue('#signal-name'),
    deadline: await text(page.locator('#task-deadline')),
    deadlineAction: await page.getAttribute('#task-deadline', 'data-action'),
  };
  await shot('t5-waiting');

  // A name the API refuses: its error is shown, the step still waits.
  await page.fill('#signal-name', 'not a name!');
  await page.click('#signal-submit');
  await page.waitForSelector('#error:not([hidden])');
  report.refusal = await text(page.locator('#error'));

  // The signal, with a payload and an id, from the form: the step completes and so does the task.
  await page.fill('#signal-name', signalName);
  await page.fill('#signal-payload', '{"value": 21}');
  await page.fill('#signal-id', 'from-the-dashboard');
  await page.click('#signal-submit');
  await page.waitForSelector(`#steps .step[data-step="${waitStep}"][data-state="completed"]`, { timeout: 30_000 });
  await page.waitForSelector('#task-state[data-state="complete"]', { timeout: 30_000 });
  const signalRow = page.locator('#signals tr[data-signal-id="from-the-dashboard"]');
  await page.waitForSelector('#signals tr[data-signal-id="from-the-dashboard"] td.consumed-by strong');
  report.signalled = {
    notice: await text(page.locator('#notice')),
    row: await text(signalRow),
    consumedBy: await text(signalRow.locator('td.consumed-by')),
    formHidden: !(await page.isVisible('#signal-section')),
    errorHidden: !(await page.isVisible('#error')),
    dagState: await page.getAttribute(node, 'data-state'),
  };
  await shot('t6-signalled');

  // A purged task: its page says what happened instead of showing an error (the 410 is the
  // second refused request on purpose).
  await page.goto(`${url}/ui/#/tasks/${purgedId}`);
  await page.waitForSelector('#task-purged');
  report.purged = {
    text: await text(page.locator('#task-purged')),
    state: await page.getAttribute('#task-purged', 'data-state'),
    errorHidden: !(await page.isVisible('#error')),
  };
  await shot('t7-purged');

  // The retention policy: how long finished tasks of each state are kept, how long a purged id
  // answers 410, the purge's pace and the last purge (the task purged above), with no error.
  await page.goto(`${url}/ui/#/retention`);
  await page.waitForSelector('#retention dl');
  report.retention = {
    // Each term and its value: "Completed tasks kept 30d", …, "Last purge 2026-… (12s ago)".
    rows: await page.locator('#retention dt').evaluateAll((dts) => dts.map((dt) =>
      `${dt.textContent} ${dt.nextElementSibling.textContent}`.replace(/\s+/g, ' ').trim())),
    // The exact time of the last purge (null when none is remembered).
    lastPurgedAt: await page.getAttribute('#retention-last', 'data-purged-at'),
    navCurrent: await page.getAttribute('header nav a[href="#/retention"]', 'aria-current'),
    errorHidden: !(await page.isVisible('#error')),
  };
  await shot('t8-retention');

  // The scheduled task, cancelled from its page: the button asks first; "Keep it" sends
  // nothing, the confirmation cancels it.
  await page.goto(`${url}/ui/#/tasks/${scheduledId}`);
  await page.waitForSelector('#task-state[data-state="scheduled"]');
  await page.click('#cancel');
  await page.waitForSelector('#cancel-panel:not([hidden]) #cancel-confirm');
  report.cancel = { asked: await text(page.locator('#cancel-panel')) };
  await shot('t9-cancel');
  await page.click('#cancel-panel button.cancel');
  report.cancel.keptPanelHidden = await page.isHidden('#cancel-panel');
  report.cancel.keptState = await page.getAttribute('#task-state', 'data-state');
  await page.click('#cancel');
  await page.click('#cancel-confirm');
  await page.waitForSelector('#task-state[data-state="cancelled"]');
  report.cancel.state = 'cancelled';
  report.cancel.panelHidden = await page.isHidden('#cancel-panel');
  report.cancel.buttonHidden = await page.isHidden('#cancel');
  await shot('t10-cancelled');

  // The dead letter, discarded from its page: the button asks first; "Keep it" deletes nothing,
  // the confirmation does and goes back to the list with a notice.
  await page.goto(`${url}/ui/#/dead-letters/${deadLetterId}`);
  await page.click('button.discard');
  await page.waitForSelector('#discard-panel:not([hidden]) #discard-confirm');
  report.discard = { asked: await text(page.locator('#discard-panel')) };
  await shot('t11-discard');
  await page.click('#discard-panel button.cancel');
  report.discard.keptStatus = (await fetch(`${url}/v1/dead-letters/${deadLetterId}`)).status;
  await page.click('button.discard');
  await page.click('#discard-confirm');
  await page.waitForFunction(() => location.hash === '#/dead-letters');
  await page.waitForSelector('table#dead-letters');
  report.discard.notice = await text(page.locator('#notice'));
  report.discard.listed = await page.$$eval('tr[data-dead-letter-id]', (rs) => rs.map((r) => r.dataset.deadLetterId));

  // The rest, by filter: their reason typed in (the address keeps it), every one discarded as
  // one operation after the count is shown.
  await page.fill('#letters-reason', 'junk');
  await page.click('form.filters button[type="submit"]');
  await page.waitForFunction(() => location.hash === '#/dead-letters?reason=junk');
  await page.waitForSelector('tr[data-dead-letter-id]');
  report.bulk = { filtered: await page.locator('tr[data-dead-letter-id]').count() };
  await page.click('#bulk-bar button.bulk-discard');
  await page.locator('#bulk-count').waitFor();
  report.bulk.matched = Number(await page.getAttribute('#bulk-count', 'data-matched'));
  report.bulk.okLabel = await page.textContent('#bulk-ok');
  await page.fill('#bulk-reason', 'unreadable junk');
  await page.click('#bulk-ok');
  const done = page.locator('#operation[data-state="complete"]');
  await done.waitFor({ timeout: 30_000 });
  report.bulk.acted = Number(await done.getAttribute('data-acted'));
  report.bulk.after = (await (await fetch(`${url}/v1/dead-letters`)).json()).dead_letters.length;
});
