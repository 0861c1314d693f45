// A running step in the dashboard, in Debian's Chromium driven by playwright-core: a step whose
// handler sleeps is shown `running` on its worker (the step card, the graph node) while it runs,
// its timeline bar grows toward now while nothing else changes, and when its result arrives the
// page turns it `completed` without a reload. Run by tests/fast/dashboard/running.rs, which
// reads the JSON report this prints on its last line and asserts on it.
//
// Environment: TASKER_URL (the orchestrator, tokens off), TASK_ID (a task whose step STEP runs
// for several seconds), WORKER (the name of the worker running it), SCREENSHOTS, CHROMIUM.
import { openPage, tour } from './browser.mjs';

const { TASKER_URL: url, TASK_ID: taskId, STEP: step, WORKER: worker } = process.env;
const opened = await openPage({ consoleErrors: true });
const { page, report, shot, text } = opened;
const check = (ok, what) => { if (!ok) throw new Error(`expected: ${what}`); };

await tour(opened, async () => {
  const opened = Date.now();
  await page.goto(`${url}/ui/#/tasks/${taskId}`);
  const card = page.locator(`#steps .step[data-step="${step}"][data-state="running"]`);
  await card.waitFor({ timeout: 10_000 });
  report.runningAfterMs = Date.now() - opened;
  report.cardText = await text(card.locator('.step-running'));
  check(report.cardText.startsWith(`running on ${worker} since `), `the card names ${worker}`);
  report.nodeState = await page.getAttribute(`#dag g.node[data-step="${step}"]`, 'data-state');
  const bar = `.wf-row[data-step="${step}"] .bar.handler.open`;
  await page.waitForSelector(bar);
  report.barTitle = await page.getAttribute(bar, 'title');
  // The bar grows with no new event: drawn again, longer, within a few seconds.
  const first = Number(await page.getAttribute(bar, 'data-us'));
  await page.waitForFunction(([sel, was]) => {
    const el = document.querySelector(sel);
    return el && Number(el.dataset.us) > was + 500_000;
  }, [bar, first], { timeout: 5_000 });
  report.barGrew = true;
  await shot('r1-running');
  // Its result arrives: completed, live, and no open bar left.
  await page.locator(`#steps .step[data-step="${step}"][data-state="completed"]`).waitFor({ timeout: 30_000 });
  report.openBarsAfter = await page.locator(`.wf-row[data-step="${step}"] .bar.open`).count();
  await shot('r2-completed');
});
