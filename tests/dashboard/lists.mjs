// Long lists in the dashboard, in Debian's Chromium driven by playwright-core: the templates page
// shows 50 rows a page with a pager ("1–50 of N"), Next shows the next 50 and puts page=2 in the
// address, a search by namespace/name narrows the rows and survives a reload; the schedules page
// fits a 1,280 px window (no horizontal scroll) and is paged; the task list's lookup box opens a
// task from the start of its id and from its idempotency key; a saved view of the list is a
// link that brings its address back, kept across a reload. Prints a JSON report as its last line.
//
// Environment: TASKER_URL (the orchestrator, tokens off), EXPECT_TEMPLATES (the number of
// registered template versions, over 60), EXPECT_SCHEDULES (the number of schedules, over 50),
// SEARCH (a text found in the namespace/name of exactly SEARCH_COUNT template versions), TASK_ID
// and IDEMPOTENCY_KEY (a task started with that key), SCREENSHOTS, CHROMIUM.
import { openPage, tour } from './browser.mjs';

const {
  TASKER_URL: url, SEARCH: search, TASK_ID: taskId, IDEMPOTENCY_KEY: idemKey,
} = process.env;
const expectTemplates = Number(process.env.EXPECT_TEMPLATES);
const expectSchedules = Number(process.env.EXPECT_SCHEDULES);
const searchCount = Number(process.env.SEARCH_COUNT);
const opened = await openPage({ consoleErrors: true });
const { page, report, shot, text } = opened;
const check = (ok, what) => { if (!ok) throw new Error(`expected: ${what}`); };
const hash = () => decodeURIComponent(new URL(page.url()).hash);
const hashQuery = () => new URLSearchParams(new URL(page.url()).hash.split('?').slice(1).join('?'));
const PAGE = 50;

// The templates page: 50 rows, the pager, page 2, a search that survives a reload.
async function templates() {
  const t = {};
  report.templates = t;
  await page.goto(`${url}/ui/#/templates`);
  await page.waitForSelector('#templates tr[data-template]');
  t.rows = await page.locator('#templates tbody tr[data-template]').count();
  t.pager = await text(page.locator('#templates-pager .pager-range'));
  check(t.rows === PAGE, `${PAGE} template rows, not ${t.rows}`);
  check(t.pager === `1–${PAGE} of ${expectTemplates}`, `pager "1–${PAGE} of ${expectTemplates}", not "${t.pager}"`);
  t.previousDisabled = await page.isDisabled('#templates-pager .prev-page');
  await shot('lists-1-templates');

  await page.click('#templates-pager .next-page');
  await page.waitForSelector('#templates-pager[data-page="2"]');
  t.page2Rows = await page.locator('#templates tbody tr[data-template]').count();
  t.page2Pager = await text(page.locator('#templates-pager .pager-range'));
  t.page2Hash = hash();
  const page2Last = Math.min(2 * PAGE, expectTemplates);
  check(t.page2Rows === page2Last - PAGE, `${page2Last - PAGE} rows on page 2, not ${t.page2Rows}`);
  check(t.page2Pager === `${PAGE + 1}–${page2Last} of ${expectTemplates}`, `page 2's pager, not "${t.page2Pager}"`);
  check(hashQuery().get('page') === '2', `page=2 in the address, not ${t.page2Hash}`);

  await page.fill('#templates-search', search);
  await page.waitForSelector(`#templates[data-matches="${searchCount}"]`);
  t.searchRows = await page.locator('#templates tbody tr[data-template]').count();
  t.searchPager = await text(page.locator('#templates-pager .pager-range'));
  t.searchHash = hash();
  check(t.searchRows === Math.min(searchCount, PAGE), `${searchCount} rows for "${search}", not ${t.searchRows}`);
  check(hashQuery().get('q') === search, `q=${search} in the address, not ${t.searchHash}`);
  check(!hashQuery().has('page'), `a new search starts at page 1, not ${t.searchHash}`);
  await shot('lists-2-templates-search');

  await page.reload();
  await page.waitForSelector(`#templates[data-matches="${searchCount}"]`);
  t.reloadSearch = await page.inputValue('#templates-search');
  t.reloadRows = await page.locator('#templates tbody tr[data-template]').count();
  check(t.reloadSearch === search, `the search "${search}" after a reload, not "${t.reloadSearch}"`);
  check(t.reloadRows === t.searchRows, `${t.searchRows} rows after a reload, not ${t.reloadRows}`);
}

