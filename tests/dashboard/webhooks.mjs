// The webhooks page (#/webhooks) in Debian's Chromium driven by playwright-core: the webhooks
// listed by name, each with its URL, format, event name, pointers, window and receipts, and the
// link from a webhook to its events. Run by tests/fast/dashboard/webhooks.rs, which reads the
// JSON report this prints on its last line and asserts on it.
//
// Environment: TASKER_URL (the orchestrator, tokens off), SCREENSHOTS, CHROMIUM.
import { openPage, tour } from './browser.mjs';

const { TASKER_URL: url } = process.env;
const opened = await openPage({ consoleErrors: true });
const { page, report, shot, text } = opened;

await tour(opened, async () => {
  await page.goto(`${url}/ui/#/webhooks`);
  await page.waitForSelector('#webhooks tr[data-webhook="orders"]');
  report.rows = await page.$$eval('#webhooks tbody tr[data-webhook]', (trs) => trs.map((tr) => ({
    name: tr.dataset.webhook,
    url: tr.querySelector('.webhook-url').textContent,
    format: tr.querySelector('.webhook-format').textContent,
    event: tr.querySelector('.webhook-event').textContent,
    eventsHref: tr.querySelector('.webhook-event a').getAttribute('href'),
    key: tr.querySelector('.webhook-key').textContent,
    window: tr.querySelector('.webhook-window').textContent,
    received: tr.querySelector('.webhook-received').textContent,
    last: tr.querySelector('.webhook-last').textContent,
  })));
  report.navCurrent = await page.getAttribute('header nav a[href="#/webhooks"]', 'aria-current');
  report.status = await text(page.locator('#webhooks-status'));
  report.page = await text(page.locator('main'));
  await shot('wh1-webhooks');
  await page.click('#webhooks tr[data-webhook="orders"] .webhook-event a');
  await page.waitForSelector('#events tr[data-event-id]');
  report.linkedEvents = await page.$$eval('#events tr[data-event-id]', (trs) => trs.length);
  await shot('wh2-its-events');
});
