// Tasker dashboard: a hash-routed single-page app over the orchestrator's REST API.
// Vanilla ES2020, no build step. API data only ever reaches the page as text nodes,
// textContent or attributes (never innerHTML).
'use strict';

const TOKEN_KEY = 'tasker.token';
const SVG_NS = 'http://www.w3.org/2000/svg';
const TASK_STATES = ['scheduled', 'running', 'complete', 'error', 'cancelled'];

// ---------- DOM helpers ----------

// h('tag', {attr: value, onclick: fn, text: '...'}, ...children): an element. Strings become
// text nodes; null/false attributes and children are left out; arrays are flattened.
const h = (tag, attrs, ...kids) => build(document.createElement(tag), attrs, kids);
const svg = (tag, attrs, ...kids) => build(document.createElementNS(SVG_NS, tag), attrs, kids);

function build(node, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (typeof v === 'function') node.addEventListener(k.replace(/^on/, ''), v);
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid != null && kid !== false) node.append(kid instanceof Node ? kid : String(kid));
  }
  return node;
}

// Appends to an existing node with the same rules as h().
const put = (node, ...kids) => build(node, null, kids);
const byId = (id) => document.getElementById(id);
const enc = encodeURIComponent;
const pretty = (v) => JSON.stringify(v, null, 2);
const ms = (iso) => (iso ? Date.parse(iso) : NaN);
// µs since the epoch of an RFC 3339 time ("…:00.123456Z"), NaN for none: Date keeps ms only, so
// the fraction's 4th to 6th digits are added here.
function us(iso) {
  if (!iso) return NaN;
  const frac = /\.(\d+)/.exec(iso);
  return Date.parse(iso) * 1000 + (frac ? Number(frac[1].slice(3, 6).padEnd(3, '0')) : 0);
}
const badge = (state) => h('span', { class: `badge state-${state}`, text: state });
const section = (title, ...kids) => h('section', {}, h('h3', { text: title }), ...kids);
// A template's page; without a version, its newest (as a child step naming no version starts).
const templateHref = (t) => `#/templates/${enc(t.namespace)}/${enc(t.name)}${t.version ? `/${enc(t.version)}` : ''}`;
const templateLabel = (t) => `${t.namespace}/${t.name}${t.version ? `@${t.version}` : ''}`;
const taskHref = (id) => `#/tasks/${enc(id)}`;
const clip = (s, n) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
// A step no live worker serves (the API's `unserved`): a warning badge saying which queue and handler.
const unservedTitle = (namespace, handler) => `no live worker serves namespace ${namespace} / handler ${handler}`;
const unservedBadge = (namespace, handler) =>
  h('span', { class: 'badge unserved', title: unservedTitle(namespace, handler), text: 'unserved' });
// A task's priority when it is not "normal" (the API's `priority`): a small tag, not a `.badge`
// (a row's badge is its state). `long`: "high priority" (the task page), else "high" (lists).
const priorityTag = (priority, long) => (priority && priority !== 'normal'
  ? h('span', { class: `prio prio-${priority}`, 'data-priority': priority, title: `priority: ${priority}`,
    text: long ? `${priority} priority` : priority })
  : null);

// 2025-01-31 12:34:56.789 in local time (the exact ISO value goes in a title).
function fmtTime(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

const timeEl = (iso) => (iso ? h('time', { datetime: iso, title: iso, text: fmtTime(iso) }) : '—');

// How far a time is from now: "in 3h 5m", "2m ago", "now" (coarse: s, m, h and m, d and h).
function fmtRel(iso) {
  const t = ms(iso);
  if (!isFinite(t)) return '';
  const d = t - Date.now();
  const s = Math.floor(Math.abs(d) / 1000);
  if (s < 1) return 'now';
  const [day, hr, min] = [Math.floor(s / 86400), Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60)];
  const span = s < 60 ? `${s}s` : s < 3600 ? `${min}m`
    : s < 86400 ? (hr < 10 && min ? `${hr}h ${min}m` : `${hr}h`)
      : (day < 10 && hr ? `${day}d ${hr}h` : `${day}d`);
  return d > 0 ? `in ${span}` : `${span} ago`;
}

