// The templates, schedules, dead-letters, workers, limits and retention pages, and the start of
// the app.

// ---------- templates ----------

// A template wait step's `wait` ({sleep}, {until} or {signal, …}) in a few words.
const templateWait = (w) => (w && typeof w === 'object'
  ? (w.signal ? `signal ${w.signal}` : w.sleep ? `sleep ${w.sleep}` : w.until ? `until ${w.until}` : null) : null);

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

// A template, of `version` or (without one) the newest.
async function templateView(root, signal, namespace, name, version) {
  const q = version ? `?version=${enc(version)}` : '';
  const t = await api('GET', `/v1/templates/${enc(namespace)}/${enc(name)}${q}`, undefined, signal);
  if (signal.aborted) return;
  const def = t.definition || {};
  const steps = def.steps || [];
  const unserved = t.unserved_steps || [];
  const unservedBy = new Map(unserved.map((u) => [u.step, u]));
  // A child step's template: in this template's namespace unless it names one, the newest version
  // (when a task starts) unless it names one.
  const childTemplate = (c) => ({ namespace: c.namespace || t.namespace, name: c.template, version: c.version });
  const childSteps = steps.filter((st) => st.child);
  const dag = svg('svg', { id: 'template-dag', class: 'dag', role: 'img', 'aria-label': 'step graph' });
  drawDag(dag, steps, (st) => {
    const u = unservedBy.get(st.name);
    const notes = [st.namespace && st.namespace !== t.namespace && `namespace ${st.namespace}`,
      u && unservedTitle(u.namespace, u.handler)];
    if (!st.child) return { sub: st.handler || templateWait(st.wait), unserved: !!u, notes };
    const c = childTemplate(st.child);
    return { sub: `→ ${templateLabel(c)}`, href: templateHref(c), unserved: !!u, notes };
  });
  put(root,
    h('h1', {}, `${t.namespace}/${t.name}`, h('span', { class: 'muted', text: ` @${t.version}` })),
    t.description && h('p', { class: 'description', text: t.description }),
    dl([['registered', timeEl(t.registered_at)], ['by', t.registered_by], ['id', h('span', { class: 'mono', text: t.id })]]),
    h('div', { class: 'actions' }, h('button', { type: 'button', text: 'Tasks of this template', onclick: () => showTasksOf(t.namespace, t.name) })),
    unserved.length > 0 && h('section', { id: 'unserved', class: 'warning-box' },
      h('h3', { text: 'Unserved steps' }),
      h('p', {}, 'No live worker serves these steps: a task of this template waits at them until one does (see ',
        h('a', { href: '#/workers', text: 'Workers' }), ').'),
      table({ id: 'unserved-steps' }, ['step', 'namespace', 'handler'], unserved.map((u) => h('tr', { 'data-step': u.step },
        h('td', {}, h('strong', { text: u.step })),
        h('td', {}, h('code', { text: u.namespace })),
        h('td', {}, h('code', { text: u.handler })))), '')),
    section('Graph', h('div', { class: 'dag-wrap' }, dag)),
    childSteps.length > 0 && section('Child workflows', h('ul', { id: 'template-children', class: 'child-steps' },
      childSteps.map((st) => {
        const c = childTemplate(st.child);
        return h('li', { 'data-step': st.name },
          h('strong', { text: st.name }), ': child → ', h('a', { href: templateHref(c), text: templateLabel(c) }),
          !c.version && h('span', { class: 'muted', text: ' (the newest version when a task starts)' }),
          st.child.context != null &&
            [' · context ', h('code', { title: pretty(st.child.context), text: clip(JSON.stringify(st.child.context), 80) })],
          st.child.on_parent_cancel === 'abandon' && h('span', { class: 'muted', text: ' · keeps running if its parent is cancelled' }));
      }))),
    startForm(t),
    section('Definition', h('details', {}, h('summary', { text: `${steps.length} steps, retry policies, timeouts, context schema` }),
      h('pre', { text: pretty(def) }))));
}

// A value `schema` (JSON Schema) accepts, to start from: its `default`, `const`, first example
// or enum value, else one of its type: for an object, its required properties, each so.
function exampleOf(schema) {
  if (!schema || typeof schema !== 'object') return null;
  if ('default' in schema) return schema.default;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const alt = schema.oneOf || schema.anyOf;
  if (Array.isArray(alt) && alt.length) return exampleOf(alt[0]);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type || (schema.properties ? 'object' : null);
  if (type === 'object') {
    const props = schema.properties || {};
    return Object.fromEntries((schema.required || []).map((k) => [k, exampleOf(props[k])]));
  }
  if (type === 'integer' || type === 'number') return Math.min(Math.max(0, schema.minimum ?? 0), schema.maximum ?? Infinity); // 0 if allowed
  return { string: '', boolean: false, array: [] }[type] ?? null;
}