// The schedules page in a 1,280 × 800 window: no horizontal scroll, 50 rows and a pager.
async function schedules() {
  const s = {};
  report.schedules = s;
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${url}/ui/#/schedules`);
  await page.waitForSelector('#schedules tr[data-schedule]');
  await page.waitForSelector('#schedules-pager');
  s.rows = await page.locator('#schedules tbody tr[data-schedule]').count();
  s.pager = await text(page.locator('#schedules-pager .pager-range'));
  Object.assign(s, await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    clientWidth: document.documentElement.clientWidth,
    pageHeight: document.documentElement.scrollHeight,
    tableWidth: Math.round(document.getElementById('schedules').getBoundingClientRect().width),
  })));
  // A clipped cell holds its whole text in its title.
  s.cronTitle = await page.getAttribute('#schedules tr[data-schedule] td.cron .clip', 'title');
  s.contextTitled = await page.locator('#schedules tr[data-schedule] td.context .clip[title]').count();
  await shot('lists-3-schedules');
  check(s.rows === PAGE, `${PAGE} schedule rows, not ${s.rows}`);
  check(s.pager === `1–${PAGE} of ${expectSchedules}`, `pager "1–${PAGE} of ${expectSchedules}", not "${s.pager}"`);
  check(s.scrollWidth <= 1280, `no horizontal scroll at 1280 px: scrollWidth ${s.scrollWidth}`);
  check(!!s.cronTitle, 'a title on the clipped cron');
  await page.setViewportSize({ width: 1400, height: 1000 });
}

// The lookup box: `value` typed and submitted lands on the task's page.
async function lookup(value) {
  await page.goto(`${url}/ui/#/tasks`);
  await page.waitForSelector('#task-lookup');
  await page.fill('#task-lookup', value);
  await page.press('#task-lookup', 'Enter');
  await page.waitForFunction((id) => location.hash === `#/tasks/${id}`, taskId, { timeout: 10_000 })
    .catch(async (e) => {
      const found = await page.locator('#task-lookup-result').textContent().catch(() => '');
      throw new Error(`lookup of "${value}" did not open #/tasks/${taskId} (${hash()}; ${found || e.message})`);
    });
  return hash();
}

// A saved view: saved on #/tasks?state=error, a link that brings that address back from
// elsewhere, still there after a reload, removed with its ×.
async function savedViews() {
  const v = {};
  report.views = v;
  const errors = '#saved-views .saved-view-item[data-view="errors"] a.saved-view';
  // Back to the saved view from another filter (set by the state select) and another page.
  const fromElsewhere = async () => {
    await page.selectOption('#filter-state', 'complete');
    await page.waitForFunction(() => location.hash === '#/tasks?state=complete');
    await page.click('header nav a[href="#/templates"]');
    await page.waitForSelector('#templates');
    await page.click('header nav a[href="#/tasks"]');
    await page.waitForSelector(errors);
    const before = hash();
    await page.click(errors);
    await page.waitForFunction(() => location.hash === '#/tasks?state=error');
    await page.waitForSelector('#tasks');
    return { before, after: hash(), state: await page.inputValue('#filter-state') };
  };
  await page.goto(`${url}/ui/#/tasks?state=error`);
  await page.evaluate(() => localStorage.removeItem('tasker.views'));
  await page.reload();
  await page.waitForSelector('#save-view');
  await page.click('#save-view');
  await page.fill('#save-view-name', 'errors');
  await page.click('#save-view-ok');
  await page.waitForSelector(errors);
  v.href = await page.getAttribute(errors, 'href');
  v.stored = await page.evaluate(() => JSON.parse(localStorage.getItem('tasker.views')));
  check(v.href === '#/tasks?state=error', `the view's link to #/tasks?state=error, not ${v.href}`);
  await shot('lists-4-saved-view');
  v.opened = await fromElsewhere();
  check(v.opened.after === '#/tasks?state=error' && v.opened.state === 'error', `the saved view back: ${JSON.stringify(v.opened)}`);

  await page.reload();
  await page.waitForSelector(errors);
  v.afterReload = await fromElsewhere();
  check(v.afterReload.after === '#/tasks?state=error', `the saved view after a reload: ${JSON.stringify(v.afterReload)}`);

  await page.click('#saved-views .saved-view-item[data-view="errors"] .saved-view-remove');
  v.linksAfterRemove = await page.locator('#saved-views a.saved-view').count();
  v.storedAfterRemove = await page.evaluate(() => JSON.parse(localStorage.getItem('tasker.views')));
  check(v.linksAfterRemove === 0, `no saved view after ×, not ${v.linksAfterRemove}`);
}

await tour(opened, async () => {
  check(expectTemplates > 60, `EXPECT_TEMPLATES over 60 (${expectTemplates})`);
  check(expectSchedules > 50, `EXPECT_SCHEDULES over 50 (${expectSchedules})`);
  await templates();
  await schedules();
  report.lookup = { byPrefix: await lookup(taskId.slice(0, 8)) };
  await shot('lists-5-lookup');
  report.lookup.byKey = await lookup(idemKey);
  await savedViews();
});