// The relative time as a span that keeps itself current (see tickRelative).
const relEl = (iso) => (iso ? h('span', { class: 'rel', 'data-at': iso, title: iso, text: fmtRel(iso) }) : null);

// Every relative time on the page, recomputed (on a timer: they go stale between renders).
function tickRelative() {
  for (const el of document.querySelectorAll('.rel[data-at]')) el.textContent = fmtRel(el.dataset.at);
}

// A time close by, in local time: "14:02:31" today, else "2025-02-01 14:02:31".
function fmtShort(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  const p = (n) => String(n).padStart(2, '0');
  const clock = `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  return d.toDateString() === new Date().toDateString() ? clock
    : `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${clock}`;
}

// "14:02:31 (in 2m)": a near time and how far it is.
const atEl = (iso) => (iso ? [h('time', { datetime: iso, title: iso, text: fmtShort(iso) }), ' (', relEl(iso), ')'] : '—');

// A time as the clock of an IANA time zone shows it ("2025-02-01 02:30 Europe/Paris"); null when
// the browser does not know the zone.
function fmtInZone(iso, zone) {
  const d = new Date(iso);
  if (isNaN(d) || !zone) return null;
  try {
    const parts = Object.fromEntries(new Intl.DateTimeFormat('en-CA', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
    }).formatToParts(d).map((x) => [x.type, x.value]));
    return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute} ${zone}`;
  } catch (_) {
    return null;
  }
}

// A rate limit's period: "1 s", "250 ms", "1.5 s", "1 min", "1 h", "1 d".
function fmtPer(v) {
  if (v == null || !isFinite(v)) return '—';
  const units = [[86400000, 'd'], [3600000, 'h'], [60000, 'min'], [1000, 's']];
  for (const [size, unit] of units) if (v >= size && v % (size / 10) === 0) return `${+(v / size).toFixed(1)} ${unit}`;
  return `${v} ms`;
}

// A duration in µs with the unit that fits: "412 µs", "3.27 ms", "1.2 s", "2 min 3 s", "1 h 5 min".
function fmtDuration(v) {
  if (v == null || !isFinite(v)) return '—';
  if (v < 1000) return `${Math.round(v)} µs`;
  if (v < 1e6) return `${+(v / 1000).toPrecision(3)} ms`;
  if (v < 60e6) return `${+(v / 1e6).toPrecision(3)} s`;
  const s = Math.round(v / 1e6);
  return s < 3600 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

const fmtMs = (v) => (v == null ? '—' : fmtDuration(v * 1000));

// `text` as a JSON object: [value, null], or [undefined, why not] ("not JSON: …").
function jsonObject(text) {
  let v;
  try { v = JSON.parse(text); } catch (e) { return [undefined, `not JSON: ${e.message}`]; }
  return v && typeof v === 'object' && !Array.isArray(v) ? [v, null] : [undefined, 'not a JSON object'];
}

// A definition list from [label, value] pairs; pairs with a null value are left out.
const dl = (pairs) => h('dl', { class: 'meta' },
  pairs.filter((p) => p[1] != null).map(([k, v]) => [h('dt', { text: k }), h('dd', {}, v)]));

// A table.list with a header row; `empty` stands in for no rows.
const table = (attrs, heads, rows, empty) => h('table', Object.assign({ class: 'list' }, attrs),
  h('thead', {}, h('tr', {}, heads.map((t) => h('th', { text: t })))),
  h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: heads.length, class: 'muted', text: empty }))));

// Asks in `panel` (shown until answered) before something that cannot be undone: `question`, then
// `ok` (the button that does it) and "Keep it", which closes the panel, as close() does.
function confirmIn(panel, question, ok) {
  const close = () => { panel.hidden = true; panel.replaceChildren(); };
  panel.replaceChildren(h('div', { class: 'confirm-form' }, h('span', {}, question), ok,
    h('button', { type: 'button', class: 'cancel', text: 'Keep it', onclick: close })));
  panel.hidden = false;
  ok.focus();
  return close;
}