// "Start a task" of template `t`: its context (prefilled from the context schema), checked as
// JSON as it is typed, and an optional idempotency key; the API checks the context against the
// schema, and its refusal (a 422 lists the failing paths; a read-only token gets 403) is shown
// under the editor. A task started opens.
function startForm(t) {
  const context = h('textarea', { id: 'start-context', rows: 6, spellcheck: 'false', 'aria-label': 'Context (JSON)' });
  context.value = pretty(exampleOf(t.definition && t.definition.context_schema) ?? {});
  const key = h('input', { id: 'start-key', type: 'text', maxlength: 255, placeholder: 'optional',
    title: 'a task started again with the same key is the same task', 'aria-label': 'Idempotency key' });
  const submit = h('button', { id: 'start-submit', type: 'submit', class: 'primary', text: 'Start task' });
  const error = h('div', { id: 'start-error', class: 'form-error', role: 'alert', hidden: true });
  const fail = (e) => {
    error.replaceChildren();
    put(error, h('strong', { class: 'code', text: e.code }), ' ', h('span', { class: 'message', text: e.message }),
      e.details !== undefined && h('pre', { text: Array.isArray(e.details) ? e.details.join('\n') : pretty(e.details) }));
    error.hidden = false;
  };
  // The context as an object, or null with the reason shown (and nothing to submit).
  const parsed = () => {
    const [value, why] = jsonObject(context.value);
    submit.disabled = !!why;
    error.hidden = !why;
    if (why) fail({ code: 'invalid_json', message: `the context is ${why}` });
    return why ? null : value;
  };
  context.addEventListener('input', parsed);
  const send = async (e) => {
    e.preventDefault();
    const ctx = parsed();
    if (!ctx) return;
    const body = { namespace: t.namespace, name: t.name, version: t.version, context: ctx };
    if (key.value.trim()) body.idempotency_key = key.value.trim();
    submit.disabled = true;
    try {
      const task = await api('POST', '/v1/tasks', body);
      flash = `Task ${task.id} started.`;
      location.hash = taskHref(task.id);
    } catch (err) {
      fail(err);
      submit.disabled = false;
    }
  };
  return h('section', { id: 'start' }, h('h3', { text: 'Start a task' }),
    h('form', { class: 'start-form', onsubmit: send },
      h('label', { for: 'start-context', text: 'Context (JSON):' }), context, error,
      h('div', { class: 'row' }, h('label', {}, 'Idempotency key ', key), submit)));
}

// ---------- schedules ----------

const scheduleFilter = { namespace: '' }; // kept across views
const scheduleHref = (s) => `#/schedules/${enc(s.namespace)}/${enc(s.name)}`;
const scheduleLabel = (s) => `${s.namespace}/${s.name}`;

// The template a schedule starts: a link to its version, or "name @newest" (taken at each fire).
const scheduleTemplate = (s) => (s.version
  ? h('a', { class: 'quiet', href: templateHref({ namespace: s.namespace, name: s.template, version: s.version }), text: `${s.template}@${s.version}` })
  : h('span', {}, s.template, h('span', { class: 'muted', text: ' @newest' })));

const pausedBadge = (s) => h('span', { class: `badge state-${s.paused ? 'paused' : 'active'}`, text: s.paused ? 'paused' : 'active' });

