// The events page (#/events) and a template's triggers, in Debian's Chromium driven by
// playwright-core: the list shows the events newest first with what each started (a link to the
// task started, a refusal's code, or "none"), pages back with "Older", is filtered by name with
// the filter kept in the address (across a reload); a click on an event opens its page with its
// data and what it started, each refusal with its message; the template's page shows its trigger
// under "Started by events", whose link opens the list filtered on that event. Run by
// tests/fast/dashboard/events.rs, which reads the JSON report this prints on its last line and
// asserts on it. (Kept next to its test; it takes the shared helpers of tests/dashboard/.)
//
// Environment: TASKER_URL (the orchestrator, tokens off), NAMESPACE, EVENT_NAME (the name of the
// two events), MATCHED_ID (the event that started a task), UNMATCHED_ID (the one that started
// nothing), TEMPLATE ("namespace/name" of the template with the trigger), SCREENSHOTS, CHROMIUM.
import { openPage, tour } from './browser.mjs';

const {
  TASKER_URL: url, EVENT_NAME: eventName, MATCHED_ID: matchedId, UNMATCHED_ID: unmatchedId,
  TEMPLATE: template,
} = process.env;
const opened = await openPage({ consoleErrors: true });
const { page, report, shot, text } = opened;
const hash = () => decodeURIComponent(new URL(page.url()).hash);

// The ids of the rows on screen, in order.
const ids = () => page.$$eval('#events tbody tr[data-event-id]', (trs) => trs.map((tr) => tr.dataset.eventId));
// One event's row, as the report shows it.
async function row(id) {
  const tr = page.locator(`#events tr[data-event-id="${id}"]`);
  await tr.waitFor();
  const started = tr.locator('td.event-started');
  return {
    namespace: await text(tr.locator('td.event-namespace')),
    name: await text(tr.locator('td.event-name')),
    key: await text(tr.locator('td.event-key')),
    started: await text(started),
    taskHrefs: await started.locator('a.event-task').evaluateAll((as) => as.map((a) => a.getAttribute('href'))),
    refused: await started.locator('.event-refused').evaluateAll((els) => els.map((e) => e.dataset.code)),
    none: await started.locator('.event-none').count(),
  };
}
// Waits until the list shows rows, each of the event name `name`; then returns their ids.
async function rowsNamed(name) {
  await page.waitForFunction((n) => {
    const cells = [...document.querySelectorAll('#events tbody tr[data-event-id] td.event-name')];
    return cells.length > 0 && cells.every((td) => td.textContent === n);
  }, name);
  return ids();
}

await tour(opened, async () => {
  // The list: newest first, the two events among the first page's, and "Older" (more than 50).
  await page.goto(`${url}/ui/#/events`);
  await page.waitForSelector(`#events tr[data-event-id="${unmatchedId}"]`);
  report.firstPage = await ids();
  report.matched = await row(matchedId);
  report.unmatched = await row(unmatchedId);
  report.navCurrent = await page.getAttribute('header nav a[href="#/events"]', 'aria-current');
  report.olderLabel = await text(page.locator('#next-page'));
  await shot('ev1-events');

  // Older: the rest, then back to the newest.
  await page.click('#next-page');
  await page.waitForSelector('#first-page');
  report.olderPage = await ids();
  report.newestLabel = await text(page.locator('#first-page'));
  await page.click('#first-page');
  await page.waitForSelector('#first-page', { state: 'detached' });

  // Filtered on the name: only the two, and the filter in the address, kept across a reload.
  await page.fill('#events-name', eventName);
  await page.click('.filters button[type="submit"]');
  report.filtered = await rowsNamed(eventName);
  report.filteredHash = hash();
  await page.reload();
  report.reloaded = await rowsNamed(eventName);
  report.reloadedInput = await page.inputValue('#events-name');

  // A click on the matched event's row opens it: its data and what it started.
  await page.locator(`#events tr[data-event-id="${matchedId}"] td.event-key`).click();
  await page.waitForSelector('#event-data');
  report.detailHash = hash();
  report.detailData = JSON.parse(await page.textContent('#event-data'));
  report.detailStarted = await page.$$eval('#event-started tbody tr[data-template]', (trs) => trs.map((tr) => ({
    template: tr.dataset.template,
    taskHref: tr.querySelector('a.event-task')?.getAttribute('href') ?? null,
    code: tr.querySelector('td.refusal .code')?.textContent ?? null,
    message: tr.querySelector('td.refusal .message')?.textContent ?? null,
    outcome: tr.querySelector('td.refusal .event-outcome')?.textContent ?? null,
  })));
  await shot('ev2-event');

  // The unmatched one: nothing started.
  await page.goto(`${url}/ui/#/events/${unmatchedId}`);
  await page.waitForSelector('#event-data');
  report.unmatchedStarted = await text(page.locator('#event-started tbody'));

  // The template's page: its trigger, and its link to that event's list.
  await page.goto(`${url}/ui/#/templates/${template}`);
  const trigger = page.locator(`#template-triggers li[data-event="${eventName}"]`);
  await trigger.waitFor();
  report.trigger = {
    heading: await text(page.locator('#template-triggers h3')),
    event: await text(trigger.locator('.trigger-event')),
    conditions: await trigger.locator('.trigger-condition').evaluateAll((els) => els.map((e) => e.textContent)),
    context: await text(trigger.locator('.trigger-mapping')),
    href: await trigger.locator('a.trigger-events').getAttribute('href'),
    control: await text(trigger.locator('.trigger-control')),
  };
  await shot('ev3-template');
  await trigger.locator('a.trigger-events').click();
  report.fromTemplate = await rowsNamed(eventName);
  report.fromTemplateHash = hash();
});
