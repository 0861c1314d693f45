// The tasks page (#/tasks): the task list, filtered and paged, its first page live; namespace
// and template pickers (task_pickers.js), a lookup by id prefix or idempotency key
// (task_lookup.js) and saved views of it (saved_views.js).

// Kept across views: the inputs as typed (`after`/`before` local times, `context` JSON text).
const NO_TASK_FILTER = { state: '', namespace: '', name: '', after: '', before: '', context: '' };
const taskFilter = Object.assign({}, NO_TASK_FILTER);
const TASKS_EVERY = 2000; // the first page of the list is fetched again this often while shown
const COUNTS_EVERY = 10000; // the counts by state of the list's filter are fetched again this often

// The address of the task list with `filter` (keys of NO_TASK_FILTER; empty ones left out).
function tasksHref(filter) {
  const q = new URLSearchParams();
  for (const k of Object.keys(NO_TASK_FILTER)) if (filter[k]) q.set(k, filter[k]);
  const text = q.toString();
  return text ? `#/tasks?${text}` : '#/tasks';
}

// The filter the address names, if it names one (else the one kept from the last visit).
function filterFromAddress() {
  const q = routeQuery();
  if (![...q.keys()].some((k) => k in NO_TASK_FILTER)) return;
  const named = {};
  for (const k of Object.keys(NO_TASK_FILTER)) named[k] = q.get(k) || '';
  Object.assign(taskFilter, named);
}

// The task list filtered on one template's tasks (from its page, or a schedule's).
function showTasksOf(namespace, name) {
  location.hash = tasksHref(Object.assign({}, NO_TASK_FILTER, { namespace, name }));
}

// The list's query: the filters (times as RFC 3339 UTC), 50 tasks a page, before `before`.
function tasksQuery(before) {
  const q = new URLSearchParams({ limit: '50' });
  for (const k of ['state', 'namespace', 'name']) if (taskFilter[k]) q.set(k, taskFilter[k]);
  if (taskFilter.after) q.set('created_after', new Date(taskFilter.after).toISOString());
  if (taskFilter.before) q.set('created_before', new Date(taskFilter.before).toISOString());
  if (taskFilter.context) q.set('context', taskFilter.context);
  if (before) q.set('before', before);
  return `/v1/tasks?${q}`;
}

// The counts by state of the list's filter (its state left out), each a link that filters on
// its state; fetched with the filter and again every COUNTS_EVERY ms.
function stateCounts(signal, onState) {
  const el = h('p', { id: 'task-counts', class: 'counts muted' });
  const load = async (current) => {
    const q = new URL(tasksQuery(null), location.origin).searchParams;
    q.delete('state');
    q.set('limit', '1');
    q.set('counts', 'true');
    const { counts } = await api('GET', `/v1/tasks?${q}`, undefined, signal);
    if (!current() || !counts) return;
    el.dataset.total = counts.total;
    el.dataset.query = q.toString(); // the filter these counts are of
    el.replaceChildren(...TASK_STATES.flatMap((state) => [
      h('a', { href: tasksHref(Object.assign({}, taskFilter, { state })), class: 'count', 'data-state': state, 'data-count': counts[state],
        'aria-current': state === taskFilter.state ? 'true' : null,
        onclick: (e) => { e.preventDefault(); onState(state); } }, badge(state), ` ${counts[state]}`), ' ']),
    h('span', { text: `${counts.total} in all` }));
  };
  const { again, start } = refreshing(signal, load, () => COUNTS_EVERY);
  return { el, again, start };
}

// The task list's columns and one task's row (the lookup's matches are listed so too).
const TASK_HEADS = ['id', 'template', 'state', 'created', 'duration'];
const taskRow = (t) => h('tr', { 'data-task-id': t.id },
  h('td', { class: 'mono' }, h('a', { href: taskHref(t.id), text: t.id })),
  h('td', {}, h('a', { class: 'quiet', href: templateHref(t), text: `${t.namespace}/${t.name}@${t.version}` })),
  h('td', {}, badge(t.state), t.priority && t.priority !== 'normal' && [' ', priorityTag(t.priority)],
    t.state === 'scheduled' && t.run_at && h('span', { class: 'muted starts' }, ' starts ', relEl(t.run_at))),
  h('td', {}, timeEl(t.created_at)),
  h('td', { class: 'num', text: fmtMs(t.duration_ms) }));