// Pause (with an optional note), resume and trigger one schedule: its buttons. Pause and trigger
// ask first, in `panel` (`holder`, which holds it, is shown while it is open); a pause or resume
// ends with done(notice), a trigger opens the task it started.
function scheduleControls(s, panel, holder, done) {
  const label = scheduleLabel(s);
  const path = `/v1/schedules/${enc(s.namespace)}/${enc(s.name)}`;
  const close = () => { holder.hidden = true; panel.replaceChildren(); };
  const open = (...kids) => { panel.replaceChildren(); put(panel, kids); holder.hidden = false; };
  const cancel = () => h('button', { type: 'button', class: 'cancel', text: 'Cancel', onclick: close });
  // POST to one of its routes; `btn` stays disabled unless that fails.
  const post = async (btn, action, body, after) => {
    btn.disabled = true;
    clearError();
    try {
      after(await api('POST', `${path}/${action}`, body));
    } catch (e) {
      showError(e);
      btn.disabled = false;
    }
  };
  const askPause = () => {
    const note = h('input', { type: 'text', class: 'pause-note', maxlength: 1000, placeholder: 'note (optional): why, until when', 'aria-label': 'Pause note' });
    const ok = h('button', { type: 'submit', class: 'pause-confirm danger', text: 'Pause schedule' });
    const submit = (e) => {
      e.preventDefault();
      const text = note.value.trim();
      post(ok, 'pause', text ? { note: text } : {}, () => done(`Schedule ${label} paused.`));
    };
    open(h('form', { class: 'confirm-form', onsubmit: submit },
      h('span', {}, 'Pause ', h('strong', { text: label }), '? It starts no task until it is resumed.'), note, ok, cancel()));
    note.focus();
  };
  const askTrigger = () => {
    const ok = h('button', { type: 'button', class: 'trigger-confirm primary', text: 'Start a task now' });
    ok.addEventListener('click', () => post(ok, 'trigger', undefined, (task) => {
      flash = `Task ${task.id} started by schedule ${label}.`;
      location.hash = `#/tasks/${enc(task.id)}`;
    }));
    open(h('div', { class: 'confirm-form' },
      h('span', {}, 'Start a task of ', h('strong', { text: label }), ' now, whatever its overlap policy?'), ok, cancel()));
    ok.focus();
  };
  return [
    s.paused
      ? h('button', { type: 'button', class: 'resume', 'data-schedule': label, text: 'Resume',
        onclick: (e) => post(e.currentTarget, 'resume', undefined, () => done(`Schedule ${label} resumed.`)) })
      : h('button', { type: 'button', class: 'pause', 'data-schedule': label, text: 'Pause…', onclick: askPause }),
    h('button', { type: 'button', class: 'trigger', 'data-schedule': label, text: 'Trigger now…', onclick: askTrigger }),
  ];
}

// A list the API answers a page at a time shows its first page; a note says when there is more.
const more = (page, id, text) => page.next ? h('p', { id, class: 'muted hint', text }) : '';

// After a pause or resume: the same page again, with a notice.
const reloadWith = (notice) => { flash = notice; route(); };

