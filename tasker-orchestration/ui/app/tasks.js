// The task list, and one task live (its DAG, timeline, steps, history), followed over
// Server-Sent Events.

// ---------- tasks ----------

// Kept across views: the inputs as typed (`after`/`before` local times, `context` JSON text).
const NO_TASK_FILTER = { state: '', namespace: '', name: '', after: '', before: '', context: '' };
const taskFilter = Object.assign({}, NO_TASK_FILTER);
const TASKS_EVERY = 2000; // the first page of the list is fetched again this often while shown

// The task list filtered on one template's tasks (from its page, or a schedule's).
function showTasksOf(namespace, name) {
  Object.assign(taskFilter, NO_TASK_FILTER, { namespace, name });
  location.hash = '#/tasks';
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

async function tasksView(root, signal) {
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
  const list = pagedList(box, signal, {
    id: 'tasks', key: 'tasks', empty: 'No tasks.',
    heads: ['id', 'template', 'state', 'created', 'duration'],
    url: tasksQuery,
    live: { every: TASKS_EVERY, idOf: (t) => t.id, onLive: setLive },
    row: (t) => h('tr', { 'data-task-id': t.id },
      h('td', { class: 'mono' }, h('a', { href: `#/tasks/${enc(t.id)}`, text: t.id })),
      h('td', {}, h('a', { class: 'quiet', href: templateHref(t), text: `${t.namespace}/${t.name}@${t.version}` })),
      h('td', {}, badge(t.state), t.priority && t.priority !== 'normal' && [' ', priorityTag(t.priority)],
        t.state === 'scheduled' && t.run_at && h('span', { class: 'muted starts' }, ' starts ', relEl(t.run_at))),
      h('td', {}, timeEl(t.created_at)),
      h('td', { class: 'num', text: fmtMs(t.duration_ms) })),
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
    list.show(null);
  };
  for (const input of [stateSel, nsInput, nameInput, afterInput, beforeInput, contextInput]) input.addEventListener('change', apply);
  const search = h('input', {
    id: 'search-id', type: 'search', placeholder: 'open a task by id…', 'aria-label': 'Task id',
    onkeydown: (e) => {
      const id = search.value.trim();
      if (e.key === 'Enter' && id) { e.preventDefault(); location.hash = `#/tasks/${enc(id)}`; }
    },
  });
  put(root, h('div', { class: 'task-head' }, h('h1', { text: 'Tasks' }), liveEl), h('div', { class: 'toolbar' },
    h('form', { class: 'filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
      stateSel, nsInput, nameInput,
      h('label', {}, 'created after ', afterInput), h('label', {}, 'before ', beforeInput), contextInput,
      h('button', { type: 'submit', text: 'Apply' })),
    search), box);
  await list.start();
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

// A fetch that may be asked for again while under way: the returned function runs `load`, or,
// while it runs, has it run once more when it ends; `apply` gets the last answer (errors are
// shown, nothing is applied).
function refetcher(signal, load, apply) {
  let running = false;
  let again = false;
  return async () => {
    if (running) { again = true; return; }
    running = true;
    let value;
    let ok = false;
    try {
      do {
        again = false;
        value = await load();
        ok = true;
      } while (again && !signal.aborted);
    } catch (e) {
      ok = false;
      if (!signal.aborted) showError(e);
    }
    running = false;
    if (ok && !signal.aborted) apply(value);
  };
}

async function taskView(root, signal, id) {
  let snap = null;              // the latest snapshot {task, steps, history}
  let template;                 // undefined: not asked; 'loading'; null: unavailable; else the template
  let resolving = null;         // the step whose resolve form is open
  let busy = false;             // an action is in flight
  let scheduled = false;        // a render is due
  let prefilled = '';           // the signal name last put in the signal form
  let waitKey = null;           // the wait steps' states: a change may mean a signal was consumed
  let children = null;          // the child tasks (GET /v1/tasks/{id}) when the snapshot has none
  let childKey = '';            // the child steps' states: a change may mean a child started or ended
  let parentEntry;              // undefined: not asked; null: unknown; else this task in its parent's children
  const unfolded = new Set();   // the folded parts of step cards the user unfolded (see foldable)

  const [live, setLive] = liveIndicator('live', 'live updates', 'offline');
  const stateEl = h('span', { id: 'task-state', class: 'badge', text: '…' });
  const priorityEl = h('span', { id: 'task-priority', hidden: true });
  const meta = h('div');
  const cancelBtn = h('button', { id: 'cancel', type: 'button', hidden: true, text: 'Cancel task…' });
  const cancelOk = h('button', { id: 'cancel-confirm', type: 'button', class: 'danger', text: 'Cancel task' });
  const cancelPanel = h('div', { id: 'cancel-panel', class: 'confirm', hidden: true });
  let closeCancel = () => {};   // closes the cancel question, when open
  const reason = h('input', { id: 'repair-reason', type: 'text', hidden: true, maxlength: 1000, placeholder: 'reason (optional, recorded in the history)' });
  const retryBtn = h('button', { id: 'retry', type: 'button', hidden: true, class: 'primary', text: 'Retry failed step' });
  const dag = svg('svg', { id: 'dag', class: 'dag', role: 'img', 'aria-label': 'step graph' });
  const waterfall = timeline();
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
  // Send a signal (shown while a step waits for one), and the signals the task received.
  const signalName = h('input', { id: 'signal-name', type: 'text', maxlength: 64, placeholder: 'name', 'aria-label': 'Signal name' });
  const signalId = h('input', { id: 'signal-id', type: 'text', maxlength: 128, placeholder: 'optional: a repeat is then a no-op', 'aria-label': 'Signal id' });
  const signalPayload = h('textarea', { id: 'signal-payload', rows: 3, spellcheck: 'false', placeholder: '{"approved_by": "ada"}' });
  const signalBtn = h('button', { id: 'signal-submit', type: 'submit', class: 'primary', text: 'Send signal' });
  const signalWaiting = h('p', { class: 'muted waiting-steps' });
  const signalSection = h('section', { id: 'signal-section', hidden: true }, h('h3', { text: 'Send a signal' }),
    h('form', { id: 'signal-form', class: 'signal-form', onsubmit: submitSignal }, signalWaiting,
      h('div', { class: 'row' }, h('label', {}, 'Name ', signalName), h('label', {}, 'Signal id ', signalId)),
      h('label', { for: 'signal-payload', text: 'Payload (JSON, optional):' }), signalPayload,
      h('div', { class: 'row' }, signalBtn)));
  const signalsBox = h('div');
  const signalsSection = section('Signals', signalsBox);
  signalsSection.hidden = true;
  const childrenBox = h('div');
  const childrenSection = section('Children', childrenBox);
  childrenSection.id = 'children-section';
  childrenSection.hidden = true;

  put(root,
    h('div', { class: 'task-head', 'data-task-id': id },
      h('h1', {}, 'Task ', h('span', { class: 'mono', text: id })), stateEl, priorityEl, live),
    meta,
    h('div', { class: 'actions' }, cancelBtn, reason, retryBtn),
    cancelPanel,
    signalSection,
    section('Graph', h('div', { class: 'dag-wrap' }, dag)),
    section('Timeline', waterfall.el),
    section('Steps', stepsNote, stepsBox),
    childrenSection,
    signalsSection,
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
  cancelBtn.addEventListener('click', () => {
    const what = snap && snap.task.state === 'scheduled' ? 'It never starts' : 'Its steps not yet done are cancelled';
    closeCancel = confirmIn(cancelPanel, ['Cancel task ', h('strong', { class: 'mono', text: id }),
      `? ${what}; this cannot be undone.`], cancelOk);
  });
  cancelOk.addEventListener('click', () => act(() => api('POST', `/v1/tasks/${enc(id)}/cancel`), () => closeCancel()));
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

  // POST /v1/tasks/{id}/signals/{name}; a refusal shows the API's error.
  function submitSignal(e) {
    e.preventDefault();
    const name = signalName.value.trim();
    const body = {};
    if (signalId.value.trim()) body.signal_id = signalId.value.trim();
    if (signalPayload.value.trim()) {
      try { body.payload = JSON.parse(signalPayload.value); } catch (err) {
        return showError(new ApiError(0, 'invalid_json', `the payload is not valid JSON: ${err.message}`)); // nothing sent
      }
    }
    if (!name) return showError(new ApiError(0, 'invalid_signal_name', 'a signal needs a name')); // nothing sent
    act(async () => {
      const sent = await api('POST', `/v1/tasks/${enc(id)}/signals/${enc(name)}`, body);
      if (signal.aborted) return;
      showNotice(`Signal ${sent.name} sent (id ${sent.signal_id}).`);
      signalPayload.value = '';
      signalId.value = '';
      loadSignals();
    });
  }

  // GET /v1/tasks/{id}/signals into the Signals table (hidden while there are none).
  const loadSignals = refetcher(signal,
    async () => (await api('GET', `/v1/tasks/${enc(id)}/signals`, undefined, signal)).signals || [],
    (signals) => {
      signalsSection.hidden = !signals.length;
      signalsBox.replaceChildren(table({ id: 'signals' },
        ['name', 'signal id', 'payload', 'received', 'consumed by', 'consumed'],
        signals.map((sg) => h('tr', { 'data-signal-id': sg.signal_id, 'data-name': sg.name },
          h('td', {}, h('code', { text: sg.name })),
          h('td', { class: 'mono', text: sg.signal_id }),
          h('td', {}, sg.payload != null ? h('code', { title: pretty(sg.payload), text: clip(JSON.stringify(sg.payload), 80) }) : '—'),
          h('td', {}, timeEl(sg.received_at)),
          h('td', { class: 'consumed-by' }, sg.consumed_by ? h('strong', { text: sg.consumed_by }) : h('span', { class: 'muted', text: 'not yet' })),
          h('td', {}, timeEl(sg.consumed_at)))),
        'No signals.'));
    });

  // The child tasks, from GET /v1/tasks/{id} (a snapshot's task may come without them).
  const loadChildren = refetcher(signal,
    async () => (await api('GET', `/v1/tasks/${enc(id)}`, undefined, signal)).children || [],
    (list) => { children = list; schedule(); });

  // This task's entry in its parent's children (the name of the step that started it), once.
  function loadParent(task) {
    parentEntry = null;
    api('GET', `/v1/tasks/${enc(task.parent_task_id)}`, undefined, signal)
      .then((p) => {
        parentEntry = (p.children || []).find((c) => c.task_id === task.id &&
          (!task.parent_step_id || c.step_id === task.parent_step_id)) || null;
      }, () => { /* the parent step's id stands in for its name */ })
      .then(() => { if (!signal.aborted) schedule(); });
  }

  // The parent task and the step of it that started this one.
  const parentEl = (task) => h('span', { id: 'parent-task' },
    h('a', { class: 'mono parent-link', href: taskHref(task.parent_task_id), text: task.parent_task_id }),
    ' · step ',
    parentEntry
      ? [h('strong', { class: 'parent-step', text: parentEntry.step_name }),
        parentEntry.attempt > 1 && h('span', { class: 'muted', text: ` (attempt ${parentEntry.attempt})` })]
      : h('span', { class: 'mono muted parent-step', title: 'the parent step id', text: task.parent_step_id || '?' }));

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
    // The priority, only when it is not "normal".
    priorityEl.hidden = !task.priority || task.priority === 'normal';
    priorityEl.replaceChildren(priorityEl.hidden ? '' : priorityTag(task.priority, true));
    meta.replaceChildren(dl([
      ['template', h('a', { href: templateHref(task), text: `${task.namespace}/${task.name}@${task.version}` })],
      ['parent task', task.parent_task_id ? parentEl(task) : null],
      ['depth', task.depth ? String(task.depth) : null],
      ['id', h('span', { class: 'mono', text: task.id })], ['created', timeEl(task.created_at)],
      ['completed', timeEl(task.completed_at)], ['duration', fmtMs(task.duration_ms)],
      ['run at', task.run_at ? [timeEl(task.run_at), task.state === 'scheduled' && [' (starts ', relEl(task.run_at), ')']] : null],
      ['open steps', String(task.open_steps)], ['idempotency key', task.idempotency_key],
    ]));
    const failed = task.state === 'error';
    cancelBtn.hidden = task.state !== 'running' && task.state !== 'scheduled';
    retryBtn.hidden = reason.hidden = !failed;
    cancelBtn.disabled = cancelOk.disabled = retryBtn.disabled = signalBtn.disabled = busy;
    if (cancelBtn.hidden) closeCancel();
    if (resolving && !(failed && steps.some((s) => s.name === resolving && s.state === 'failed'))) resolving = null;
    contextPre.textContent = pretty(task.context);
    resultPre.textContent = task.result != null ? pretty(task.result) : '';
    errorSection.hidden = task.error == null;
    errorPre.textContent = task.error != null ? pretty(task.error) : '';

    // The template's graph coloured by the task's steps; without a template, the steps alone.
    const states = stepStates(steps, task.state, task.namespace);
    if (template && template !== 'loading') drawDag(dag, template.definition.steps || [], (st) => states(st.name));
    else if (template === null) drawDag(dag, [...new Set(steps.map((s) => baseName(s.name)))].map((name) => ({ name })), (st) => states(st.name));

    waterfall.draw(task, steps, snap.history || []);

    // Step cards; the open resolve form (and its focus) moves to the rebuilt card.
    const hadFocus = resolveForm.contains(document.activeElement) ? document.activeElement : null;
    stepsNote.hidden = !snap.more_steps;
    stepsBox.replaceChildren(...steps.map((st) => {
      const card = stepCard(st, unfolded, task.namespace);
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

    // The child tasks: shown when a step starts one (or one was started).
    const kids = Array.isArray(task.children) ? task.children : children;
    childrenSection.hidden = !steps.some((s) => s.step_type === 'child') && !(kids && kids.length);
    if (!childrenSection.hidden) childrenBox.replaceChildren(childrenTable(kids || [], kids ? 'No child task started yet.' : 'Loading…'));

    // The signal form, while a step waits for a signal; its name is prefilled unless edited.
    const waiting = steps.filter((s) => s.state === 'waiting' && s.wait && s.wait.kind === 'signal' && s.wait.signal);
    signalSection.hidden = !waiting.length;
    if (waiting.length) {
      if (!signalName.value.trim() || signalName.value === prefilled) signalName.value = prefilled = waiting[0].wait.signal;
      signalWaiting.replaceChildren();
      put(signalWaiting, waiting.map((s, i) => [i ? '; ' : '',
        h('strong', { text: s.name }), ' waits for ', h('code', { text: s.wait.signal }),
        s.wait.until && [' until ', atEl(s.wait.until)]]), '.');
    }
  }

  function onSnapshot(data) {
    let next;
    try { next = JSON.parse(data); } catch (_) { return; }
    if (!next || !next.task) return;
    snap = next;
    // Signals are consumed as wait steps move on: fetch them again when one does.
    const key = (snap.steps || []).filter((s) => s.step_type === 'wait').map((s) => `${s.name}:${s.state}`).join(',');
    if (waitKey !== null && key !== waitKey) loadSignals();
    waitKey = key;
    // The child tasks, when the snapshot lacks them: again whenever a child step moves.
    if (!Array.isArray(snap.task.children)) {
      const kids = (snap.steps || []).filter((s) => s.step_type === 'child')
        .map((s) => `${s.name}:${s.state}:${s.attempt}:${(s.child && s.child.task_id) || ''}`).join(',');
      if (kids && `${snap.task.state}/${kids}` !== childKey) loadChildren();
      childKey = `${snap.task.state}/${kids}`;
    }
    if (parentEntry === undefined && snap.task.parent_task_id) loadParent(snap.task);
    if (template === undefined) { // the template, once per view
      template = 'loading';
      const t = snap.task;
      api('GET', `/v1/templates/${enc(t.namespace)}/${enc(t.name)}?version=${enc(t.version)}`, undefined, signal)
        .then((v) => { template = v; }, (e) => { template = null; if (!signal.aborted) showError(e); })
        .then(() => { if (!signal.aborted) schedule(); });
    }
    schedule();
  }

  loadSignals();
  await eventStream(`/v1/tasks/${enc(id)}/events`, signal,
    (event, data) => { if (event === 'snapshot') onSnapshot(data); },
    setLive);
}

// A task the retention policy purged (410 task_purged, whose details are its tombstone: task_id,
// state, purged_at): on that task's page, which every call then refuses so, a message in place of
// the task. False elsewhere (the error banner shows it).
function showPurged(e) {
  const head = document.querySelector('#main .task-head[data-task-id]');
  const d = e.details || {};
  if (!head || (d.task_id && d.task_id !== head.dataset.taskId)) return false;
  const id = head.dataset.taskId;
  clearError();
  byId('main').replaceChildren(
    h('div', { class: 'task-head', 'data-task-id': id }, h('h1', {}, 'Task ', h('span', { class: 'mono', text: id }))),
    h('p', { id: 'task-purged', class: 'purged', 'data-state': d.state || null },
      'Task ', h('span', { class: 'mono', text: d.task_id || id }), ` (${d.state || 'finished'}) was purged at `,
      d.purged_at ? timeEl(d.purged_at) : 'an unknown time', ' by the retention policy; its record is gone.'));
  return true;
}

const baseName = (name) => (name.includes('#') ? name.slice(0, name.indexOf('#')) : name);

// What a DAG node says of a step beyond its state: its namespace (when not the task's), its child
// (the node links to the child task), and that no live worker serves it.
const stepNotes = (s, namespace) => ({
  unserved: !!s.unserved,
  href: s.child && s.child.task_id ? taskHref(s.child.task_id) : null,
  notes: [s.namespace && s.namespace !== namespace && `namespace ${s.namespace}`,
    s.child && `child: ${templateLabel(s.child)}${s.child.task_id ? ` (task ${s.child.task_id})` : ''}`,
    s.unserved && unservedTitle(s.namespace || namespace, s.handler),
    s.state === 'throttled' && s.throttle && throttleText(s.throttle, s.limits)].filter(Boolean),
});

// Each template step's state from the task's steps: batch worker instances ("sum#3") fold into
// their template step, with a completed/total count.
function stepStates(steps, taskState, namespace) {
  const groups = new Map();
  for (const st of steps) {
    const key = baseName(st.name);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(st);
  }
  return (name) => {
    const g = groups.get(name);
    if (!g) return { state: taskState === 'running' || taskState === 'scheduled' ? 'pending' : 'skipped', sub: 'not created' };
    if (g.length === 1 && g[0].name === name) {
      const s = g[0];
      const sub = s.state === 'waiting' && s.wait ? waitSub(s.wait)
        : s.state === 'throttled' && s.throttle ? throttleSub(s.throttle)
          : s.attempt > 1 ? `${s.state} · attempt ${s.attempt}` : s.state;
      const kind = s.step_type === 'wait' || s.step_type === 'child' ? s.step_type : null;
      return Object.assign({ state: s.state, sub, kind }, stepNotes(s, namespace));
    }
    const state = worstState(g.map((s) => s.state));
    return {
      state, sub: state, count: `${g.filter((s) => s.state === 'completed').length}/${g.length}`,
      unserved: g.some((s) => s.unserved), notes: [...new Set(g.flatMap((s) => stepNotes(s, namespace).notes))],
    };
  };
}

// failed, else in progress, else held back (throttled, waiting), else pending, else completed if
// all are, else the most common.
function worstState(states) {
  for (const s of ['failed', 'enqueued', 'throttled', 'waiting_retry', 'waiting', 'pending']) if (states.includes(s)) return s;
  if (states.every((s) => s === 'completed')) return 'completed';
  const counts = new Map();
  for (const s of states) counts.set(s, (counts.get(s) || 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0][0];
}

// A waiting step's wait in its DAG node (after "wait · "): "for approved", "until 14:02:31".
function waitSub(w) {
  if (w.kind === 'signal') return `for ${w.signal}`;
  return w.until ? `until ${fmtShort(w.until)}` : 'waiting';
}

// A throttled step's throttle in its DAG node: "throttled · shop/charge:A", "paused · stripe".
const throttleSub = (t) => `${t.kind === 'paused' ? 'paused' : 'throttled'} · ${t.key}`;

// The rate of a step's rate limit, when its `limits` name the key: "100 per 1 s".
const rateOf = (limits, key) => {
  const r = limits && limits.rate;
  return r && r.key === key && r.per_ms ? `${r.limit} per ${fmtPer(r.per_ms)}` : null;
};

// The same in one line of text (the DAG node's tooltip).
function throttleText(t, limits) {
  const rate = rateOf(limits, t.key);
  if (t.kind === 'concurrency') return `throttled by concurrency key ${t.key} (limit ${t.limit}) since ${fmtShort(t.since)}`;
  if (t.kind === 'paused') return `rate limit ${t.key} paused${t.until ? ` until ${fmtShort(t.until)}` : ''}`;
  return `throttled by rate limit ${t.key} (${rate || `limit ${t.limit}`})${t.until ? ` until ${fmtShort(t.until)}` : ''}`;
}

// Which key holds a throttled step back and until when: "throttled by concurrency key
// `shop/charge:A` (limit 2) since 14:02:31 (3s ago)", "throttled by rate limit `stripe`
// (100 per 1 s) until 14:02:32 (in 1s)", "rate limit `stripe` paused until … — waiting since …".
// The key links to the Limits page.
function throttleInfo(t, limits) {
  const key = h('a', { href: '#/limits', title: 'see the Limits page' }, h('code', { class: 'throttle-key', text: t.key }));
  const since = t.since && [' since ', atEl(t.since)];
  const until = t.until && [' until ', atEl(t.until)];
  return h('div', { class: 'throttle-info', 'data-kind': t.kind, 'data-key': t.key },
    t.kind === 'concurrency' ? ['throttled by concurrency key ', key, ` (limit ${t.limit})`, since]
      : t.kind === 'paused' ? ['rate limit ', key, ' paused', until || ' (until resumed)', t.since && [' — waiting', since]]
        : ['throttled by rate limit ', key, ` (${rateOf(limits, t.key) || `limit ${t.limit}`})`,
          until || ' (until a token is free)', t.since && [' — waiting', since]]);
}

// The limits that apply to a step: "concurrency `shop/charge:A` (limit 2) · rate `stripe` (100 per
// 1 s, burst 20)"; null when none does.
function limitsInfo(l) {
  if (!l || (!l.concurrency && !l.rate)) return null;
  const c = l.concurrency;
  const r = l.rate;
  return h('div', { class: 'limits-info muted' }, 'limits: ',
    c && h('span', { class: 'limit-concurrency' }, 'concurrency ', h('code', { text: c.key }), ` (limit ${c.limit})`),
    c && r && ' · ',
    r && h('span', { class: 'limit-rate' }, 'rate ', h('code', { text: r.key }),
      ` (${r.limit} per ${fmtPer(r.per_ms)}${r.burst != null && r.burst !== r.limit ? `, burst ${r.burst}` : ''})`));
}

// What a waiting step waits for and until when: "sleeping until 14:02:31 (in 2m)", "waiting for
// signal `approved` until … — on timeout: fail".
const waitInfo = (w) => h('div', { class: 'wait-info', 'data-kind': w.kind },
  w.kind === 'sleep' ? 'sleeping' : w.kind === 'signal' ? ['waiting for signal ', h('code', { text: w.signal || '?' })] : 'waiting',
  w.until && [' until ', atEl(w.until)],
  w.on_timeout && ` — on timeout: ${w.on_timeout}`);

// A child step's child: "child: shop/enrich@1.2.0 → task 1b2c…" (once the child task exists).
const childOf = (c) => h('span', { class: 'child-of' }, 'child: ',
  h('a', { class: 'quiet child-template', href: templateHref(c), text: templateLabel(c) }),
  c.task_id
    ? [' → ', h('a', { class: 'mono child-task', href: taskHref(c.task_id), title: c.task_id, text: `task ${c.task_id.slice(0, 8)}…` })]
    : h('span', { class: 'muted', text: ' (not started)' }),
  c.on_parent_cancel === 'abandon' &&
    h('span', { class: 'muted', title: 'on_parent_cancel: abandon', text: ' · keeps running if this task is cancelled' }));

// A <details> (`attrs`) kept open across renders while `key` is in `unfolded`.
function foldable(unfolded, key, attrs, summary, ...kids) {
  const details = h('details', Object.assign({ open: unfolded.has(key) }, attrs), h('summary', {}, summary), ...kids);
  details.addEventListener('toggle', () => (details.open ? unfolded.add(key) : unfolded.delete(key)));
  return details;
}

// `namespace`: the task's (a step's own namespace is shown when it differs).
function stepCard(st, unfolded, namespace) {
  const card = h('div', { class: 'step', 'data-step': st.name, 'data-state': st.state, 'data-unserved': st.unserved ? 'true' : null },
    h('div', { class: 'step-head' },
      h('strong', { class: 'step-name', text: st.name }),
      badge(st.state),
      st.step_type !== 'wait' && !st.child && h('code', { title: 'handler', text: st.handler }),
      st.step_type && st.step_type !== 'standard' && h('span', { class: 'tag', text: st.step_type }),
      st.child && childOf(st.child),
      st.namespace && st.namespace !== namespace &&
        h('span', { class: 'tag step-namespace', title: `runs in namespace ${st.namespace} (the task's is ${namespace})`, text: st.namespace }),
      st.unserved && unservedBadge(st.namespace || namespace, st.handler),
      h('span', { class: 'muted', text: `attempt ${st.attempt}/${st.max_attempts}` }),
      st.worker && h('span', { class: 'muted', text: `worker ${st.worker}` }),
      st.state === 'waiting_retry' && st.next_attempt_at && h('span', { class: 'muted' }, 'next attempt ', timeEl(st.next_attempt_at))),
    st.state === 'waiting' && st.wait && waitInfo(st.wait),
    st.state === 'throttled' && st.throttle && throttleInfo(st.throttle, st.limits),
    limitsInfo(st.limits),
    st.result != null && h('pre', { class: 'result', text: pretty(st.result) }));
  if (st.error == null) return card;
  const shown = errorBox(st, unfolded);
  // A step done since (completed, or skipped) keeps the error of an earlier attempt: folded.
  if (st.state !== 'completed' && st.state !== 'skipped') put(card, shown.box);
  else put(card, foldable(unfolded, `${st.name} earlier`, { class: 'earlier-error' }, ['earlier attempt failed: ', shown.head], shown.box));
  return card;
}

// A step's error: {head, box}, `head` the line that sums it up ("kind: message"), `box` what
// shows it: the error, its child task, its backtrace folded.
function errorBox(st, unfolded) {
  const err = st.error;
  if (typeof err !== 'object' || Array.isArray(err)) {
    const text = pretty(err);
    return { head: clip(text, 120), box: h('pre', { class: 'error', text }) };
  }
  // {kind, message, backtrace, …}: "kind: message", the other fields, the backtrace folded.
  const { kind, message, backtrace, ...rest } = err;
  const head = [kind, message].filter((x) => x != null).map(String).join(': ');
  const extra = Object.keys(rest).length ? pretty(rest) : '';
  const box = [h('pre', { class: 'error', text: [head, extra].filter(Boolean).join('\n') || pretty(err) })];
  if (typeof err.child_task_id === 'string') {
    box.push(h('div', { class: 'child-error' }, 'child task ', h('a', { class: 'mono', href: taskHref(err.child_task_id), text: err.child_task_id })));
  }
  if (backtrace != null) {
    box.push(foldable(unfolded, st.name, {}, 'backtrace',
      h('pre', { class: 'backtrace', text: typeof backtrace === 'string' ? backtrace : pretty(backtrace) })));
  }
  return { head: clip(head || pretty(err), 120), box };
}

// The task's child tasks, one a row (a child step retried starts another: its attempt).
const childrenTable = (kids, empty) => table({ id: 'children' }, ['child task', 'step', 'attempt', 'state', 'template'],
  kids.map((c) => h('tr', { 'data-task-id': c.task_id, 'data-step': c.step_name, 'data-state': c.state },
    h('td', {}, h('a', { class: 'mono child-link', href: taskHref(c.task_id), text: c.task_id })),
    h('td', {}, h('strong', { text: c.step_name })),
    h('td', { class: 'num', text: String(c.attempt ?? '—') }),
    h('td', {}, badge(c.state)),
    h('td', {}, h('a', { class: 'quiet', href: templateHref(c), text: templateLabel(c) })))),
  empty);

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

// ---------- the timeline ----------

const MIN_WINDOW_US = 10; // the narrowest window of the timeline
const FAILED_ENDS = ['failed', 'waiting_retry'];

// Each step's attempts from a task's history: step name → [{attempt, from, to, end, reason}],
// `from` when it was enqueued and `to` when it ended (µs; NaN while under way), `end` the state it
// ended in.
function attemptsOf(history) {
  const byStep = new Map();
  for (const t of history) {
    if (!t.step || t.attempt == null) continue;
    if (!byStep.has(t.step)) byStep.set(t.step, []);
    const list = byStep.get(t.step);
    if (t.to === 'enqueued') list.push({ attempt: t.attempt, from: us(t.at), to: NaN, end: null, reason: null });
    else if (t.from === 'enqueued') {
      const open = list.find((x) => x.attempt === t.attempt && x.end == null);
      if (open) Object.assign(open, { to: us(t.at), end: t.to, reason: t.reason });
    }
  }
  return byStep;
}

// What ended an attempt, for its tooltip: "failed after 3.27 ms: transient: …", "in progress".
function attemptTitle(x, end) {
  if (x.end == null) return `attempt ${x.attempt} in progress`;
  const how = FAILED_ENDS.includes(x.end) ? 'failed' : x.end;
  return `attempt ${x.attempt} ${how} after ${fmtDuration(end - x.from)}${x.reason ? `: ${x.reason}` : ''}`;
}

// A task's steps in time, a row each. Every attempt (from the history) is a bar, a failed one
// drawn failed; the latest, once it ran, is split into queue (dispatched → started), handler
// (started → finished) and result (finished → processed). Times are in µs, as the API gives them.
// The axis shows a window of the task's span (data-from-us / data-to-us on #waterfall, µs from
// its creation): all of it (Fit), zoomed in or out, a step's attempts (a click on its name), one
// bar (a click on it), or a range dragged over the axis. draw(task, steps, history) again (each
// snapshot) keeps the window.
function timeline() {
  const box = h('div', { id: 'waterfall', class: 'waterfall' });
  const zoomIn = h('button', { id: 'timeline-zoom-in', type: 'button', text: 'Zoom in', onclick: () => zoomBy(0.5) });
  const zoomOut = h('button', { id: 'timeline-zoom-out', type: 'button', text: 'Zoom out', onclick: () => zoomBy(2) });
  const fit = h('button', { id: 'timeline-fit', type: 'button', text: 'Fit', onclick: () => { win = null; redraw(); } });
  const shown = h('span', { id: 'timeline-window', class: 'muted' });
  let win = null;  // [from, to], µs from the task's creation; null: all of it
  let span = 1;    // the task's span, µs
  let last = null; // the arguments of the last draw
  const redraw = () => { if (last) draw(...last); };
  const view = () => win || [0, span];
  // [from, to] kept inside the span (null when it covers it), at least MIN_WINDOW_US wide.
  const setWindow = (from, to) => {
    const width = Math.max(MIN_WINDOW_US, to - from);
    const start = Math.min(Math.max(0, (from + to) / 2 - width / 2), span - width);
    win = width >= span ? null : [start, start + width];
    redraw();
  };
  const zoomBy = (f) => {
    const [from, to] = view();
    const mid = (from + to) / 2;
    setWindow(mid - ((to - from) * f) / 2, mid + ((to - from) * f) / 2);
  };
  // A range with a margin of a tenth each side.
  const zoomTo = (from, to) => {
    const pad = Math.max(MIN_WINDOW_US, to - from) / 10;
    setWindow(from - pad, to + pad);
  };

  function draw(task, steps, history) {
    last = [task, steps, history];
    const t0 = us(task.created_at);
    const fields = ['dispatched_at', 'started_at', 'finished_at', 'processed_at'];
    const times = [task.completed_at, ...history.map((t) => t.at), ...steps.flatMap((st) => fields.map((f) => st[f]))]
      .map(us).filter(isFinite);
    const t1 = Math.max(t0, ...times);
    span = Math.max(1, t1 - t0);
    const [from, to] = view();
    const pct = (t) => ((t - t0 - from) / (to - from)) * 100;
    const attempts = attemptsOf(history);
    // A bar over [a, b] (absolute µs), cut to the window; none outside it or for a missing time.
    const bar = (kind, a, b, attempt, title, failed) => {
      if (!isFinite(a) || !isFinite(b) || b < a || pct(b) < 0 || pct(a) > 100) return null;
      const el = h('span', {
        class: `bar ${kind}${failed ? ' failed' : ''}`, 'data-attempt': attempt, 'data-us': Math.round(b - a), title,
        onclick: () => zoomTo(a - t0, b - t0),
      });
      el.style.left = `${Math.max(0, pct(a))}%`;
      el.style.width = `${Math.min(100, pct(b)) - Math.max(0, pct(a))}%`;
      return el;
    };
    const rows = steps.map((st) => {
      const tries = attempts.get(st.name) || [];
      const [d, s, f, p] = fields.map((k) => us(st[k]));
      // The latest attempt ran when its start is not older than its dispatch (a step enqueued
      // again keeps the times of the attempt before until this one reports).
      const ran = isFinite(s) && !(s < d);
      const failed = ran && FAILED_ENDS.includes(st.state);
      const bars = [
        tries.filter((x) => !(ran && x.attempt === st.attempt)).map((x) => {
          const end = x.end == null ? t1 : x.to;
          return bar(`attempt${x.end == null ? ' open' : ''}`, x.from, end, x.attempt, attemptTitle(x, end), FAILED_ENDS.includes(x.end));
        }),
        ran && [
          bar('queue', d, s, st.attempt, `queue ${fmtDuration(s - d)} (attempt ${st.attempt})`),
          bar('handler', s, f, st.attempt, `handler ${fmtDuration(f - s)} (attempt ${st.attempt}${failed ? ', failed' : ''})`, failed),
          bar('result', f, p, st.attempt, `result ${fmtDuration(p - f)} (attempt ${st.attempt})`),
        ],
      ];
      const ends = [...tries.flatMap((x) => [x.from, x.end == null ? t1 : x.to]), ...(ran ? [d, p, f] : [])].filter(isFinite);
      const first = ends.length ? Math.min(...ends) : Infinity;
      return {
        st, first,
        el: h('div', { class: 'wf-row', 'data-step': st.name, 'data-state': st.state, 'data-attempts': tries.length || null },
          h('button', {
            type: 'button', class: 'wf-label', title: `${st.name} (${st.state}): zoom to its attempts`, text: st.name,
            disabled: !ends.length, onclick: () => zoomTo(first - t0, Math.max(...ends) - t0),
          }),
          h('span', { class: 'wf-track' }, bars)),
      };
    });
    rows.sort((a, b) => a.first - b.first || a.st.name.localeCompare(b.st.name, undefined, { numeric: true }));
    box.dataset.fromUs = Math.round(from);
    box.dataset.toUs = Math.round(to);
    box.replaceChildren(
      h('div', { class: 'wf-axis' }, h('span', { class: 'wf-label', text: 'step' }), axisScale(from, to, setWindow)),
      ...rows.map((r) => r.el));
    zoomIn.disabled = to - from <= MIN_WINDOW_US;
    zoomOut.disabled = fit.disabled = !win;
    shown.textContent = win ? `${fmtDuration(to - from)} from ${fmtDuration(from)} · task ${fmtDuration(span)}` : `all of the task: ${fmtDuration(span)}`;
  }

  const legend = h('span', { class: 'wf-legend' }, ['queue', 'handler', 'result', 'attempt'].map((k) => h('span', { class: `legend ${k}`, text: k })));
  return { el: h('div', {}, h('div', { class: 'wf-controls' }, zoomIn, zoomOut, fit, shown, legend), box), draw };
}

// The timeline's axis over [from, to] (µs from the task's creation): ticks a round step apart
// (1, 2 or 5 × 10ⁿ µs), counted from the window's start ("+20 µs") unless it is the task's; a
// range dragged over it is passed to select(from, to).
function axisScale(from, to, select) {
  const width = to - from;
  const pow = 10 ** Math.floor(Math.log10(width / 8));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((v) => v >= width / 8);
  const scale = h('span', { class: 'wf-scale', title: 'drag over the axis to zoom to a range' });
  for (let t = 0; t <= width * 0.92; t += step) { // (none at the very end: its label would overflow)
    const tick = h('span', { class: 'tick', text: t ? `${from > 0 ? '+' : ''}${fmtDuration(t)}` : from ? fmtDuration(from) : '0' });
    tick.style.left = `${(t / width) * 100}%`;
    scale.append(tick);
  }
  scale.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    const rect = scale.getBoundingClientRect();
    const [x0, range] = [e.clientX, h('span', { class: 'wf-range' })];
    let x1 = x0;
    const at = (x) => from + ((Math.min(Math.max(x, rect.left), rect.right) - rect.left) / rect.width) * width;
    const move = (ev) => {
      x1 = ev.clientX;
      range.style.left = `${Math.min(x0, x1) - rect.left}px`;
      range.style.width = `${Math.abs(x1 - x0)}px`;
    };
    scale.append(range);
    scale.setPointerCapture(e.pointerId);
    scale.addEventListener('pointermove', move);
    scale.addEventListener('lostpointercapture', () => {
      scale.removeEventListener('pointermove', move);
      range.remove();
      if (Math.abs(x1 - x0) > 4) select(at(Math.min(x0, x1)), at(Math.max(x0, x1)));
    }, { once: true });
  });
  return scale;
}
