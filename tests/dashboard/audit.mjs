// The audit log page (#/audit) in Debian's Chromium driven by playwright-core: with an admin token
// of every namespace (typed in when the page asks for one) it lists every request that asked to
// change something, a refused one marked so, with the token, the request, the status, where it
// came from and what it acted on (a task as a link); its filters narrow it to a namespace and to
// a method; the Retention page says how long the rows are kept; then, with an admin token scoped
// to one namespace, it lists only that namespace's rows. Run by tests/fast/dashboard.rs, which
// reads the JSON report this prints on its last line and asserts on it (and on what the API then
// says).
//
// Environment: TASKER_URL (the orchestrator), ROOT_TOKEN (an admin token of every namespace),
// SCOPED_TOKEN (an admin token of namespace SCOPED_NAMESPACE), OTHER_NAMESPACE (another namespace
// with rows), SCREENSHOTS (a folder), CHROMIUM (the browser; default /usr/bin/chromium).
import { openPage, tour } from './browser.mjs';

const {
  TASKER_URL: url, ROOT_TOKEN: root, SCOPED_TOKEN: scoped, SCOPED_NAMESPACE: scopedNs, OTHER_NAMESPACE: otherNs,
} = process.env;
// Console errors other than the browser's own line for the first, refused load (the page asks
// for a token after a 401).
const opened = await openPage({
  consoleErrors: true, ignored: (t) => t.startsWith('Failed to load resource'),
});
const { browser, page, report, shot, text } = opened;

// The rows on screen, as the report shows them.
const rows = () => page.$$eval('table#audit tbody tr[data-audit-id]', (trs) => trs.map((tr) => ({
  id: Number(tr.dataset.auditId),
  status: Number(tr.dataset.status),
  route: tr.dataset.route,
  refusedMark: tr.querySelector('td.audit-status').classList.contains('refused'),
  token: tr.querySelector('td.audit-token').textContent.trim(),
  request: tr.querySelector('td.audit-request').textContent.trim(),
  namespaces: tr.querySelector('td.audit-targets .audit-ns')?.textContent ?? '',
  taskHref: tr.querySelector('td.audit-targets a')?.getAttribute('href') ?? null,
  targets: tr.querySelector('td.audit-targets').textContent.replace(/\s+/g, ' ').trim(),
})));
// Waits until the table shows rows, each naming namespace `ns` and of method `method` (either
// left out: any), as once a filter is applied; then returns them.
const rowsWhen = async (want) => {
  await page.waitForFunction((w) => {
    const trs = [...document.querySelectorAll('table#audit tbody tr')];
    return trs.length > 0 && trs.every((tr) =>
      (w.ns == null || tr.querySelector('.audit-ns')?.textContent === w.ns)
      && (w.method == null || (tr.querySelector('.audit-request')?.textContent ?? '').startsWith(`${w.method} `)));
  }, want);
  return rows();
};
// Types `token` into the page's token form (shown when the API answers 401).
const useToken = async (token) => {
  await page.waitForSelector('#token-form:not([hidden])');
  await page.fill('#token-input', token);
  await page.click('#token-form button[type="submit"]');
};

await tour(opened, async () => {
  await page.goto(`${url}/ui/#/audit`);
  await useToken(root);
  await page.waitForSelector('table#audit tbody tr[data-audit-id]');
  report.all = await rows();
  report.navCurrent = await page.getAttribute('header nav a[href="#/audit"]', 'aria-current');
  await shot('a1-audit');

  // One namespace: every row names it.
  await page.fill('#audit-namespace', otherNs);
  await page.click('.filters button[type="submit"]');
  report.filtered = await rowsWhen({ ns: otherNs });
  await shot('a2-namespace');
  // And one method: none of the others.
  await page.fill('#audit-namespace', '');
  await page.selectOption('#audit-method', 'DELETE');
  report.deletes = await rowsWhen({ method: 'DELETE' });
  await page.selectOption('#audit-method', '');

  // The Retention page: how long the rows are kept.
  await page.goto(`${url}/ui/#/retention`);
  await page.waitForSelector('#retention-audit');
  report.retention = await text(page.locator('#retention-audit'));

  // An admin of one namespace: only its rows.
  await page.click('#forget-token');
  await page.goto(`${url}/ui/#/audit`);
  await useToken(scoped);
  report.scoped = await rowsWhen({ ns: scopedNs });
  await shot('a3-scoped');
});