async function schedulesView(root, signal) {
  const nsInput = h('input', { id: 'schedule-namespace', type: 'text', placeholder: 'namespace', 'aria-label': 'Namespace', value: scheduleFilter.namespace });
  const box = h('div');
  const heads = ['schedule', 'template', 'cron', 'overlap', 'next fire', 'last fire', 'fires', 'skipped', 'state', ''];
  let seq = 0;
  const load = async () => {
    const mine = ++seq;
    const q = scheduleFilter.namespace ? `?namespace=${enc(scheduleFilter.namespace)}` : '';
    const data = await api('GET', `/v1/schedules${q}`, undefined, signal);
    if (signal.aborted || mine !== seq) return;
    box.replaceChildren(table({ id: 'schedules' }, heads, data.schedules.flatMap((s) => {
      const panel = h('div', { class: 'confirm' });
      const holder = h('tr', { class: 'confirm-row', 'data-confirm-for': scheduleLabel(s), hidden: true },
        h('td', { colspan: heads.length }, panel));
      // A click anywhere on the row but its links and buttons opens the schedule.
      const open = (e) => { if (!e.target.closest('a, button')) location.hash = scheduleHref(s); };
      const row = h('tr', { class: 'clickable', 'data-schedule': scheduleLabel(s), 'data-paused': String(!!s.paused), onclick: open },
        h('td', {}, h('a', { href: scheduleHref(s), text: scheduleLabel(s) })),
        h('td', {}, scheduleTemplate(s)),
        h('td', { class: 'cron' }, h('code', { text: s.cron }), ' ', h('span', { class: 'muted', text: s.timezone })),
        h('td', { text: s.overlap }),
        h('td', { class: s.paused ? 'next-fire muted' : 'next-fire' },
          s.next_fire_at ? [timeEl(s.next_fire_at), ' ', h('span', { class: 'muted' }, relEl(s.next_fire_at))] : s.paused ? 'paused' : '—'),
        h('td', { class: 'last-fire' },
          s.last_fire_at ? [timeEl(s.last_fire_at), ' ', h('span', { class: 'muted' }, relEl(s.last_fire_at))] : '—',
          s.last_task_id && [' ', h('a', { class: 'mono last-task', href: `#/tasks/${enc(s.last_task_id)}`, title: s.last_task_id, text: `${s.last_task_id.slice(0, 8)}…` })]),
        h('td', { class: 'num', text: String(s.fires ?? '—') }),
        h('td', { class: 'num', text: String(s.skipped ?? '—') }),
        h('td', { class: 'paused-state' }, pausedBadge(s), s.paused && s.note && h('span', { class: 'note', text: ` ${s.note}` })),
        h('td', { class: 'row-actions' }, scheduleControls(s, panel, holder, reloadWith)));
      return [row, holder];
    }), scheduleFilter.namespace ? `No schedules in ${scheduleFilter.namespace}.` : 'No schedules.'),
    more(data, 'schedules-more', `The first ${data.schedules.length} schedules; filter by namespace to see the others.`));
  };
  const apply = () => {
    scheduleFilter.namespace = nsInput.value.trim();
    load().catch(showError);
  };
  nsInput.addEventListener('change', apply);
  put(root, h('h1', { text: 'Schedules' }), h('div', { class: 'toolbar' },
    h('form', { class: 'filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
      nsInput, h('button', { type: 'submit', text: 'Apply' })),
    h('button', { id: 'refresh', type: 'button', text: 'Refresh', onclick: () => load().catch(showError) })), box);
  await load();
}

async function scheduleView(root, signal, namespace, name) {
  const s = await api('GET', `/v1/schedules/${enc(namespace)}/${enc(name)}`, undefined, signal);
  if (signal.aborted) return;
  // A time: local, how far, and as the schedule's own time zone shows it.
  const when = (iso) => {
    if (!iso) return '—';
    const zoned = fmtInZone(iso, s.timezone);
    return [timeEl(iso), ' (', relEl(iso), ')', zoned && h('span', { class: 'muted', text: ` · ${zoned}` })];
  };
  const panel = h('div', { class: 'confirm', hidden: true });
  const upcoming = s.upcoming || [];
  put(root,
    h('div', { class: 'task-head' }, h('h1', {}, 'Schedule ', h('span', { class: 'mono', text: scheduleLabel(s) })), pausedBadge(s)),
    dl([
      ['template', scheduleTemplate(s)],
      ['version', s.version || 'the newest at each fire'],
      ['cron', h('code', { id: 'schedule-cron', text: s.cron })],
      ['time zone', s.timezone],
      ['overlap', s.overlap],
      ['catch up', s.catch_up],
      ['paused', s.paused ? ['yes', s.note ? h('span', { class: 'note', text: ` — ${s.note}` }) : ''] : 'no'],
      ['next fire', h('span', { id: 'next-fire' }, s.next_fire_at || !s.paused ? when(s.next_fire_at) : 'none while paused')],
      ['buffered fire', s.buffered_at ? h('span', { title: 'a fire waiting for the open task to end (overlap buffer_one)' }, when(s.buffered_at)) : null],
      ['last fire', [when(s.last_fire_at),
        s.last_task_id && [' — task ', h('a', { class: 'mono', href: `#/tasks/${enc(s.last_task_id)}`, text: s.last_task_id })]]],
      ['fires', String(s.fires ?? '—')],
      ['skipped', String(s.skipped ?? '—')],
      ['created', timeEl(s.created_at)],
      ['updated', timeEl(s.updated_at)],
      ['updated by', s.updated_by],
    ]),
    h('div', { class: 'actions' }, scheduleControls(s, panel, panel, reloadWith),
      h('button', { type: 'button', text: 'Tasks of its template', onclick: () => showTasksOf(s.namespace, s.template) })),
    panel,
    section('Upcoming', upcoming.length
      ? h('ol', { id: 'upcoming', class: 'upcoming' }, upcoming.map((t) => h('li', {}, when(t))))
      : h('p', { class: 'muted', text: s.paused ? 'None while paused.' : 'No fire times ahead.' })),
    section('Context', h('pre', { id: 'schedule-context', text: pretty(s.context ?? {}) })));
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
  }).start();
}

