// What every dashboard script starts with: Debian's Chromium (CHROMIUM, default
// /usr/bin/chromium) driven by playwright-core, one page, its errors collected into the report
// the script prints, and helpers for screenshots (into SCREENSHOTS) and text.
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

// `consoleErrors`: collect the page's console errors into report.consoleErrors, except those
// `ignored` returns true for (by default none are collected, only echoed to stderr).
export async function openPage({ consoleErrors = false, ignored = () => false } = {}) {
  const shots = process.env.SCREENSHOTS;
  mkdirSync(shots, { recursive: true });
  const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
  const report = consoleErrors ? { pageErrors: [], consoleErrors: [] } : { pageErrors: [] };
  const browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (e) => report.pageErrors.push(String(e)));
  page.on('console', (m) => {
    console.error(`[browser ${m.type()}] ${m.text()}`);
    if (consoleErrors && m.type() === 'error' && !ignored(m.text())) report.consoleErrors.push(m.text());
  });
  const shot = (name) => page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
  const text = async (locator) => ((await locator.textContent()) || '').replace(/\s+/g, ' ').trim();
  return { browser, page, report, shot, text };
}

// Runs a script's tour (`steps`): the report says `ok` when it ran to its end, `failure` (with a
// screenshot) when a step threw; the browser is closed and the report printed as the script's
// last line either way.
export async function tour({ browser, report, shot }, steps) {
  try {
    await steps();
    report.ok = true;
  } catch (e) {
    report.ok = false;
    report.failure = String(e);
    await shot('failure').catch(() => {});
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(report));
}