// A "live" indicator (#id), off until set(true); `off` is what it says when off.
function liveIndicator(id, title, off) {
  const el = h('span', { id, class: 'live', 'data-live': 'off', title, text: off });
  const set = (on) => { el.dataset.live = on ? 'on' : 'off'; el.textContent = on ? 'live' : off; };
  return [el, set];
}

// ---------- API ----------

class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    Object.assign(this, { status, code, details });
  }
}

// The token in localStorage (a browser with storage disabled keeps none).
function getToken() {
  try { return localStorage.getItem(TOKEN_KEY) || ''; } catch (_) { return ''; }
}
function setToken(token) {
  try { if (token) localStorage.setItem(TOKEN_KEY, token); else localStorage.removeItem(TOKEN_KEY); } catch (_) { /* none */ }
}

// Request headers, with the token when there is one.
const headers = (extra) => Object.assign(getToken() ? { Authorization: `Bearer ${getToken()}` } : {}, extra);

// The ApiError of a failed response ({"error": {code, message, details?}}); a 401 asks for a token.
async function failure(resp) {
  let err = null;
  try {
    const { error } = await resp.json();
    if (error) err = new ApiError(resp.status, error.code, error.message, error.details);
  } catch (_) { /* not JSON */ }
  if (resp.status === 401) showTokenForm();
  return err || new ApiError(resp.status, `http_${resp.status}`, resp.statusText || 'request failed');
}

// One JSON request: the parsed body (null for 204), or an ApiError.
async function api(method, path, body, signal) {
  const init = { method, signal, headers: headers({ Accept: 'application/json' }) };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init).catch((e) => {
    throw e.name === 'AbortError' ? e : new ApiError(0, 'network', `cannot reach the orchestrator: ${e.message}`);
  });
  if (!resp.ok) throw await failure(resp);
  return resp.status === 204 ? null : resp.json();
}

// ---------- banners, token form ----------

function showError(e) {
  if (!e || e.name === 'AbortError') return;
  // A task the retention policy purged: its page says so in place of the task (task_view.js).
  if (e.code === 'task_purged' && showPurged(e)) return;
  const box = byId('error');
  box.replaceChildren(
    h('strong', { class: 'code', text: e.code || 'error' }), ' ',
    h('span', { class: 'message', text: e.message || String(e) }),
    h('button', { type: 'button', class: 'close', title: 'Dismiss', 'aria-label': 'Dismiss', text: '×', onclick: clearError }));
  if (e.details !== undefined) box.append(h('pre', { text: pretty(e.details) }));
  box.hidden = false;
}

function clearError() {
  byId('error').hidden = true;
  byId('error').replaceChildren();
}

let flash = null; // a notice for the next view (after a replay or discard)

function showNotice(text) {
  byId('notice').textContent = text || '';
  byId('notice').hidden = !text;
}

function showTokenForm() {
  const form = byId('token-form');
  if (!form.hidden) return;
  form.hidden = false;
  byId('token-input').focus();
}

// ---------- router ----------

// "<section>/<number of path parts>" → view(root, signal, ...parts)
const VIEWS = {
  'tasks/0': tasksView,
  'tasks/1': taskView,
  'operations/0': operationsView,
  'operations/1': operationView,
  'templates/0': templatesView,
  'templates/2': templateView,
  'templates/3': templateView,
  'schedules/0': schedulesView,
  'schedules/2': scheduleView,
  'events/0': eventsView,
  'events/1': eventView,
  'webhooks/0': webhooksView,
  'alerts/0': alertsView,
  'dead-letters/0': deadLettersView,
  'dead-letters/1': deadLetterView,
  'workers/0': workersView,
  'limits/0': limitsView,
  'retention/0': retentionView,
  'audit/0': auditView,
};
let current = null; // the AbortController of the view on screen: aborted when leaving it

