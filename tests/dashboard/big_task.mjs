// A task of a few hundred steps in the dashboard, in Debian's Chromium driven by playwright-core:
// its step cards come in graph order (a step after its parents, a batch's instances by number),
// the batch's instances sit folded under one header that counts them by state (unfolded and
// folded again by its button), "Failed only" shows exactly the failed steps and says so in the
// address (a reload keeps it), and the page follows the system's dark or light scheme. The report
// says how tall the page is with the batch folded (a 302-step task's cards were 43,778 px). Run by
// the test that starts such a task, which reads the JSON report this prints on its last line and
// asserts on it.
//
// Environment: TASKER_URL (the orchestrator, tokens off), TASK_ID (a finished task with a batch of
// BATCH_COUNT instances, a few of them failed), FAILED (the names of its failed steps, comma-
// separated: "sum#3,sum#17"), BATCH_COUNT (how many instances its batch has), ROOT (optional: the
// step its cards must start with), SCREENSHOTS (a folder), CHROMIUM (the browser; default
// /usr/bin/chromium).
import { openPage, tour } from './browser.mjs';

const { TASKER_URL: url, TASK_ID: taskId, FAILED: failedList = '', BATCH_COUNT: batchCountText, ROOT: root } = process.env;
const expectedFailed = failedList.split(',').map((s) => s.trim()).filter(Boolean).sort();
const batchCount = Number(batchCountText);
const opened = await openPage({ consoleErrors: true });
const { page, report, shot, text } = opened;
const check = (ok, what) => { if (!ok) throw new Error(`expected: ${what}`); };
const sameList = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// A batch instance's name, "<base>#<N>": {base, index}; null for another name.
const instance = (name) => {
  const m = /^(.+)#(\d+)$/.exec(name);
  return m ? { base: m[1], index: Number(m[2]) } : null;
};

// The step list as the page shows it, in document order: a card ({step}) or a batch's header
// ({group}).
const listing = () => page.$$eval('#steps .step, #steps .batch-group', (els) => els.map((e) =>
  (e.classList.contains('batch-group') ? { group: e.dataset.group } : { step: e.dataset.step })));
// The graph the page draws: its template steps and its edges [parent, child].
const graph = async () => ({
  nodes: await page.$$eval('#dag g.node', (ns) => ns.map((n) => n.dataset.step)),
  edges: await page.$$eval('#dag path.edge', (es) => es.map((e) => [e.dataset.from, e.dataset.to])),
});
// The steps with a card, sorted by name.
const cards = async () => (await page.$$eval('#steps .step', (els) => els.map((e) => e.dataset.step))).sort();

// Checks `entries` (listing()) are in graph order: every template step (a card, or a batch's
// header and instances) after the last of its parents, a batch's instances by number, ROOT first.
function checkGraphOrder(entries, { nodes, edges }) {
  const templateStep = (e) => {
    if (e.group) return e.group;
    const inst = nodes.includes(e.step) ? null : instance(e.step);
    return inst ? inst.base : e.step;
  };
  const first = new Map();
  const last = new Map();
  entries.forEach((e, i) => {
    const name = templateStep(e);
    if (!first.has(name)) first.set(name, i);
    last.set(name, i);
  });
  for (const [parent, child] of edges) {
    if (!first.has(parent) || !first.has(child)) continue;
    check(last.get(parent) < first.get(child), `${child} listed after its parent ${parent}`);
  }
  const lastIndex = new Map();
  for (const e of entries) {
    const inst = e.step && !nodes.includes(e.step) ? instance(e.step) : null;
    if (!inst) continue;
    const before = lastIndex.get(inst.base);
    check(before == null || before < inst.index, `${e.step} listed after ${inst.base}#${before}`);
    lastIndex.set(inst.base, inst.index);
  }
  if (root) check(entries.length && entries[0].step === root, `the first card is the root step ${root}`);
}

