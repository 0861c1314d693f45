// A task's streams on its page (#/tasks/{id}) in Debian's Chromium driven by playwright-core:
// nothing before a step streams; once the page sends the signal its streaming step waits for,
// the chunks come live, each attempt in a box (the retry marked "retry"), each box ended in
// turn. The page asks for the stream with its child tasks' chunks (children=true: its pages and
// its live follow); the task has none, so every box is the task's own, with no child label. Run
// by tests/fast/dashboard/streams.rs, which reads the JSON report this prints on its
// last line and asserts on it.
//
// Environment: TASKER_URL (the orchestrator, tokens off), TASK (a task that waits for the
// signal `go`, then streams the text chunks t0 … t9, failing its first attempt), SCREENSHOTS,
// CHROMIUM.
import { openPage, tour } from './browser.mjs';

const { TASKER_URL: url, TASK: task } = process.env;
const opened = await openPage({ consoleErrors: true });
const { page, report, shot } = opened;

const boxes = () => page.$$eval('#streams .stream-attempt', (els) => els.map((el) => ({
  taskId: el.dataset.taskId,
  child: !!el.querySelector('.stream-child'),
  step: el.dataset.step,
  attempt: el.dataset.attempt,
  retry: !!el.querySelector('.stream-retry'),
  state: el.querySelector('.stream-state').textContent,
  topics: [...el.querySelectorAll('.stream-topic')].map((t) => ({
    topic: t.dataset.topic,
    value: t.querySelector('.stream-text, .stream-data').textContent,
  })),
})));

// The stream's requests (its JSON pages and its event stream), as the page sent them.
const streamRequests = [];
page.on('request', (r) => {
  const u = new URL(r.url());
  if (u.pathname === `/v1/tasks/${task}/stream`) streamRequests.push(u.search);
});

await tour(opened, async () => {
  await page.goto(`${url}/ui/#/tasks/${task}`);
  // The task waits for its signal: nothing has streamed.
  await page.waitForSelector('#signal-section:not([hidden])');
  report.beforeSignal = await page.evaluate(() => ({
    hidden: document.getElementById('streams').closest('section').hidden,
    boxes: document.querySelectorAll('#streams .stream-attempt').length,
  }));
  await shot('st1-waiting');
  await page.fill('#signal-name', 'go');
  await page.click('#signal-submit');
  // Both attempts ended: each box has its whole text.
  await page.waitForFunction(() => [...document.querySelectorAll('#streams .stream-state')]
    .filter((s) => s.textContent === 'ended').length === 2, null, { timeout: 30000 });
  report.ended = await boxes();
  await shot('st2-streamed');
  report.streamRequests = streamRequests;
  const without = streamRequests.filter((q) => new URLSearchParams(q).get('children') !== 'true');
  if (!streamRequests.length || without.length) throw new Error(`stream read without children=true: ${JSON.stringify(streamRequests)}`);
  const foreign = report.ended.filter((b) => b.taskId !== task || b.child);
  if (foreign.length) throw new Error(`a box not of the task's own: ${JSON.stringify(foreign)}`);
});
