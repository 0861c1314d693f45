// Ten task pages open at once in one browser, all live: Debian's Chromium (playwright-core)
// opens ten tabs, each on a task whose step waits for a signal; the tabs share one live
// connection (one of them leads and streams every task: the browser's six connections per host
// would otherwise leave the seventh tab waiting); the signals are sent, and every tab shows its
// task complete without a reload. Run by tests/fast/dashboard/live.rs, which reads the JSON
// report this prints on its last line.
//
// Environment: TASKER_URL (the orchestrator, tokens off), TASK_IDS (comma-separated tasks whose
// step waits for the signal SIGNAL), SCREENSHOTS, CHROMIUM.
import { openPage, tour } from './browser.mjs';

const { TASKER_URL: url, TASK_IDS: ids, SIGNAL: signalName } = process.env;
const opened = await openPage({ consoleErrors: true });
const { browser, report, shot } = opened;

await tour(opened, async () => {
  const tasks = ids.split(',');
  // One browser context: the tabs of one browser window, sharing its connections to the host.
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const pages = [];
  while (pages.length < tasks.length) pages.push(await context.newPage());
  // Which tabs open a stream of their own (as the request starts, long before it ends).
  const streaming = new Set();
  for (const [i, p] of pages.entries()) {
    p.on('pageerror', (e) => report.pageErrors.push(String(e)));
    p.on('console', (m) => {
      console.error(`[tab ${i} ${m.type()}] ${m.text()}`);
      if (m.type() === 'error') report.consoleErrors.push(m.text());
    });
    p.on('request', (r) => {
      if (!/\/v1\/(events|tasks\/[^/]+\/events)/.test(r.url())) return;
      streaming.add(i);
      console.error(`[tab ${i}] stream ${r.url()}`);
    });
    p.on('requestfailed', (r) => console.error(`[tab ${i}] failed ${r.url()} ${r.failure() && r.failure().errorText}`));
    p.on('response', (r) => { if (r.status() >= 400) console.error(`[tab ${i}] ${r.status()} ${r.url()}`); });
    await p.goto(`${url}/ui/#/tasks/${tasks[i]}`);
    await p.waitForSelector('#task-state[data-state="running"]');
  }
  // Every tab live before the signals go.
  for (const p of pages) await p.waitForSelector('#live[data-live="on"]', { timeout: 15_000 });
  for (const id of tasks) {
    const resp = await fetch(`${url}/v1/tasks/${id}/signals/${signalName}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"payload": {"ok": true}}',
    });
    if (!resp.ok) throw new Error(`signal ${id}: ${resp.status} ${await resp.text()}`);
  }
  report.complete = 0;
  for (const p of pages) {
    await p.waitForSelector('#task-state[data-state="complete"]', { timeout: 20_000 });
    report.complete += 1;
  }
  // How many tabs opened a stream of their own: the leader only.
  report.tabsStreaming = streaming.size;
  await pages[pages.length - 1].screenshot({ path: `${process.env.SCREENSHOTS}/t1-tabs.png` });
});
