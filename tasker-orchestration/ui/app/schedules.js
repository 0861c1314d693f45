// The schedules page (#/schedules) and one schedule's page: pause, resume and trigger.

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

// The schedules list's columns (see fitTable; their widths are in lists.css).
const SCHEDULE_COLS = [['schedule', 'schedule'], ['template', 'template'], ['cron', 'cron'], ['context', 'context'],
  ['overlap', 'overlap'], ['next', 'next fire'], ['last', 'last fire'], ['fires', 'fires'], ['skipped', 'skipped'],
  ['state', 'state'], ['actions', '']];
const SCHEDULES_FETCH = 1000; // schedules a request (the API's most)
const SCHEDULES_MAX_FETCHES = 20; // requests a load at most: 20,000 schedules

// Every schedule (the API answers a page at a time: its pages followed), and whether that is all
// of them (false past SCHEDULES_MAX_FETCHES requests).
async function allSchedules(signal) {
  const schedules = [];
  let after = null;
  for (let n = 0; n < SCHEDULES_MAX_FETCHES; n++) {
    const q = new URLSearchParams({ limit: String(SCHEDULES_FETCH) });
    if (after) q.set('after', after);
    const data = await api('GET', `/v1/schedules?${q}`, undefined, signal);
    schedules.push(...data.schedules);
    if (!data.next) return { schedules, complete: true };
    after = data.next;
  }
  return { schedules, complete: false };
}

// A schedule's row in the list, and the row under it that holds its confirmations. Long text
// (names, cron, context, a pause note) is clipped to its column, whole in its title.
function scheduleRow(s) {
  const label = scheduleLabel(s);
  const panel = h('div', { class: 'confirm' });
  const holder = h('tr', { class: 'confirm-row', 'data-confirm-for': label, hidden: true },
    h('td', { colspan: SCHEDULE_COLS.length }, panel));
  const context = JSON.stringify(s.context ?? {});
  // A click anywhere on the row but its links and buttons opens the schedule.
  const open = (e) => { if (!e.target.closest('a, button')) location.hash = scheduleHref(s); };
  const row = h('tr', { class: 'clickable', 'data-schedule': label, 'data-paused': String(!!s.paused), onclick: open },
    h('td', {}, clipped(label, {}, h('a', { href: scheduleHref(s), text: label }))),
    h('td', {}, clipped(`${s.template}@${s.version || 'newest'}`, {}, scheduleTemplate(s))),
    h('td', { class: 'cron' }, clipped(s.cron, {}, h('code', { text: s.cron })), ' ',
      clipped(s.timezone, { class: 'clip muted' })),
    h('td', { class: 'context' }, clipped(clip(pretty(s.context ?? {}), 2000), {}, h('code', { text: clip(context, 200) }))),
    h('td', { class: 'overlap' }, clipped(s.overlap)),
    h('td', { class: s.paused ? 'next-fire muted' : 'next-fire' },
      s.next_fire_at ? [timeEl(s.next_fire_at), ' ', h('span', { class: 'muted' }, relEl(s.next_fire_at))] : s.paused ? 'paused' : '—'),
    h('td', { class: 'last-fire' },
      s.last_fire_at ? [timeEl(s.last_fire_at), ' ', h('span', { class: 'muted' }, relEl(s.last_fire_at))] : '—',
      s.last_task_id && [' ', h('a', { class: 'mono last-task', href: `#/tasks/${enc(s.last_task_id)}`, title: s.last_task_id, text: `${s.last_task_id.slice(0, 8)}…` })]),
    h('td', { class: 'num', text: String(s.fires ?? '—') }),
    h('td', { class: 'num', text: String(s.skipped ?? '—') }),
    h('td', { class: 'paused-state' }, pausedBadge(s), s.paused && s.note && clipped(s.note, { class: 'clip note' }, ` ${s.note}`)),
    h('td', { class: 'row-actions' }, scheduleControls(s, panel, holder, reloadWith)));
  return [row, holder];
}

// Every schedule, searched by namespace/name and paged in the browser; the search and the page
// are in the address (#/schedules?q=…&page=2), which a pause or resume (drawn again) keeps.
async function schedulesView(root, signal) {
  const list = searchedList({
    path: 'schedules', id: 'schedules', searchId: 'schedules-search', noun: 'schedules',
    empty: 'No schedules.', cols: SCHEDULE_COLS, label: scheduleLabel, row: scheduleRow,
  });
  const partial = h('p', { id: 'schedules-more', class: 'muted hint', hidden: true });
  let seq = 0;
  const load = async () => {
    const mine = ++seq;
    const { schedules, complete } = await allSchedules(signal);
    if (signal.aborted || mine !== seq) return;
    partial.hidden = complete;
    partial.textContent = complete ? '' : `The first ${schedules.length} schedules only: search within them.`;
    list.show(schedules);
  };
  put(root, h('h1', { text: 'Schedules' }), h('div', { class: 'toolbar' }, list.search,
    h('button', { id: 'refresh', type: 'button', text: 'Refresh', onclick: () => load().catch(showError) })), partial, list.box);
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