async function deadLetterView(root, signal, id) {
  const d = await api('GET', `/v1/dead-letters/${enc(id)}`, undefined, signal);
  if (signal.aborted) return;
  const body = 'body' in d ? ['Body (JSON)', pretty(d.body)] : 'body_text' in d ? ['Body (text)', d.body_text]
    : ['Body (base64)', d.body_base64 || ''];
  const panel = h('div', { id: 'discard-panel', class: 'confirm', hidden: true });
  // Replay or discard (asked first), then back to the list with a notice.
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
      ['sender', h('span', { class: 'mono', text: d.sender || 'none (replaying it could move nothing)' })],
      ['namespaces', (d.namespaces || []).join(', ') || 'unknown (tokens of every namespace only)'],
      ['task', d.task_id ? h('a', { class: 'mono', href: `#/tasks/${enc(d.task_id)}`, text: d.task_id }) : null],
      ['step', d.step_id ? h('span', { class: 'mono', text: d.step_id }) : null],
      ['first seen', timeEl(d.first_seen)], ['last seen', timeEl(d.last_seen)],
      ['times seen', String(d.times_seen)], ['bytes', String(d.bytes)],
    ]),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'replay primary', 'data-id': d.id, text: 'Replay to its queue',
        onclick: act('POST', `/v1/dead-letters/${enc(d.id)}/replay`, (r) => `Dead letter ${d.id} replayed to ${(r && r.queue) || d.queue}.`) }),
      h('button', { type: 'button', class: 'discard danger', 'data-id': d.id, text: 'Discard…', onclick: () => confirmIn(panel,
        ['Discard dead letter ', h('strong', { text: String(d.id) }), '? Its message is deleted; this cannot be undone.'],
        h('button', { id: 'discard-confirm', type: 'button', class: 'danger', text: 'Discard',
          onclick: act('DELETE', `/v1/dead-letters/${enc(d.id)}`, () => `Dead letter ${d.id} discarded.`) })) })),
    panel,
    section('Headers', h('pre', { class: 'headers', text: pretty(d.headers) })),
    section(body[0], h('pre', { class: 'body', text: body[1] })));
}

// ---------- workers ----------

const workerFilter = { all: false }; // kept across views
const HANDLERS_SHOWN = 4; // a longer list of handlers is folded

// The workers (GET /v1/workers; with `all`, those not seen lately too), fetched again every
// heartbeat (2 to 30 s) while the page is open; a handler list unfolded stays so.
async function workersView(root, signal) {
  const allBox = h('input', { id: 'workers-all', type: 'checkbox', checked: workerFilter.all });
  const box = h('div');
  const status = h('span', { id: 'workers-status', class: 'muted' });
  const unfolded = new Set();
  const heads = ['worker', 'language', 'version', 'host / pid', 'namespaces', 'handlers', 'concurrency', 'started', 'last seen', ''];
  let every = 5000;
  const handlersCell = (w) => {
    const list = w.handlers || [];
    const codes = list.map((x) => [h('code', { text: x }), ' ']);
    if (list.length <= HANDLERS_SHOWN) return codes;
    const details = h('details', { open: unfolded.has(w.id) }, h('summary', { text: `${list.length} handlers` }), codes);
    details.addEventListener('toggle', () => (details.open ? unfolded.add(w.id) : unfolded.delete(w.id)));
    return details;
  };
  const row = (w) => h('tr', { 'data-worker-id': w.id, 'data-name': w.name, 'data-live': String(!!w.live), class: w.live ? null : 'stale' },
    h('td', {}, h('strong', { class: 'worker-name', text: w.name })),
    h('td', { class: 'language', text: w.language }),
    h('td', { class: 'mono', text: w.version }),
    h('td', { class: 'mono host', text: `${w.host} / ${w.pid}` }),
    h('td', { class: 'namespaces' }, (w.namespaces || []).map((ns) => [h('code', { class: 'namespace', text: ns }), ' '])),
    h('td', { class: 'handlers' }, handlersCell(w)),
    h('td', { class: 'num', text: String(w.concurrency ?? '—') }),
    h('td', {}, timeEl(w.started_at)),
    h('td', { class: 'last-seen', title: w.heartbeat_ms ? `reports every ${w.heartbeat_ms / 1000} s` : null }, relEl(w.last_seen_at) || '—'),
    h('td', {}, h('span', { class: `badge live-badge state-${w.live ? 'live' : 'stale'}`, text: w.live ? 'live' : 'not live' })));
  const load = async (current) => {
    const data = await api('GET', `/v1/workers${workerFilter.all ? '?all=true' : ''}`, undefined, signal);
    if (!current()) return;
    // Live ones first, then by name.
    const workers = [...(data.workers || [])].sort((a, b) => (b.live === true) - (a.live === true) ||
      String(a.name).localeCompare(String(b.name)) || String(a.host).localeCompare(String(b.host)) || (a.pid - b.pid));
    // The answer's heartbeat, else the shortest of the workers' own (`heartbeat_ms`).
    const beat = Number(data.heartbeat_seconds) ||
      Math.min(...workers.map((w) => Number(w.heartbeat_ms) / 1000).filter((x) => x > 0));
    if (isFinite(beat) && beat > 0) every = Math.min(30, Math.max(2, beat)) * 1000;
    const live = workers.filter((w) => w.live).length;
    status.replaceChildren(`${live} live`, workerFilter.all ? ` of ${workers.length}` : '',
      isFinite(beat) && beat > 0 ? ` · heartbeat every ${+beat.toFixed(1)} s` : '', ` · updated ${fmtShort(new Date().toISOString())}`);
    box.replaceChildren(table({ id: 'workers' }, heads, workers.map(row),
      workerFilter.all ? 'No worker seen in the last 24 hours.' : 'No live worker.'));
  };
  const { again, start } = refreshing(signal, load, () => every);
  allBox.addEventListener('change', () => { workerFilter.all = allBox.checked; again(); });
  put(root, h('h1', { text: 'Workers' }), h('div', { class: 'toolbar' },
    h('label', { class: 'check' }, allBox, ' also workers not seen lately (last 24 h)'),
    h('button', { id: 'refresh', type: 'button', text: 'Refresh', onclick: again }),
    status), box);
  await start();
}