function route() {
  if (current) current.abort();
  current = new AbortController();
  const { signal } = current;
  clearError();
  showNotice(flash);
  flash = null;
  // `#/tasks?state=error`: the path names the view; the query (routeQuery()) its filters.
  const parts = location.hash.replace(/^#\/?/, '').split('?')[0].split('/').filter(Boolean).map((p) => {
    try { return decodeURIComponent(p); } catch (_) { return p; }
  });
  const [sectionName = 'tasks', ...rest] = parts;
  for (const a of document.querySelectorAll('header nav a')) {
    if (a.getAttribute('href') === `#/${sectionName}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const root = byId('main');
  root.replaceChildren();
  const view = VIEWS[`${sectionName}/${rest.length}`];
  if (!view) {
    put(root, h('p', { class: 'muted' }, 'No such page. ', h('a', { href: '#/tasks', text: 'Tasks' })));
    return;
  }
  view(root, signal, ...rest).catch((e) => { if (!signal.aborted) showError(e); });
}

// The query of the page's address (`#/tasks?state=error` → state=error): a view's filters, so
// the address reproduces the view (a reload, a link, a new tab).
const routeQuery = () => new URLSearchParams(location.hash.split('?').slice(1).join('?'));

// After a change (a pause, a resume): the same page again, with a notice.
const reloadWith = (notice) => { flash = notice; route(); };

// A list the API answers a page at a time shows its first page; a note says when there is more.
const more = (page, id, text) => page.next ? h('p', { id, class: 'muted hint', text }) : '';

const PAGE_BUTTONS = { first: '« First page', next: 'Next page »' }; // a paged list's, by default

// A list paged with `before`, fetched through refreshing(): start() shows the first page,
// show(before) another (null: the first again); each renders table#id and first/next page
// buttons into `box`, and an answer overtaken by a newer request is dropped. With `live`
// ({every, idOf, onLive}) the first page is fetched again every `every` ms while it is shown (an
// answer like the one on screen is not redrawn, so a selection stays), a row new since the
// previous fetch gets class "new" (idOf(item) names an item), and onLive(on) says whether the
// list is live. `pages` names the two buttons (by default "« First page" and "Next page »").
function pagedList(box, signal, { id, heads, url, key, row, empty, live, pages = PAGE_BUTTONS }) {
  let before = null; // the page to show: null for the first
  let shown = '';    // the page on screen and its answer, as JSON text
  let seen = null;   // the first page's ids at its last fetch, while it is live
  const load = async (current) => {
    const page = before;
    const data = await api('GET', url(page), undefined, signal).catch((e) => {
      if (live && current()) live.onLive(false);
      throw e;
    });
    if (!current()) return;
    const text = JSON.stringify([page, data]);
    if (text !== shown) {
      shown = text;
      const rows = data[key].map((item) => {
        const tr = row(item);
        if (seen && !seen.has(live.idOf(item))) tr.classList.add('new');
        return tr;
      });
      box.replaceChildren(table({ id }, heads, rows, empty), h('div', { class: 'pager' },
        page != null && h('button', { id: 'first-page', type: 'button', text: pages.first, onclick: () => show(null) }),
        data.next_before != null &&
          h('button', { id: 'next-page', type: 'button', text: pages.next, onclick: () => show(data.next_before) })));
    }
    if (!live) return;
    seen = page == null ? new Set(data[key].map(live.idOf)) : null;
    live.onLive(page == null);
  };
  const { again, start } = refreshing(signal, load, () => (live && before == null ? live.every : null));
  const show = (page) => { before = page; seen = null; again(); };
  return { start, show };
}

// Loads a page's data now (`load(current)`; `current()` says whether this load is still the
// newest) and again `every()` ms later (null: not again) while the page is open, or at once with
// `again`: a refusal (4xx) ends that, other errors are shown and retried.
function refreshing(signal, load, every) {
  let seq = 0;
  let timer = null;
  const run = () => {
    const mine = ++seq;
    return load(() => !signal.aborted && mine === seq);
  };
  const later = () => {
    const wait = every();
    if (wait != null) timer = setTimeout(again, wait);
  };
  const again = () => {
    clearTimeout(timer);
    const mine = seq + 1;
    run().catch((e) => {
      showError(e);
      return e && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429;
    }).then((stop) => {
      if (!signal.aborted && !stop && mine === seq) later();
    });
  };
  signal.addEventListener('abort', () => clearTimeout(timer));
  const start = async () => {
    const first = seq + 1;
    await run();
    if (!signal.aborted && seq === first) later(); // unless a refresh overtook it
  };
  return { again, start };
}