async function tasksView(root, signal) {
  filterFromAddress();
  // The address always says the filter shown: a reload, a copied link or a new tab shows it.
  const showAddress = () => history.replaceState(null, '', tasksHref(taskFilter));
  showAddress();
  const stateSel = h('select', { id: 'filter-state', 'aria-label': 'State' },
    ['', ...TASK_STATES].map((s) => h('option', { value: s, text: s || 'all states', selected: s === taskFilter.state })));
  const nsInput = h('input', { id: 'filter-namespace', type: 'text', placeholder: 'namespace', 'aria-label': 'Namespace', value: taskFilter.namespace });
  const nameInput = h('input', { id: 'filter-name', type: 'text', placeholder: 'template name', 'aria-label': 'Template name', value: taskFilter.name });
  const afterInput = h('input', { id: 'filter-after', type: 'datetime-local', step: 1, value: taskFilter.after });
  const beforeInput = h('input', { id: 'filter-before', type: 'datetime-local', step: 1, value: taskFilter.before });
  const contextInput = h('input', { id: 'filter-context', type: 'text', class: 'mono', spellcheck: 'false', value: taskFilter.context,
    placeholder: 'context {"order_id": 42}', title: 'tasks whose context contains this JSON object', 'aria-label': 'Context contains (a JSON object)' });
  const [liveEl, setLive] = liveIndicator('tasks-live', `the first page is fetched again every ${TASKS_EVERY / 1000} s`, 'not live');
  const box = h('div');
  const bulk = h('div', { id: 'bulk' }, bulkBar());
  const counts = stateCounts(signal, (state) => { stateSel.value = state; apply(); });
  const list = pagedList(box, signal, {
    id: 'tasks', key: 'tasks', empty: 'No tasks.',
    heads: TASK_HEADS,
    url: tasksQuery,
    live: { every: TASKS_EVERY, idOf: (t) => t.id, onLive: setLive },
    row: taskRow,
  });
  // A context filter that is not a JSON object is refused here: nothing is sent.
  const apply = () => {
    const context = contextInput.value.trim();
    const why = context && jsonObject(context)[1];
    contextInput.setAttribute('aria-invalid', String(!!why));
    if (why) return showError(new ApiError(0, 'invalid_context_filter', `the context filter is ${why}; it must be a JSON object, such as {"order_id": 42}`));
    clearError();
    Object.assign(taskFilter, {
      state: stateSel.value, namespace: nsInput.value.trim(), name: nameInput.value.trim(),
      after: afterInput.value, before: beforeInput.value, context,
    });
    showAddress();
    bulk.replaceChildren(bulkBar());
    counts.again();
    list.show(null);
  };
  for (const input of [stateSel, nsInput, nameInput, afterInput, beforeInput, contextInput]) input.addEventListener('change', apply);
  // Namespace and template pickers (from the registry), the lookup by id prefix or idempotency
  // key, and the saved views.
  const pickers = templatePickers(signal, nsInput, nameInput);
  const lookup = taskLookup(signal);
  put(root, h('div', { class: 'task-head' }, h('h1', { text: 'Tasks' }), liveEl), h('div', { class: 'toolbar' },
    h('form', { class: 'filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
      stateSel, nsInput, nameInput, pickers,
      h('label', {}, 'created after ', afterInput), h('label', {}, 'before ', beforeInput), contextInput,
      h('button', { type: 'submit', text: 'Apply' })),
    lookup.form), savedViewsBar(), lookup.result, counts.el, bulk, box);
  counts.start().catch(showError);
  await list.start();
}
