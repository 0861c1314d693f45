// One task's page (#/tasks/{id}), live over Server-Sent Events.

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
