// Tasker dashboard: a hash-routed single-page app over the orchestrator's REST API.
// Vanilla ES2020, no build step. API data only ever reaches the page as text nodes,
// textContent or attributes (never innerHTML).
'use strict';

const TOKEN_KEY = 'tasker.token';
const SVG_NS = 'http://www.w3.org/2000/svg';
const TASK_STATES = ['running', 'complete', 'error', 'cancelled'];

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
const badge = (state) => h('span', { class: `badge state-${state}`, text: state });
const section = (title, ...kids) => h('section', {}, h('h3', { text: title }), ...kids);
const templateHref = (t) => `#/templates/${enc(t.namespace)}/${enc(t.name)}/${enc(t.version)}`;
const clip = (s, n) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

// 2025-01-31 12:34:56.789 in local time (the exact ISO value goes in a title).
function fmtTime(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

const timeEl = (iso) => (iso ? h('time', { datetime: iso, title: iso, text: fmtTime(iso) }) : '—');

function fmtMs(v) {
  if (v == null || !isFinite(v)) return '—';
  if (v < 1000) return `${Math.round(v)} ms`;
  if (v < 60000) return `${(v / 1000).toFixed(2)} s`;
  return `${Math.floor(v / 60000)} min ${Math.round((v % 60000) / 1000)} s`;
}

// A definition list from [label, value] pairs; pairs with a null value are left out.
const dl = (pairs) => h('dl', { class: 'meta' },
  pairs.filter((p) => p[1] != null).map(([k, v]) => [h('dt', { text: k }), h('dd', {}, v)]));

// A table.list with a header row; `empty` stands in for no rows.
const table = (attrs, heads, rows, empty) => h('table', Object.assign({ class: 'list' }, attrs),
  h('thead', {}, h('tr', {}, heads.map((t) => h('th', { text: t })))),
  h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: heads.length, class: 'muted', text: empty }))));

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
  'templates/0': templatesView,
  'templates/3': templateView,
  'dead-letters/0': deadLettersView,
  'dead-letters/1': deadLetterView,
};
let current = null; // the AbortController of the view on screen: aborted when leaving it

