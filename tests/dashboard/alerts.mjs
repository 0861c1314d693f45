// The alerts page (#/alerts) in Debian's Chromium driven by playwright-core: the alert rules
// listed firing first, each with what it watches, its state, what it counted at its last check,
// its sink and its notices. Run by tests/fast/dashboard/alerts.rs, which reads the JSON report
// this prints on its last line and asserts on it.
//
// Environment: TASKER_URL (the orchestrator, tokens off), FIRING (the name of a firing rule),
// SCREENSHOTS, CHROMIUM.
import { openPage, tour } from './browser.mjs';

const { TASKER_URL: url, FIRING: firing } = process.env;
const opened = await openPage({ consoleErrors: true });
const { page, report, shot, text } = opened;

await tour(opened, async () => {
  await page.goto(`${url}/ui/#/alerts`);
  await page.waitForSelector(`#alerts tr[data-alert="${firing}"][data-state="firing"]`);
  report.rows = await page.$$eval('#alerts tbody tr[data-alert]', (trs) => trs.map((tr) => ({
    name: tr.dataset.alert,
    state: tr.querySelector('.alert-state').textContent,
    when: tr.querySelector('.alert-when').textContent,
    observed: tr.querySelector('.alert-observed').textContent,
    sink: tr.querySelector('.alert-sink').textContent,
    notices: tr.querySelector('.alert-notices').textContent,
  })));
  report.navCurrent = await page.getAttribute('header nav a[href="#/alerts"]', 'aria-current');
  report.status = await text(page.locator('#alerts-status'));
  await shot('al1-alerts');
});
