// A task's streams on its page (#/tasks/{id}) in Debian's Chromium driven by playwright-core:
// nothing before a step streams; once the page sends the signal its streaming step waits for,
// the chunks come live, each attempt in a box (the retry marked "retry"), each box ended in
// turn. Run by tests/fast/dashboard/streams.rs, which reads the JSON report this prints on its
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
  step: el.dataset.step,
  attempt: el.dataset.attempt,
  retry: !!el.querySelector('.stream-retry'),
  state: el.querySelector('.stream-state').textContent,
  topics: [...el.querySelectorAll('.stream-topic')].map((t) => ({
    topic: t.dataset.topic,
    value: t.querySelector('.stream-text, .stream-data').textContent,
  })),
})));

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
});