// The relative luminance (0 black, 1 white) of a CSS colour "rgb(r, g, b)".
function luminance(css) {
  const [r, g, b] = css.match(/[\d.]+/g).slice(0, 3).map((v) => {
    const c = Number(v) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
// The body's background and text colours, and their luminance.
const scheme = () => page.evaluate(() => {
  const style = getComputedStyle(document.body);
  return { background: style.backgroundColor, color: style.color };
}).then((c) => Object.assign(c, { backgroundLuminance: luminance(c.background), colorLuminance: luminance(c.color) }));

// The task's page drawn from its template (edges: the graph, by which the cards are ordered) with
// every failure counted.
async function openTask() {
  await page.goto(`${url}/ui/#/tasks/${taskId}`);
  await page.waitForSelector('#dag path.edge', { state: 'attached' });
  await page.waitForSelector(`#failed-count[data-count="${expectedFailed.length}"]`, { state: 'attached' });
}

await tour(opened, async () => {
  check(batchCount > 0, 'BATCH_COUNT, the size of the batch');
  await page.emulateMedia({ colorScheme: 'light' });
  await openTask();
  const g = await graph();
  report.edges = g.edges.length;

  // In graph order, the batch folded under its header: no card of its instances.
  const group = page.locator(`#steps .batch-group[data-count="${batchCount}"]`);
  await group.waitFor();
  check(await group.count() === 1, `one batch header counting ${batchCount} steps`);
  const base = await group.getAttribute('data-group');
  const batchCards = page.locator(`#steps .batch[data-group="${base}"] .step`);
  const toggle = group.locator('button.batch-toggle');
  const folded = await listing();
  checkGraphOrder(folded, g);
  report.folded = {
    group: base,
    count: Number(await group.getAttribute('data-count')),
    open: await group.getAttribute('data-open'),
    expanded: await toggle.getAttribute('aria-expanded'),
    cards: await batchCards.count(),
    header: await text(group),
    states: Object.fromEntries(await group.locator('.badge[data-state]').evaluateAll((bs) =>
      bs.map((b) => [b.dataset.state, Number(b.dataset.n)]))),
    listing: folded.map((e) => e.step || `[${e.group}]`),
  };
  check(report.folded.open === 'false' && report.folded.expanded === 'false', `the batch ${base} folded`);
  check(report.folded.cards === 0, `no card of ${base}'s instances while folded`);
  check(report.folded.header.includes(`${batchCount} steps`), `the header says "${batchCount} steps"`);
  const counted = Object.values(report.folded.states).reduce((a, b) => a + b, 0);
  check(counted === batchCount, `the header's state counts add up to ${batchCount} (${counted})`);
  report.pageHeight = await page.evaluate(() => document.documentElement.scrollHeight);
  await shot('b1-folded');

  // Unfolded: every instance, by number, still in graph order; folded again.
  await toggle.click();
  await page.waitForFunction(([sel, n]) => document.querySelectorAll(sel).length === n,
    [`#steps .batch[data-group="${base}"] .step`, batchCount]);
  const unfolded = await listing();
  checkGraphOrder(unfolded, g);
  report.unfolded = {
    cards: await batchCards.count(),
    pageHeight: await page.evaluate(() => document.documentElement.scrollHeight),
  };
  await toggle.click();
  await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 0, `#steps .batch[data-group="${base}"] .step`);

  // Failed only: exactly the failed steps, said in the address.
  const failedOnly = page.locator('#failed-only');
  report.failedCount = await text(page.locator('#failed-count'));
  check(!(await failedOnly.isDisabled()), 'the "Failed only" toggle enabled (some steps failed)');
  check(report.failedCount === `${expectedFailed.length} failed`, `"${expectedFailed.length} failed" beside the toggle`);
  await failedOnly.check();
  await page.waitForFunction((n) => document.querySelectorAll('#steps .step').length === n, expectedFailed.length);
  report.failedShown = await cards();
  report.failedAddress = decodeURIComponent(new URL(page.url()).hash);
  check(sameList(report.failedShown, expectedFailed), `only the failed steps ${expectedFailed.join(', ')} shown`);
  check(report.failedAddress.includes('failed=1'), 'failed=1 in the address');
  await shot('b2-failed-only');

  // A reload keeps the filter.
  await page.reload();
  await page.waitForSelector('#dag path.edge', { state: 'attached' });
  await page.waitForSelector('#failed-only:checked');
  await page.waitForFunction((n) => document.querySelectorAll('#steps .step').length === n, expectedFailed.length);
  report.reloadedShown = await cards();
  check(sameList(report.reloadedShown, expectedFailed), 'the same failed steps after a reload');

  // Dark, then light, as the system prefers.
  await page.emulateMedia({ colorScheme: 'dark' });
  report.dark = await scheme();
  await shot('b3-dark');
  await page.emulateMedia({ colorScheme: 'light' });
  report.light = await scheme();
  check(report.dark.backgroundLuminance < 0.3 && report.dark.colorLuminance > 0.5,
    `a dark page with light text (${JSON.stringify(report.dark)})`);
  check(report.light.backgroundLuminance > 0.7 && report.light.colorLuminance < 0.2,
    `a light page with dark text (${JSON.stringify(report.light)})`);

  // The filter off again: out of the address, the batch folded as before.
  await failedOnly.uncheck();
  await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 0, `#steps .batch[data-group="${base}"] .step`);
  report.unfilteredAddress = decodeURIComponent(new URL(page.url()).hash);
  check(!report.unfilteredAddress.includes('failed='), 'no failed= in the address once the filter is off');
  report.timeline = await page.$eval('#waterfall', (w) => ({ fromUs: Number(w.dataset.fromUs), toUs: Number(w.dataset.toUs) }));
  report.fitActivity = await page.locator('.wf-controls button.fit-activity').count();
});
