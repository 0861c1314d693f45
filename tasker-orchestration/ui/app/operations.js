// Operations by filter (#/operations, #/operations/{id}): the bar on the task list that retries
// or cancels every task matching its filter, an operation's progress, and the list of them.

const OPERATION_EVERY = 1000; // a running operation's page is fetched again this often
// What each state filter of the task list can be acted on with.
const ACTIONS_OF_STATE = { error: ['retry'], running: ['cancel'], scheduled: ['cancel'] };
const capitalized = (s) => s.charAt(0).toUpperCase() + s.slice(1);

// The task list's filter as an operation takes it (times as RFC 3339 UTC, the context parsed).
function operationFilter() {
  const f = {};
  for (const k of ['state', 'namespace', 'name']) if (taskFilter[k]) f[k] = taskFilter[k];
  if (taskFilter.after) f.created_after = new Date(taskFilter.after).toISOString();
  if (taskFilter.before) f.created_before = new Date(taskFilter.before).toISOString();
  if (taskFilter.context) f.context = jsonObject(taskFilter.context)[0];
  return f;
}

// Under the task list's filters: with the state filter on error, "Retry all matching…"; on
// running or scheduled, "Cancel all matching…"; else a hint.
function bulkBar() {
  const actions = ACTIONS_OF_STATE[taskFilter.state] || [];
  if (!actions.length) {
    return h('p', { id: 'bulk-hint', class: 'muted hint',
      text: 'Filter on state error (retry), running or scheduled (cancel) to act on every matching task at once.' });
  }
  const panel = h('div', { id: 'bulk-confirm', class: 'confirm', hidden: true });
  return h('div', { id: 'bulk-bar', class: 'bulk-bar' },
    actions.map((action) => h('button', { type: 'button', class: `bulk-${action}`, 'data-action': action,
      text: `${capitalized(action)} all matching…`, onclick: () => askBulk(panel, action, operationFilter(), 'tasks') })),
    panel);
}

// Counts the tasks (or dead letters: `noun`) the filter matches (a dry run), then asks with the
// count and a reason; the operation it starts opens on its page.
async function askBulk(panel, action, filter, noun) {
  let count;
  try {
    count = await api('POST', '/v1/operations', { action, filter, dry_run: true });
  } catch (e) { return showError(e); }
  const reason = h('input', { id: 'bulk-reason', type: 'text', placeholder: 'reason, kept with the operation',
    'aria-label': 'Reason' });
  const ok = h('button', { type: 'button', id: 'bulk-ok', class: ['cancel', 'discard'].includes(action) ? 'danger' : '',
    text: `${capitalized(action)} ${count.matched} ${noun}`, disabled: count.matched === 0,
    onclick: async () => {
      ok.disabled = true;
      try {
        const op = await api('POST', '/v1/operations', { action, filter, reason: reason.value.trim() || undefined });
        location.hash = `#/operations/${enc(op.id)}`;
      } catch (e) { ok.disabled = false; showError(e); }
    } });
  confirmIn(panel, [h('span', { id: 'bulk-count', 'data-matched': count.matched,
    text: `${count.matched} ${noun} match this filter. ` }), reason], ok);
}

// An operation's progress: counts, a bar, what it was asked, and Cancel while it runs.
function operationPanel(op, box) {
  const reached = op.acted + op.skipped;
  const cancelPanel = h('div', { class: 'confirm', hidden: true });
  const stop = h('button', { type: 'button', id: 'operation-cancel', class: 'danger', text: 'Cancel operation',
    onclick: () => confirmIn(cancelPanel, 'Stop it? Tasks not reached yet are left as they are.',
      h('button', { type: 'button', class: 'danger', text: 'Stop it', onclick: () =>
        api('POST', `/v1/operations/${enc(op.id)}/cancel`).then(() => reloadWith('Operation cancelled.'), showError) })) });
  box.replaceChildren(h('div', { id: 'operation', 'data-state': op.state, 'data-acted': op.acted,
    'data-skipped': op.skipped, 'data-matched': op.matched },
  h('p', {}, badge(op.state), ' ', h('progress', { id: 'operation-progress', max: op.matched || 1, value: reached }),
    h('span', { class: 'muted', text: ` ${reached} of ${op.matched}` })),
  dl([
    ['action', op.action],
    [['replay', 'discard'].includes(op.action) ? 'dead letters' : 'tasks',
      `${op.matched} matched, ${op.acted} acted on, ${op.skipped} skipped, ${op.matched - reached} left`],
    ['filter', h('code', { class: 'mono', text: JSON.stringify(op.filter) })],
    ['by', op.by], ['reason', op.reason], ['note', op.note],
    ['created', timeEl(op.created_at)], ['finished', op.finished_at ? timeEl(op.finished_at) : null],
  ]),
  op.state === 'running' && [stop, cancelPanel]));
}

async function operationView(root, signal, id) {
  const box = h('div');
  put(root, h('div', { class: 'task-head' }, h('h1', { text: 'Operation' }), h('span', { class: 'mono muted', text: id })),
    box, h('p', {}, h('a', { href: '#/operations', text: '« All operations' })));
  let ended = false;
  const load = async (current) => {
    const op = await api('GET', `/v1/operations/${enc(id)}`, undefined, signal);
    if (!current()) return;
    ended = op.state !== 'running';
    operationPanel(op, box);
  };
  await refreshing(signal, load, () => (ended ? null : OPERATION_EVERY)).start();
}

async function operationsView(root, signal) {
  const box = h('div');
  put(root, h('h1', { text: 'Operations' }),
    h('p', { class: 'muted hint', text: 'Retries and cancels of every task a filter matched: filter the task list on a state, then act on all matching.' }),
    box);
  const list = pagedList(box, signal, {
    id: 'operations', key: 'operations', empty: 'No operations.',
    heads: ['id', 'created', 'action', 'state', 'progress', 'reason'],
    url: (before) => `/v1/operations?limit=50${before ? `&before=${enc(before)}` : ''}`,
    live: { every: 2000, idOf: (o) => o.id, onLive: () => {} },
    row: (o) => h('tr', { 'data-operation-id': o.id },
      h('td', { class: 'mono' }, h('a', { href: `#/operations/${enc(o.id)}`, text: o.id })),
      h('td', {}, timeEl(o.created_at)), h('td', { text: o.action }), h('td', {}, badge(o.state)),
      h('td', { class: 'num', text: `${o.acted + o.skipped} / ${o.matched}` }), h('td', { text: o.reason || '' })),
  });
  await list.start();
}