function route() {
  if (current) current.abort();
  current = new AbortController();
  const { signal } = current;
  clearError();
  showNotice(flash);
  flash = null;
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map((p) => {
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

// A list paged with `before`: load(before) renders table#id and first/next page buttons into
// `box`; an answer overtaken by a newer request is dropped.
function pagedList(box, signal, { id, heads, url, key, row, empty }) {
  let seq = 0;
  const load = async (before) => {
    const mine = ++seq;
    const data = await api('GET', url(before), undefined, signal);
    if (signal.aborted || mine !== seq) return;
    const go = (b) => load(b).catch(showError);
    box.replaceChildren(table({ id }, heads, data[key].map(row), empty), h('div', { class: 'pager' },
      before != null && h('button', { id: 'first-page', type: 'button', text: '« First page', onclick: () => go(null) }),
      data.next_before != null &&
        h('button', { id: 'next-page', type: 'button', text: 'Next page »', onclick: () => go(data.next_before) })));
  };
  return load;
}

// ---------- tasks ----------

const taskFilter = { state: '', namespace: '', name: '' }; // kept across views

async function tasksView(root, signal) {
  const stateSel = h('select', { id: 'filter-state', 'aria-label': 'State' },
    ['', ...TASK_STATES].map((s) => h('option', { value: s, text: s || 'all states', selected: s === taskFilter.state })));
  const nsInput = h('input', { id: 'filter-namespace', type: 'text', placeholder: 'namespace', 'aria-label': 'Namespace', value: taskFilter.namespace });
  const nameInput = h('input', { id: 'filter-name', type: 'text', placeholder: 'template name', 'aria-label': 'Template name', value: taskFilter.name });
  const box = h('div');
  const load = pagedList(box, signal, {
    id: 'tasks', key: 'tasks', empty: 'No tasks.',
    heads: ['id', 'template', 'state', 'created', 'duration'],
    url: (before) => {
      const q = new URLSearchParams({ limit: '50' });
      for (const k of ['state', 'namespace', 'name']) if (taskFilter[k]) q.set(k, taskFilter[k]);
      if (before) q.set('before', before);
      return `/v1/tasks?${q}`;
    },
    row: (t) => h('tr', { 'data-task-id': t.id },
      h('td', { class: 'mono' }, h('a', { href: `#/tasks/${enc(t.id)}`, text: t.id })),
      h('td', {}, h('a', { class: 'quiet', href: templateHref(t), text: `${t.namespace}/${t.name}@${t.version}` })),
      h('td', {}, badge(t.state)),
      h('td', {}, timeEl(t.created_at)),
      h('td', { class: 'num', text: fmtMs(t.duration_ms) })),
  });
  const apply = () => {
    Object.assign(taskFilter, { state: stateSel.value, namespace: nsInput.value.trim(), name: nameInput.value.trim() });
    load(null).catch(showError);
  };
  for (const input of [stateSel, nsInput, nameInput]) input.addEventListener('change', apply);
  const search = h('input', {
    id: 'search-id', type: 'search', placeholder: 'open a task by id…', 'aria-label': 'Task id',
    onkeydown: (e) => {
      const id = search.value.trim();
      if (e.key === 'Enter' && id) { e.preventDefault(); location.hash = `#/tasks/${enc(id)}`; }
    },
  });
  put(root, h('h1', { text: 'Tasks' }), h('div', { class: 'toolbar' },
    h('form', { class: 'filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
      stateSel, nsInput, nameInput, h('button', { type: 'submit', text: 'Apply' })),
    search), box);
  await load(null);
}

// ---------- Server-Sent Events over fetch (EventSource cannot send the Authorization header) ----------

// Calls onEvent(event, data) per frame and onLive(true/false) as the connection comes and goes;
// reconnects after 1 s, 2 s, 4 s … (at most 10 s) until `signal` aborts. A 4xx ends it.
async function eventStream(url, signal, onEvent, onLive) {
  let delay = 1000;
  while (!signal.aborted) {
    try {
      const resp = await fetch(url, { signal, cache: 'no-store', headers: headers({ Accept: 'text/event-stream' }) });
      if (!resp.ok) {
        const err = await failure(resp);
        showError(err);
        if (resp.status >= 400 && resp.status < 500 && resp.status !== 408 && resp.status !== 429) return onLive(false);
        throw err;
      }
      onLive(true);
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      let [buf, event, data] = ['', '', []];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        // Whole lines only; a trailing '\r' may be the first half of '\r\n'.
        const cut = buf.endsWith('\r') ? buf.length - 1 : buf.length;
        const lines = buf.slice(0, cut).split(/\r\n|\r|\n/);
        buf = lines.pop() + buf.slice(cut);
        for (const line of lines) {
          if (line === '') { // a blank line ends a frame
            if (data.length) { onEvent(event || 'message', data.join('\n')); delay = 1000; }
            [event, data] = ['', []];
          } else if (!line.startsWith(':')) { // ':' starts a comment (keep-alive)
            const i = line.indexOf(':');
            const field = i < 0 ? line : line.slice(0, i);
            const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
            if (field === 'event') event = val;
            else if (field === 'data') data.push(val);
          }
        }
      }
    } catch (e) {
      if (signal.aborted) return;
    }
    onLive(false);
    await new Promise((resolve) => {
      const t = setTimeout(resolve, delay);
      signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
    delay = Math.min(delay * 2, 10000);
  }
}

// ---------- one task, live ----------

async function taskView(root, signal, id) {
  let snap = null;              // the latest snapshot {task, steps, history}
  let template;                 // undefined: not asked; 'loading'; null: unavailable; else the template
  let resolving = null;         // the step whose resolve form is open
  let busy = false;             // an action is in flight
  let scheduled = false;        // a render is due
  const openTraces = new Set(); // steps whose backtrace is unfolded

  const live = h('span', { id: 'live', 'data-live': 'off', title: 'live updates', text: 'offline' });
  const stateEl = h('span', { id: 'task-state', class: 'badge', text: '…' });
  const meta = h('div');
  const cancelBtn = h('button', { id: 'cancel', type: 'button', hidden: true, text: 'Cancel task' });
  const reason = h('input', { id: 'repair-reason', type: 'text', hidden: true, maxlength: 1000, placeholder: 'reason (optional, recorded in the history)' });
  const retryBtn = h('button', { id: 'retry', type: 'button', hidden: true, class: 'primary', text: 'Retry failed step' });
  const dag = svg('svg', { id: 'dag', class: 'dag', role: 'img', 'aria-label': 'step graph' });
  const waterfall = h('div', { id: 'waterfall', class: 'waterfall' });
  const stepsBox = h('div', { id: 'steps', class: 'steps' });
  const stepsNote = h('p', { class: 'muted', hidden: true, text: 'Only the first 1,000 steps are shown live.' });
  const contextPre = h('pre', { id: 'context' });
  const resultPre = h('pre', { id: 'task-result' });
  const errorPre = h('pre', { id: 'task-error', class: 'error' });
  const errorSection = section('Error', errorPre);
  const history = h('ol', { id: 'history', class: 'history' });
  const resolveInput = h('textarea', { id: 'resolve-result', rows: 4, spellcheck: 'false', placeholder: '{"value": 42}' });
  const resolveLabel = h('label', { for: 'resolve-result' });
  const resolveForm = h('div', { class: 'resolve-form' }, resolveLabel, resolveInput, h('div', { class: 'row' },
    h('button', { id: 'resolve-submit', type: 'button', class: 'primary', text: 'Resolve step', onclick: submitResolve }),
    h('button', { type: 'button', text: 'Close', onclick: () => { resolving = null; render(); } })));
  errorSection.hidden = true;

  put(root,
    h('div', { class: 'task-head' }, h('h1', {}, 'Task ', h('span', { class: 'mono', text: id })), stateEl, live),
    meta,
    h('div', { class: 'actions' }, cancelBtn, reason, retryBtn),
    section('Graph', h('div', { class: 'dag-wrap' }, dag)),
    section('Timeline', waterfall),
    section('Steps', stepsNote, stepsBox),
    h('div', { class: 'columns' }, section('Context', contextPre), section('Result', resultPre), errorSection),
    section('History', history));

  // An action; its outcome arrives through the stream, so nothing is refetched here.
  async function act(call, done) {
    if (busy) return;
    busy = true;
    render();
    clearError();
    try { await call(); reason.value = ''; if (done) done(); } catch (e) { showError(e); }
    busy = false;
    if (!signal.aborted) render();
  }
  // Who asked is the dashboard (the server adds the token's name when there is one).
  const withReason = (body) => Object.assign({ by: 'dashboard' }, reason.value.trim() ? { reason: reason.value.trim() } : {}, body);
  cancelBtn.addEventListener('click', () => act(() => api('POST', `/v1/tasks/${enc(id)}/cancel`)));
  retryBtn.addEventListener('click', () => act(() => api('POST', `/v1/tasks/${enc(id)}/retry`, withReason())));

  function submitResolve() {
    let result;
    try { result = JSON.parse(resolveInput.value); } catch (e) {
      return showError(new ApiError(0, 'invalid_json', `the result is not valid JSON: ${e.message}`)); // nothing sent
    }
    const step = resolving;
    act(() => api('POST', `/v1/tasks/${enc(id)}/steps/${enc(step)}/resolve`, withReason({ result })),
      () => { resolving = null; resolveInput.value = ''; });
  }

  // At most one render a frame, however fast snapshots come.
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { scheduled = false; if (!signal.aborted) render(); });
  }

  function render() {
    if (!snap) return;
    const { task } = snap;
    const steps = snap.steps || [];
    stateEl.textContent = task.state;
    stateEl.dataset.state = task.state;
    stateEl.className = `badge state-${task.state}`;
    meta.replaceChildren(dl([
      ['template', h('a', { href: templateHref(task), text: `${task.namespace}/${task.name}@${task.version}` })],
      ['id', h('span', { class: 'mono', text: task.id })], ['created', timeEl(task.created_at)],
      ['completed', timeEl(task.completed_at)], ['duration', fmtMs(task.duration_ms)],
      ['open steps', String(task.open_steps)], ['idempotency key', task.idempotency_key],
    ]));
    const failed = task.state === 'error';
    cancelBtn.hidden = task.state !== 'running';
    retryBtn.hidden = reason.hidden = !failed;
    cancelBtn.disabled = retryBtn.disabled = busy;
    if (resolving && !(failed && steps.some((s) => s.name === resolving && s.state === 'failed'))) resolving = null;
    contextPre.textContent = pretty(task.context);
    resultPre.textContent = task.result != null ? pretty(task.result) : '';
    errorSection.hidden = task.error == null;
    errorPre.textContent = task.error != null ? pretty(task.error) : '';

    // The template's graph coloured by the task's steps; without a template, the steps alone.
    const states = stepStates(steps, task.state);
    if (template && template !== 'loading') drawDag(dag, template.definition.steps || [], (st) => states(st.name));
    else if (template === null) drawDag(dag, [...new Set(steps.map((s) => baseName(s.name)))].map((name) => ({ name })), (st) => states(st.name));

    renderWaterfall(waterfall, task, steps);

    // Step cards; the open resolve form (and its focus) moves to the rebuilt card.
    const hadFocus = resolveForm.contains(document.activeElement) ? document.activeElement : null;
    stepsNote.hidden = !snap.more_steps;
    stepsBox.replaceChildren(...steps.map((st) => {
      const card = stepCard(st, openTraces);
      if (failed && st.state === 'failed') {
        card.querySelector('.step-head').append(h('button', {
          type: 'button', class: 'resolve', 'data-step': st.name, text: 'Resolve…', disabled: busy,
          onclick: () => { resolving = st.name; render(); resolveInput.focus(); },
        }));
        if (resolving === st.name) {
          resolveLabel.replaceChildren('Result of ', h('strong', { text: st.name }), ' (JSON, as its handler would have returned it):');
          card.append(resolveForm);
        }
      }
      return card;
    }));
    if (!steps.length) stepsBox.append(h('p', { class: 'muted', text: 'No steps.' }));
    if (hadFocus && resolveForm.isConnected) hadFocus.focus();
    history.replaceChildren(...(snap.history || []).map(historyItem));
  }

  function onSnapshot(data) {
    let next;
    try { next = JSON.parse(data); } catch (_) { return; }
    if (!next || !next.task) return;
    snap = next;
    if (template === undefined) { // the template, once per view
      template = 'loading';
      const t = snap.task;
      api('GET', `/v1/templates/${enc(t.namespace)}/${enc(t.name)}?version=${enc(t.version)}`, undefined, signal)
        .then((v) => { template = v; }, (e) => { template = null; if (!signal.aborted) showError(e); })
        .then(() => { if (!signal.aborted) schedule(); });
    }
    schedule();
  }

  await eventStream(`/v1/tasks/${enc(id)}/events`, signal,
    (event, data) => { if (event === 'snapshot') onSnapshot(data); },
    (on) => { live.dataset.live = on ? 'on' : 'off'; live.textContent = on ? 'live' : 'offline'; });
}

const baseName = (name) => (name.includes('#') ? name.slice(0, name.indexOf('#')) : name);

// Each template step's state from the task's steps: batch worker instances ("sum#3") fold into
// their template step, with a completed/total count.
function stepStates(steps, taskState) {
  const groups = new Map();
  for (const st of steps) {
    const key = baseName(st.name);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(st);
  }
  return (name) => {
    const g = groups.get(name);
    if (!g) return { state: taskState === 'running' ? 'pending' : 'skipped', sub: 'not created' };
    if (g.length === 1 && g[0].name === name) {
      return { state: g[0].state, sub: g[0].attempt > 1 ? `${g[0].state} · attempt ${g[0].attempt}` : g[0].state };
    }
    const state = worstState(g.map((s) => s.state));
    return { state, sub: state, count: `${g.filter((s) => s.state === 'completed').length}/${g.length}` };
  };
}

// failed, else in progress, else pending, else completed if all are, else the most common.
function worstState(states) {
  for (const s of ['failed', 'enqueued', 'waiting_retry', 'pending']) if (states.includes(s)) return s;
  if (states.every((s) => s === 'completed')) return 'completed';
  const counts = new Map();
  for (const s of states) counts.set(s, (counts.get(s) || 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0][0];
}

function stepCard(st, openTraces) {
  const card = h('div', { class: 'step', 'data-step': st.name, 'data-state': st.state },
    h('div', { class: 'step-head' },
      h('strong', { class: 'step-name', text: st.name }),
      badge(st.state),
      h('code', { title: 'handler', text: st.handler }),
      st.step_type && st.step_type !== 'standard' && h('span', { class: 'tag', text: st.step_type }),
      h('span', { class: 'muted', text: `attempt ${st.attempt}/${st.max_attempts}` }),
      st.worker && h('span', { class: 'muted', text: `worker ${st.worker}` }),
      st.state === 'waiting_retry' && st.next_attempt_at && h('span', { class: 'muted' }, 'next attempt ', timeEl(st.next_attempt_at))),
    st.result != null && h('pre', { class: 'result', text: pretty(st.result) }));
  const err = st.error;
  if (err == null) return card;
  if (typeof err !== 'object' || Array.isArray(err)) {
    card.append(h('pre', { class: 'error', text: pretty(err) }));
    return card;
  }
  // {kind, message, backtrace, …}: "kind: message", the other fields, the backtrace folded.
  const { kind, message, backtrace, ...rest } = err;
  const head = [kind, message].filter((x) => x != null).map(String).join(': ');
  const extra = Object.keys(rest).length ? pretty(rest) : '';
  card.append(h('pre', { class: 'error', text: [head, extra].filter(Boolean).join('\n') || pretty(err) }));
  if (backtrace != null) {
    const details = h('details', { open: openTraces.has(st.name) }, h('summary', { text: 'backtrace' }),
      h('pre', { class: 'backtrace', text: typeof backtrace === 'string' ? backtrace : pretty(backtrace) }));
    details.addEventListener('toggle', () => (details.open ? openTraces.add(st.name) : openTraces.delete(st.name)));
    card.append(details);
  }
  return card;
}

// One transition: {at, step?, from?, to, attempt?, by?, reason?} (event too, should one appear).
const historyItem = (t) => h('li', {},
  timeEl(t.at), ' ',
  t.step ? h('strong', { text: t.step }) : h('em', { text: 'task' }), ' ',
  t.from ? [h('span', { class: `st state-${t.from}`, text: t.from }), ' → '] : '→ ',
  t.to != null && h('span', { class: `st state-${t.to}`, text: t.to }),
  t.event && h('span', { class: 'muted', text: ` on ${t.event}` }),
  t.attempt != null && h('span', { class: 'muted', text: ` (attempt ${t.attempt})` }),
  t.by && h('span', { class: 'muted', text: ` by ${t.by}` }),
  t.reason && h('span', { class: 'reason', text: ` — ${t.reason}` }));

// Per step: queue (dispatched → started), handler (started → finished) and result
// (finished → processed) bars, in % of the span from the task's creation to the latest time.
function renderWaterfall(box, task, steps) {
  const t0 = ms(task.created_at);
  let t1 = isFinite(ms(task.completed_at)) ? ms(task.completed_at) : t0;
  const fields = ['dispatched_at', 'started_at', 'finished_at', 'processed_at'];
  for (const st of steps) for (const f of fields) if (isFinite(ms(st[f]))) t1 = Math.max(t1, ms(st[f]));
  const span = Math.max(1, t1 - t0);
  const pct = (t) => Math.min(100, Math.max(0, ((t - t0) / span) * 100));
  const sorted = [...steps].sort((a, b) =>
    (ms(a.dispatched_at) || Infinity) - (ms(b.dispatched_at) || Infinity) || a.name.localeCompare(b.name, undefined, { numeric: true }));
  const bar = (kind, from, to) => {
    const [a, b] = [ms(from), ms(to)];
    if (!isFinite(a) || !isFinite(b)) return null; // a missing time: no bar
    const el = h('span', { class: `bar ${kind}`, title: `${kind}: ${Math.round(Math.max(0, b - a))} ms` });
    el.style.left = `${pct(a)}%`;
    el.style.width = `${Math.max(0, pct(b) - pct(a))}%`;
    return el;
  };
  box.replaceChildren(
    h('div', { class: 'wf-axis' },
      h('span', { class: 'wf-label' }, ['queue', 'handler', 'result'].map((k) => h('span', { class: `legend ${k}`, text: k }))),
      h('span', { class: 'wf-scale' }, h('span', { text: '0' }), h('span', { text: fmtMs(span) }))),
    ...sorted.map((st) => h('div', { class: 'wf-row', 'data-step': st.name, 'data-state': st.state },
      h('span', { class: 'wf-label', title: `${st.name} (${st.state})`, text: st.name }),
      h('span', { class: 'wf-track' },
        bar('queue', st.dispatched_at, st.started_at),
        bar('handler', st.started_at, st.finished_at),
        bar('result', st.finished_at, st.processed_at)))));
}

// ---------- the DAG, shared by the task and template views ----------

// Draws template steps ({name, depends_on?, type?}) into the <svg> `el`: one column per depth
// (the longest path from a root), nodes spread vertically, edges with arrowheads.
// info(step) → {state?, sub?, count?} for its node.
function drawDag(el, steps, info) {
  const W = 176, H = 40, GX = 56, GY = 10, PAD = 10;
  const byName = new Map(steps.map((st, i) => [st.name, { st, i }]));
  const deps = (name) => (byName.get(name)?.st.depends_on || []).filter((d) => byName.has(d));
  const depth = new Map();
  const onPath = new Set();
  const depthOf = (name) => {
    if (depth.has(name)) return depth.get(name);
    if (onPath.has(name)) return 0; // a cycle (not in a valid template)
    onPath.add(name);
    const d = deps(name).reduce((m, p) => Math.max(m, depthOf(p) + 1), 0);
    onPath.delete(name);
    depth.set(name, d);
    return d;
  };
  const cols = [];
  for (const st of steps) {
    const d = depthOf(st.name);
    while (cols.length <= d) cols.push([]);
    cols[d].push(st.name);
  }
  // Order each column by the mean position of its parents (fewer crossings), then template order.
  const row = new Map();
  cols.forEach((col, c) => {
    const key = (n) => {
      const ps = deps(n).filter((p) => row.has(p));
      return ps.length ? ps.reduce((a, p) => a + row.get(p), 0) / ps.length : 1e9;
    };
    if (c > 0) col.sort((a, b) => key(a) - key(b) || byName.get(a).i - byName.get(b).i);
    col.forEach((n, r) => row.set(n, r - (col.length - 1) / 2));
  });
  const rows = Math.max(1, ...cols.map((c) => c.length));
  const width = PAD * 2 + Math.max(1, cols.length) * (W + GX) - GX;
  const height = PAD * 2 + rows * (H + GY) - GY;
  const pos = (n) => ({ x: PAD + depth.get(n) * (W + GX), y: height / 2 + row.get(n) * (H + GY) - H / 2 });
  const marker = `arrow-${el.id || 'dag'}`;
  const edges = steps.flatMap((st) => deps(st.name).map((p) => {
    const [a, b] = [pos(p), pos(st.name)];
    const [x1, y1, x2, y2] = [a.x + W, a.y + H / 2, b.x - 2, b.y + H / 2];
    return svg('path', {
      class: 'edge', 'marker-end': `url(#${marker})`, 'data-from': p, 'data-to': st.name,
      d: `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}`,
    });
  }));
  const nodes = steps.map((st) => {
    const { x, y } = pos(st.name);
    const i = info(st) || {};
    const sub = [st.type && st.type !== 'standard' ? st.type : null, i.sub].filter(Boolean).join(' · ');
    return svg('g', { class: 'node', 'data-step': st.name, 'data-state': i.state, transform: `translate(${x},${y})` },
      svg('title', {}, [st.name, sub, i.count].filter(Boolean).join('\n')),
      svg('rect', { width: W, height: H, rx: 6, ry: 6 }),
      svg('text', { x: 10, y: sub ? 17 : 25, class: 'name' }, clip(st.name, i.count ? 16 : 21)),
      i.count && svg('text', { x: W - 8, y: 17, class: 'count', 'text-anchor': 'end' }, i.count),
      sub && svg('text', { x: 10, y: 32, class: 'sub' }, clip(sub, 27)));
  });
  el.setAttribute('viewBox', `0 0 ${width} ${height}`);
  el.setAttribute('width', width);
  el.setAttribute('height', height);
  el.replaceChildren(
    svg('defs', {}, svg('marker', {
      id: marker, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto',
    }, svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }))),
    svg('g', { class: 'edges' }, edges),
    svg('g', { class: 'nodes' }, nodes));
  if (!steps.length) el.append(svg('text', { x: PAD, y: 25, class: 'sub' }, 'no steps'));
}

// ---------- templates ----------

async function templatesView(root, signal) {
  const data = await api('GET', '/v1/templates', undefined, signal);
  if (signal.aborted) return;
  put(root, h('h1', { text: 'Templates' }), table({ id: 'templates' },
    ['template', 'version', 'description', 'steps', 'registered', 'by'],
    data.templates.map((t) => h('tr', { 'data-template': `${t.namespace}/${t.name}@${t.version}` },
      h('td', {}, h('a', { href: templateHref(t), text: `${t.namespace}/${t.name}` })),
      h('td', { class: 'mono', text: t.version }),
      h('td', { text: t.description || '' }),
      h('td', { class: 'num', text: String(((t.definition || {}).steps || []).length) }),
      h('td', {}, timeEl(t.registered_at)),
      h('td', { class: 'muted', text: t.registered_by || '' }))),
    'No templates registered.'));
}

async function templateView(root, signal, namespace, name, version) {
  const t = await api('GET', `/v1/templates/${enc(namespace)}/${enc(name)}?version=${enc(version)}`, undefined, signal);
  if (signal.aborted) return;
  const def = t.definition || {};
  const steps = def.steps || [];
  const dag = svg('svg', { id: 'template-dag', class: 'dag', role: 'img', 'aria-label': 'step graph' });
  drawDag(dag, steps, (st) => ({ sub: st.handler }));
  const showTasks = () => {
    Object.assign(taskFilter, { state: '', namespace: t.namespace, name: t.name });
    location.hash = '#/tasks';
  };
  put(root,
    h('h1', {}, `${t.namespace}/${t.name}`, h('span', { class: 'muted', text: ` @${t.version}` })),
    t.description && h('p', { class: 'description', text: t.description }),
    dl([['registered', timeEl(t.registered_at)], ['by', t.registered_by], ['id', h('span', { class: 'mono', text: t.id })]]),
    h('div', { class: 'actions' }, h('button', { type: 'button', text: 'Tasks of this template', onclick: showTasks })),
    section('Graph', h('div', { class: 'dag-wrap' }, dag)),
    section('Definition', h('details', {}, h('summary', { text: `${steps.length} steps, retry policies, timeouts, context schema` }),
      h('pre', { text: pretty(def) }))));
}

// ---------- dead letters ----------

async function deadLettersView(root, signal) {
  const box = h('div');
  put(root, h('h1', { text: 'Dead letters' }), box);
  await pagedList(box, signal, {
    id: 'dead-letters', key: 'dead_letters', empty: 'No dead letters.',
    heads: ['id', 'queue', 'reason', 'task', 'first seen', 'last seen', 'times', 'bytes'],
    url: (before) => `/v1/dead-letters?limit=50${before != null ? `&before=${enc(before)}` : ''}`,
    row: (d) => h('tr', { 'data-dead-letter-id': d.id },
      h('td', {}, h('a', { href: `#/dead-letters/${enc(d.id)}`, text: String(d.id) })),
      h('td', { class: 'mono', text: d.queue || '—' }),
      h('td', { class: 'reason', text: d.reason }),
      h('td', {}, d.task_id ? h('a', { class: 'mono', href: `#/tasks/${enc(d.task_id)}`, title: d.task_id, text: `${d.task_id.slice(0, 8)}…` }) : '—'),
      h('td', {}, timeEl(d.first_seen)),
      h('td', {}, timeEl(d.last_seen)),
      h('td', { class: 'num', text: String(d.times_seen) }),
      h('td', { class: 'num', text: String(d.bytes) })),
  })(null);
}

async function deadLetterView(root, signal, id) {
  const d = await api('GET', `/v1/dead-letters/${enc(id)}`, undefined, signal);
  if (signal.aborted) return;
  const body = 'body' in d ? ['Body (JSON)', pretty(d.body)] : 'body_text' in d ? ['Body (text)', d.body_text]
    : ['Body (base64)', d.body_base64 || ''];
  // Replay or discard, then back to the list with a notice.
  const act = (method, path, notice) => async (e) => {
    const btn = e.currentTarget;
    btn.disabled = true;
    clearError();
    try {
      flash = notice(await api(method, path));
      location.hash = '#/dead-letters';
    } catch (err) {
      showError(err);
      btn.disabled = false;
    }
  };
  put(root,
    h('h1', { text: `Dead letter ${d.id}` }),
    dl([
      ['queue', h('span', { class: 'mono', text: d.queue || 'unknown' })], ['reason', d.reason],
      ['task', d.task_id ? h('a', { class: 'mono', href: `#/tasks/${enc(d.task_id)}`, text: d.task_id }) : null],
      ['step', d.step_id ? h('span', { class: 'mono', text: d.step_id }) : null],
      ['first seen', timeEl(d.first_seen)], ['last seen', timeEl(d.last_seen)],
      ['times seen', String(d.times_seen)], ['bytes', String(d.bytes)],
    ]),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'replay primary', 'data-id': d.id, text: 'Replay to its queue',
        onclick: act('POST', `/v1/dead-letters/${enc(d.id)}/replay`, (r) => `Dead letter ${d.id} replayed to ${(r && r.queue) || d.queue}.`) }),
      h('button', { type: 'button', class: 'discard danger', 'data-id': d.id, text: 'Discard',
        onclick: act('DELETE', `/v1/dead-letters/${enc(d.id)}`, () => `Dead letter ${d.id} discarded.`) })),
    section('Headers', h('pre', { class: 'headers', text: pretty(d.headers) })),
    section(body[0], h('pre', { class: 'body', text: body[1] })));
}

// ---------- start ----------

byId('token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  setToken(byId('token-input').value.trim());
  byId('token-input').value = '';
  byId('token-form').hidden = true;
  route();
});
byId('forget-token').addEventListener('click', () => {
  setToken('');
  flash = 'API token forgotten.';
  route();
});
window.addEventListener('hashchange', route);
route();
