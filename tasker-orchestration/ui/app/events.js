// The events page (#/events): the events sent to namespaces (POST /v1/events), newest first, each
// with what it started — a task of every template whose trigger (`on:`) matched it, or why that
// template started none — filtered by namespace and name in the page's address
// (#/events?namespace=…&name=…) and paged back in time ("Older"); and one event's page
// (#/events/{id}): its data and what it started, each refusal with its message, and the wait
// step that took it.

const EVENTS_PAGE = 50; // events a page
const EVENT_FILTERS = ['namespace', 'name'];

// The list's filter, from the page's address.
function eventFilter() {
  const q = routeQuery();
  const f = {};
  for (const k of EVENT_FILTERS) if (q.get(k)) f[k] = q.get(k);
  return f;
}

// The address of the events list filtered on `f` ({namespace?, name?}, in that order of keys).
function eventsHref(f) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
  const text = q.toString();
  return text ? `#/events?${text}` : '#/events';
}

const eventHref = (id) => `#/events/${enc(id)}`;

// A started entry's template (`namespace/name@version`): a link to that version's page.
function startedTemplate(label) {
  const slash = label.indexOf('/');
  const at = label.lastIndexOf('@');
  if (slash < 1 || at <= slash + 1) return h('span', { class: 'mono', text: label });
  const t = { namespace: label.slice(0, slash), name: label.slice(slash + 1, at), version: label.slice(at + 1) };
  return h('a', { class: 'started-template', href: templateHref(t), text: label });
}

// What an event started, in a list's cell: a link to each task started, each refusal's code (its
// template and message in the title), or "none" when no trigger matched it.
function eventStarts(e) {
  const started = e.started || [];
  if (!started.length) return h('span', { class: 'muted event-none', text: 'none' });
  return started.map((s, i) => [i ? ' ' : null, s.task_id
    ? h('a', { class: 'mono event-task', href: taskHref(s.task_id), 'data-outcome': startOutcome(s).split(':')[0],
      title: `${s.template}: ${startOutcome(s)} ${s.task_id}`, text: `${s.task_id.slice(0, 8)}…${s.debounced || s.deduplicated ? ' ↺' : ''}` })
    : h('span', { class: 'event-refused', 'data-code': s.refused ? s.refused.code : '',
      title: `${s.template}: ${s.refused ? s.refused.message : 'no task'}`, text: s.refused ? s.refused.code : 'no task' })]);
}

// An event's row; a click on it (but on its links) opens the event.
function eventRow(e) {
  const open = (ev) => { if (!ev.target.closest('a, button')) location.hash = eventHref(e.id); };
  return h('tr', { class: 'clickable', 'data-event-id': e.id, onclick: open },
    h('td', { class: 'event-received' }, h('a', { href: eventHref(e.id), title: e.id }, timeEl(e.received_at))),
    h('td', { class: 'event-namespace' }, h('a', { class: 'quiet', href: eventsHref({ namespace: e.namespace }), text: e.namespace })),
    h('td', { class: 'mono event-name', text: e.name }),
    h('td', { class: 'mono event-key', title: e.key }, e.key != null ? clip(e.key, 80) : h('span', { class: 'muted', text: '—' })),
    h('td', { class: 'event-started' }, eventStarts(e)));
}

async function eventsView(root, signal) {
  const f = eventFilter();
  const box = h('div');
  const input = (key, placeholder, label) => h('input', { id: `events-${key}`, type: 'text', placeholder,
    'aria-label': label, value: f[key] || '' });
  const ns = input('namespace', 'namespace', 'Namespace');
  const name = input('name', 'event name', 'Event name');
  const apply = (ev) => {
    ev.preventDefault();
    location.hash = eventsHref({ namespace: ns.value.trim(), name: name.value.trim() });
  };
  put(root, h('h1', { text: 'Events' }),
    h('div', { class: 'toolbar' }, h('form', { class: 'filters', onsubmit: apply }, ns, name,
      h('button', { type: 'submit', text: 'Apply' }),
      Object.keys(f).length > 0 && h('a', { id: 'events-all', href: '#/events', text: 'all events' }))),
    h('p', { class: 'muted hint', text: 'Events sent to a namespace, newest first, with what each started: a task of '
      + 'every template whose trigger matched it, or why that template started none.' }),
    box);
  const listed = new URLSearchParams(f).toString();
  await pagedList(box, signal, {
    id: 'events', key: 'events', empty: Object.keys(f).length ? 'No events match this filter.' : 'No events yet.',
    heads: ['received', 'namespace', 'name', 'key', 'started'],
    pages: { first: '« Newest', next: 'Older »' },
    url: (before) => `/v1/events/log?limit=${EVENTS_PAGE}${listed ? `&${listed}` : ''}${before != null ? `&before=${enc(before)}` : ''}`,
    row: eventRow,
  }).start();
}

// One started entry of an event's page: its template, the task it started, or why it started none.
function startedRow(s) {
  const r = s.refused;
  return h('tr', { 'data-template': s.template },
    h('td', {}, startedTemplate(s.template)),
    h('td', {}, s.task_id ? h('a', { class: 'mono event-task', href: taskHref(s.task_id), text: s.task_id }) : '—'),
    h('td', { class: 'refusal' }, r
      ? [h('strong', { class: 'code', text: r.code }), ' ', h('span', { class: 'message', text: r.message }),
        r.details != null && h('pre', { class: 'error', text: pretty(r.details) })]
      : h('span', { class: 'muted event-outcome', text: startOutcome(s) })));
}

// How an entry that names a task got it: started it, or a start control answered another's.
const startOutcome = (s) => (s.debounced ? 'debounced: its burst’s task'
  : s.deduplicated ? 'deduplicated: its key’s task' : 'started');

async function eventView(root, signal, id) {
  const e = await api('GET', `/v1/events/${enc(id)}`, undefined, signal);
  if (signal.aborted) return;
  const started = e.started || [];
  put(root,
    h('div', { class: 'task-head' }, h('h1', {}, 'Event ', h('span', { class: 'mono', text: e.name })),
      h('span', { class: 'mono muted', text: e.id })),
    dl([
      ['namespace', h('a', { id: 'event-namespace', href: eventsHref({ namespace: e.namespace }), text: e.namespace })],
      ['name', h('a', { id: 'event-name', class: 'mono', href: eventsHref({ namespace: e.namespace, name: e.name }), text: e.name })],
      ['key', e.key != null ? h('span', { id: 'event-key', class: 'mono', text: e.key }) : null],
      ['sender’s id', e.sender_id != null ? h('span', { class: 'mono', text: e.sender_id }) : null],
      ['received', [timeEl(e.received_at), ' ', h('span', { class: 'muted' }, relEl(e.received_at))]],
      // The wait step that took it, if one did (an event serves one wait).
      ['taken by', e.taken_by ? h('span', { id: 'event-taken-by' }, 'step ', h('strong', { text: e.taken_by.step }),
        ' of task ', h('a', { class: 'mono', href: taskHref(e.taken_by.task_id), text: e.taken_by.task_id }),
        ' ', timeEl(e.taken_by.at)) : null],
    ]),
    section(`Started (${started.length})`, table({ id: 'event-started' }, ['template', 'task', 'outcome'],
      started.map(startedRow), 'No template’s trigger matched it: it started nothing.')),
    section('Data (JSON)', h('pre', { id: 'event-data', class: 'body', text: pretty(e.data) })),
    h('p', {}, h('a', { href: '#/events', text: '« All events' })));
}