// ---------- limits ----------

const limitFilter = { key: '' }; // kept across views
const LIMITS_EVERY = 5000; // the page is fetched again this often while it is open

// A rate key is paused while its `paused_until` is ahead.
const isPaused = (r) => isFinite(ms(r.paused_until)) && ms(r.paused_until) > Date.now();

// A local time for <input type="datetime-local">: "2025-02-01T14:05".
function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

// Pause one rate key (for some minutes or until a time, with an optional note) in `panel`
// (`holder`, which holds it, is shown while it is open), or resume it: its button. A pause asks
// for confirmation in a dialog before it is sent; both end with done(notice). `onOpen(open)`
// says when the form opens and closes (the page is not redrawn under it).
function rateControls(r, panel, holder, done, onOpen) {
  const path = `/v1/rate-limits/${enc(r.key)}/pause`;
  const close = () => { holder.hidden = true; panel.replaceChildren(); onOpen(false); };
  // The request; `btn` stays disabled unless it fails.
  const send = async (btn, method, body, notice) => {
    btn.disabled = true;
    clearError();
    try {
      const after = await api(method, path, body);
      onOpen(false);
      done(notice(after || r));
    } catch (e) {
      showError(e);
      btn.disabled = false;
    }
  };
  const askPause = () => {
    const mode = h('select', { class: 'pause-mode', 'aria-label': 'Pause for or until' },
      h('option', { value: 'for', text: 'for', selected: true }), h('option', { value: 'until', text: 'until' }));
    const minutes = h('input', { type: 'number', class: 'pause-minutes', min: 1, max: 525600, step: 1, value: 5, 'aria-label': 'Minutes' });
    const minutesLabel = h('span', { class: 'pause-for' }, minutes, ' minutes');
    const until = h('input', { type: 'datetime-local', class: 'pause-until', hidden: true, 'aria-label': 'Paused until',
      value: localInput(new Date(Date.now() + 3600000)) });
    const note = h('input', { type: 'text', class: 'pause-note', maxlength: 1000, placeholder: 'note (optional): why, e.g. 429 from the provider', 'aria-label': 'Pause note' });
    const ok = h('button', { type: 'submit', class: 'pause-confirm danger', text: 'Pause rate limit' });
    mode.addEventListener('change', () => {
      minutesLabel.hidden = mode.value !== 'for';
      until.hidden = mode.value !== 'until';
    });
    const submit = (e) => {
      e.preventDefault();
      // The end of the pause; a value the browser cannot read is refused here (nothing sent), one
      // the API refuses (in the past, over a year ahead) shows its error.
      let at;
      if (mode.value === 'for') {
        const n = Number(minutes.value);
        if (!(n > 0)) return showError(new ApiError(0, 'invalid_request', 'the pause needs a number of minutes above 0'));
        at = new Date(Math.round((Date.now() + n * 60000) / 1000) * 1000); // to the second
      } else {
        at = new Date(until.value); // a local time
        if (!until.value || isNaN(at)) return showError(new ApiError(0, 'invalid_request', 'the pause needs a time to end at'));
      }
      const body = { until: at.toISOString() };
      if (note.value.trim()) body.note = note.value.trim();
      if (!window.confirm(`Pause rate limit ${r.key} until ${fmtShort(body.until)} (${fmtRel(body.until)})? No step of it starts before then.`)) return;
      send(ok, 'POST', body, (p) => `Rate limit ${r.key} paused until ${fmtShort(p.paused_until || body.until)}.`);
    };
    panel.replaceChildren();
    put(panel, h('form', { class: 'confirm-form', onsubmit: submit },
      h('span', {}, 'Pause ', h('strong', { text: r.key }), ': no step of it starts before the end of the pause.'),
      mode, minutesLabel, until, note, ok,
      h('button', { type: 'button', class: 'cancel', text: 'Cancel', onclick: close })));
    holder.hidden = false;
    onOpen(true);
    minutes.focus();
  };
  return isPaused(r)
    ? h('button', { type: 'button', class: 'resume', 'data-key': r.key, text: 'Resume',
      onclick: (e) => send(e.currentTarget, 'DELETE', undefined, () => `Rate limit ${r.key} resumed.`) })
    : h('button', { type: 'button', class: 'pause', 'data-key': r.key, text: 'Pause…', onclick: askPause });
}

