// Child workflows and the workers registry in the dashboard, in Debian's Chromium driven by
// playwright-core: a parent task lists its child in its Children section, the child's step card
// names the child template and links to the child; the child's page links back to its parent
// (and names the step that started it); the Workers page lists at least one live worker with its
// namespaces. No console or page error on the way. Run by tests/fast/dashboard.rs, which reads the
// JSON report this prints on its last line and asserts on it (the script checks the same and
// sets `ok: false`, with `failure`, when one fails).
//
// Environment: TASKER_URL (the orchestrator), TASKER_TOKEN (optional: an API token, put in the
// page's storage before it loads, for an orchestrator that requires one), PARENT_TASK_ID (a task
// one of whose steps started a child task), CHILD_TASK_ID and CHILD_STEP (optional: the child
// task expected in the Children section and the parent step that started it), WORKER_NAMESPACE
// (optional: a namespace a live worker must list), SCREENSHOTS (a folder), CHROMIUM (the
// browser; default /usr/bin/chromium).
import { openPage, tour } from './browser.mjs';

const {
  TASKER_URL: url, TASKER_TOKEN: token, PARENT_TASK_ID: parentId, CHILD_TASK_ID: childIdWanted,
  CHILD_STEP: childStepWanted, WORKER_NAMESPACE: workerNamespace,
} = process.env;
// Every console error counts: nothing on this tour is refused on purpose.
const opened = await openPage({ consoleErrors: true });
const { browser, page, report, shot, text } = opened;
if (token) await page.addInitScript((t) => localStorage.setItem('tasker.token', t), token);
const hash = () => decodeURIComponent(new URL(page.url()).hash);
const check = (ok, what) => { if (!ok) throw new Error(`expected: ${what}`); };

await tour(opened, async () => {
  // The parent: its Children section lists the child (with its step), which its step card links to.
  await page.goto(`${url}/ui/#/tasks/${parentId}`);
  await page.waitForSelector('#task-state[data-state]');
  const childRow = page.locator(childIdWanted ? `#children tr[data-task-id="${childIdWanted}"]` : '#children tr[data-task-id]').first();
  await childRow.waitFor({ timeout: 30_000 });
  report.children = await page.$$eval('#children tr[data-task-id]', (rows) => rows.map((r) => ({
    taskId: r.dataset.taskId,
    step: r.dataset.step,
    state: r.dataset.state,
    href: r.querySelector('a.child-link').getAttribute('href'),
    cells: [...r.cells].map((c) => c.textContent.replace(/\s+/g, ' ').trim()),
  })));
  const child = report.children.find((c) => c.taskId === (childIdWanted || report.children[0].taskId));
  report.childTaskId = child.taskId;
  check(child.href === `#/tasks/${child.taskId}`, 'the Children row links to the child');
  if (childStepWanted) check(child.step === childStepWanted, `the child was started by ${childStepWanted}`);
  const card = page.locator(`#steps .step[data-step="${child.step}"]`);
  await card.locator('.child-of a.child-task').waitFor();
  report.childStep = {
    text: await text(card.locator('.child-of')),
    href: await card.locator('.child-of a.child-task').getAttribute('href'),
    dagKind: await page.getAttribute(`#dag g.node[data-step="${child.step}"]`, 'data-kind'),
  };
  check(report.childStep.href === child.href, 'the child step card links to the child');
  check(report.childStep.text.startsWith('child: '), 'the child step card names the child template');
  await shot('c1-parent');

  // The child, opened from the Children section: a link back to the parent, and the step's name.
  await childRow.locator('a.child-link').click();
  await page.waitForURL((u) => decodeURIComponent(u.hash) === `#/tasks/${child.taskId}`);
  await page.waitForSelector('#task-state[data-state]');
  await page.waitForSelector('#parent-task strong.parent-step');
  report.parent = {
    hash: hash(),
    href: await page.getAttribute('#parent-task a.parent-link', 'href'),
    step: await text(page.locator('#parent-task .parent-step')),
    text: await text(page.locator('#parent-task')),
  };
  check(report.parent.href === `#/tasks/${parentId}`, 'the child links to its parent');
  check(report.parent.step === child.step, 'the child names the parent step that started it');
  await shot('c2-child');

  // … and that link leads back.
  await page.click('#parent-task a.parent-link');
  await page.waitForURL((u) => decodeURIComponent(u.hash) === `#/tasks/${parentId}`);
  await page.waitForSelector(`#children tr[data-task-id="${child.taskId}"]`);

  // The Workers page, from the navigation: at least one live worker, with its namespaces.
  await page.click('header nav a[href="#/workers"]');
  await page.waitForSelector('#workers tr[data-live="true"] td.namespaces code');
  const workerRows = () => page.$$eval('#workers tr[data-worker-id]', (rows) => rows.map((r) => ({
    id: r.dataset.workerId,
    name: r.dataset.name,
    live: r.dataset.live === 'true',
    language: r.querySelector('td.language').textContent,
    namespaces: [...r.querySelectorAll('td.namespaces code')].map((c) => c.textContent),
    lastSeen: r.querySelector('td.last-seen').textContent,
  })));
  report.workers = await workerRows();
  report.workersStatus = await text(page.locator('#workers-status'));
  const live = report.workers.filter((w) => w.live && w.namespaces.length);
  check(live.length > 0, 'a live worker with its namespaces is listed');
  if (workerNamespace) check(live.some((w) => w.namespaces.includes(workerNamespace)), `a live worker serves ${workerNamespace}`);
  await shot('c3-workers');

  // With the workers not seen lately too: the live ones are still there.
  await page.check('#workers-all');
  await page.waitForFunction(() => / of \d+/.test(document.querySelector('#workers-status').textContent));
  report.allWorkers = (await workerRows()).length;
  check(report.allWorkers >= live.length, 'all=true lists the live workers too');

  check(report.pageErrors.length === 0, 'no page error');
  check(report.consoleErrors.length === 0, 'no console error');
});