// The concurrency keys (GET /v1/concurrency-limits, `?key=` a prefix) and the rate keys
// (GET /v1/rate-limits), fetched again every few seconds while the page is open; the rate
// table is not redrawn while a pause form is open in it.
async function limitsView(root, signal) {
  const keyInput = h('input', { id: 'limits-key', type: 'text', placeholder: 'concurrency key prefix', 'aria-label': 'Concurrency key prefix', value: limitFilter.key });
  const concurrencyBox = h('div');
  const rateBox = h('div');
  const status = h('span', { id: 'limits-status', class: 'muted' });
  const rateHeads = ['key', 'rate', 'burst', 'paused', 'throttled', ''];
  let formOpen = false;
  const concurrencyRow = (c) => {
    const full = c.in_use >= c.limit;
    return h('tr', { 'data-key': c.key, 'data-in-use': String(c.in_use), 'data-limit': String(c.limit), class: full ? 'full' : null },
      h('td', {}, h('code', { class: 'limit-key', text: c.key })),
      h('td', { class: 'num in-use', title: full ? 'every slot in use' : null, text: `${c.in_use} / ${c.limit}` }),
      h('td', { class: 'num throttled', text: String(c.throttled ?? 0) }));
  };
  const rateRows = (r) => {
    const paused = isPaused(r);
    const panel = h('div', { class: 'confirm' });
    const holder = h('tr', { class: 'confirm-row', 'data-confirm-for': r.key, hidden: true }, h('td', { colspan: rateHeads.length }, panel));
    const row = h('tr', { 'data-key': r.key, 'data-paused': String(paused) },
      h('td', {}, h('code', { class: 'limit-key', text: r.key })),
      h('td', { class: 'rate', text: `${r.limit} per ${fmtPer(r.per_ms)}` }),
      h('td', { class: 'num burst', text: String(r.burst ?? r.limit) }),
      h('td', { class: 'paused-state' }, paused
        ? [h('span', { class: 'badge state-paused', text: 'paused' }), ' until ', atEl(r.paused_until),
          r.pause_note && h('span', { class: 'note', text: ` ${r.pause_note}` })]
        : h('span', { class: 'muted', text: '—' })),
      h('td', { class: 'num throttled', text: String(r.throttled ?? 0) }),
      h('td', { class: 'row-actions' }, rateControls(r, panel, holder, reloadWith, (open) => { formOpen = open; })));
    return [row, holder];
  };
  const load = async (current) => {
    const q = limitFilter.key ? `?key=${enc(limitFilter.key)}` : '';
    const [conc, rate] = await Promise.all([
      api('GET', `/v1/concurrency-limits${q}`, undefined, signal),
      api('GET', '/v1/rate-limits', undefined, signal),
    ]);
    if (!current()) return;
    const cs = conc.limits || [];
    const rs = rate.limits || [];
    concurrencyBox.replaceChildren(table({ id: 'concurrency-limits' }, ['key', 'in use / limit', 'throttled'], cs.map(concurrencyRow),
      limitFilter.key ? `No concurrency key starting with ${limitFilter.key} in use.` : 'No concurrency key in use.'),
    more(conc, 'concurrency-more', `The first ${cs.length} keys; narrow them with a key prefix to see the others.`));
    if (!formOpen) rateBox.replaceChildren(table({ id: 'rate-limits' }, rateHeads, rs.flatMap(rateRows), 'No rate limit used yet.'),
      more(rate, 'rate-more', `The ${rs.length} rate keys used most recently; the others are older.`));
    status.textContent = `${cs.length} concurrency ${cs.length === 1 ? 'key' : 'keys'} · ${rs.length} rate ${rs.length === 1 ? 'key' : 'keys'}` +
      ` · updated ${fmtShort(new Date().toISOString())}`;
  };
  const { again, start } = refreshing(signal, load, () => LIMITS_EVERY);
  const apply = () => { limitFilter.key = keyInput.value.trim(); again(); };
  keyInput.addEventListener('change', apply);
  put(root, h('h1', { text: 'Limits' }), h('div', { class: 'toolbar' },
    h('form', { class: 'filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
      keyInput, h('button', { type: 'submit', text: 'Apply' })),
    h('button', { id: 'refresh', type: 'button', text: 'Refresh', onclick: again }),
    status),
  section('Concurrency', h('p', { class: 'muted hint' },
    'Keys with a slot in use or a step throttled, and the most recently used. A step without a free slot waits ',
    badge('throttled'), ' and starts when one frees, by priority then age.'), concurrencyBox),
  section('Rate limits', h('p', { class: 'muted hint' },
    'A pause (after a provider answered 429, say) starts no step of its key before its end; Resume ends it now.'), rateBox));
  await start();
}

// ---------- retention ----------

const RETENTION_EVERY = 30000; // the page is fetched again this often while it is open

// A retention as configured ("30d", "1h30m") or "never".
const isNever = (v) => String(v).trim() === 'never';
// How long finished tasks of a state are kept: "kept 30d", or "never purged".
const keptFor = (v) => (isNever(v) ? 'never purged' : `kept ${v}`);
// How often an orchestrator looks: "60 s", "1.5 s", then "10 min", "1 h" (fmtPer).
const fmtEvery = (v) => (v == null || !isFinite(v) ? '—' : v < 600000 ? `${+(v / 1000).toFixed(1)} s` : fmtPer(v));

// The retention policy the orchestrators run (GET /v1/retention): how long finished tasks of each
// state are kept before they are purged, how long a purged task's id answers 410 task_purged, the
// purge's pace and when a task was last purged; fetched again every 30 s while the page is open.
async function retentionView(root, signal) {
  const box = h('div', { id: 'retention' });
  const status = h('span', { id: 'retention-status', class: 'muted' });
  const load = async (current) => {
    const r = await api('GET', '/v1/retention', undefined, signal);
    if (!current()) return;
    const kept = (state) => h('span', { id: `retention-${state}`, 'data-kept': r[state], text: keptFor(r[state]) });
    box.replaceChildren(dl([
      ['Completed tasks', kept('complete')],
      ['Failed tasks', kept('error')],
      ['Cancelled tasks', kept('cancelled')],
      ['Purged ids', h('span', { id: 'retention-tombstones', 'data-kept': r.tombstones,
        text: isNever(r.tombstones) ? 'answer 410 forever' : `answer 410 for ${r.tombstones}` })],
      ['Audit log', r.audit ? h('span', { id: 'retention-audit', 'data-kept': r.audit, text: keptFor(r.audit) }) : null],
      ['Pace', h('span', { id: 'retention-pace',
        text: `${r.batch} ${r.batch === 1 ? 'task' : 'tasks'} a batch, at most ${r.busy_percent}% of the time, every ${fmtEvery(r.interval_ms)}` })],
      ['Last purge', h('span', { id: 'retention-last', 'data-purged-at': r.last_purged_at },
        r.last_purged_at ? [timeEl(r.last_purged_at), ' (', relEl(r.last_purged_at), ')']
          : h('span', { class: 'muted', text: 'No purged task remembered' }))],
    ]));
    status.textContent = `updated ${fmtShort(new Date().toISOString())}`;
  };
  const { again, start } = refreshing(signal, load, () => RETENTION_EVERY);
  put(root, h('h1', { text: 'Retention' }), h('div', { class: 'toolbar' },
    h('button', { id: 'refresh', type: 'button', text: 'Refresh', onclick: again }),
    status),
  h('p', { class: 'muted hint' },
    'An orchestrator purges a finished task (with its steps, history, signals and dead letters) this long after it finished, as its ',
    h('code', { text: '[retention]' }), ' configuration says; the purged task\'s id then answers 410 task_purged while its tombstone is kept.'),
  box);
  await start();
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
setInterval(tickRelative, 5000);
route();

