// One task's page (#/tasks/{id}), live over Server-Sent Events: each snapshot of the task
// ({task, steps, history}) is drawn by the page's parts, each an element and a render: the head
// and facts, the actions, the signal form, the graph (task_dag.js), the timeline (timeline.js),
// the step cards (task_steps.js; both in the graph's order, step_order.js), the children
// (task_children.js), the signals received (task_signals.js), what the steps stream
// (task_streams.js), the context, result and error, and the history.

async function taskView(root, signal, id) {
  let scheduled = false; // a render is due
  // What the parts share: the latest snapshot, whether an action is in flight, render() now,
  // schedule() a render in the next frame, and act()/withReason() (taskActions).
  const view = { id, signal, snap: null, busy: false };
  const head = taskHead(view);
  const actions = taskActions(view);
  const signals = taskSignals(view);
  const streams = taskStreams(view);
  const graph = taskGraph(view);
  const waterfall = timeline();
  const steps = taskSteps(view);
  const children = taskChildren(view);
  const data = taskData();
  Object.assign(view, { act: actions.act, withReason: actions.withReason });

  put(root,
    head.el,
    actions.el,
    signals.form,
    graph.el,
    section('Timeline', waterfall.el),
    steps.el,
    streams.el,
    children.el,
    signals.table,
    data.el,
    data.history);

  view.render = () => {
    const { snap } = view;
    if (!snap) return;
    const { task } = snap;
    const list = snap.steps || [];
    // The steps in graph order (step_order.js), for the timeline's rows and the step cards.
    const ordered = orderSteps(list, graph.templateSteps());
    head.render(task);
    actions.render(task);
    data.render(task);
    graph.render(task, list);
    waterfall.draw(task, ordered, snap.history || []);
    steps.render(task, ordered, !!snap.more_steps);
    data.renderHistory(snap.history || []);
    children.render(task, list);
    signals.render(list);
  };

  // At most one render a frame, however fast snapshots come.
  view.schedule = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { scheduled = false; if (!signal.aborted) view.render(); });
  };

  const onSnapshot = (text) => {
    let next;
    try { next = JSON.parse(text); } catch (_) { return; }
    if (!next || !next.task) return;
    view.snap = next;
    signals.onSnapshot(next);
    streams.onSnapshot();
    children.onSnapshot(next);
    head.onSnapshot(next.task);
    graph.onSnapshot(next.task);
    view.schedule();
  };

  signals.load();
  streams.follow();
  // One connection for every tab of the dashboard (live_share.js).
  await watchTask(id, signal,
    (event, text) => {
      if (event === 'snapshot') onSnapshot(text);
      else if (event === 'missing') {
        let m = null;
        try { m = JSON.parse(text); } catch (_) { return; }
        const e = (m && m.error) || {};
        const status = { forbidden: 403, task_purged: 410 }[e.code] || 404;
        showError(new ApiError(status, e.code, e.message, e.details));
      }
    },
    head.setLive);
}

// The head of a task's page (its id, state, priority and live indicator) and its facts: the
// template, the parent task and the step of it that started this one, times, open steps.
function taskHead(view) {
  const [live, setLive] = liveIndicator('live', 'live updates', 'offline');
  const stateEl = h('span', { id: 'task-state', class: 'badge', text: '…' });
  const priorityEl = h('span', { id: 'task-priority', hidden: true });
  const meta = h('div');
  const parent = taskParent(view);
  const render = (task) => {
    stateEl.textContent = task.state;
    stateEl.dataset.state = task.state;
    stateEl.className = `badge state-${task.state}`;
    // The priority, only when it is not "normal".
    priorityEl.hidden = !task.priority || task.priority === 'normal';
    priorityEl.replaceChildren(priorityEl.hidden ? '' : priorityTag(task.priority, true));
    meta.replaceChildren(dl([
      ['template', h('a', { href: templateHref(task), text: `${task.namespace}/${task.name}@${task.version}` })],
      ['parent task', task.parent_task_id ? parent.el(task) : null],
      ['depth', task.depth ? String(task.depth) : null],
      ['id', h('span', { class: 'mono', text: task.id })], ['created', timeEl(task.created_at)],
      ['completed', timeEl(task.completed_at)], ['duration', fmtMs(task.duration_ms)],
      ['run at', task.run_at ? [timeEl(task.run_at), task.state === 'scheduled' && [' (starts ', relEl(task.run_at), ')']] : null],
      ['deadline', task.deadline ? deadlineEl(task.deadline) : null],
      ['open steps', String(task.open_steps)], ['idempotency key', task.idempotency_key],
    ]));
  };
  const el = [h('div', { class: 'task-head', 'data-task-id': view.id },
    h('h1', {}, 'Task ', h('span', { class: 'mono', text: view.id })), stateEl, priorityEl, live), meta];
  return { el, setLive, render, onSnapshot: parent.onSnapshot };
}

// A task's deadline: how long it may run, its action, and when it comes or when it passed.
const deadlineEl = (d) => h('span', { id: 'task-deadline', 'data-action': d.action, 'data-passed': d.passed_at ? 'yes' : 'no' },
  `${fmtMs(d.within_ms)} from its start (${d.action})`,
  d.passed_at ? [', passed ', timeEl(d.passed_at)] : d.at ? [', at ', timeEl(d.at), ' (', relEl(d.at), ')'] : '');

// A task's actions: cancel (asked first), and, once it failed, retry with an optional reason.
// act(call, done) runs one (of these, or a step's resolve, or a signal): one at a time; its
// outcome arrives through the stream, so nothing is refetched here.
function taskActions(view) {
  const { id } = view;
  const cancelBtn = h('button', { id: 'cancel', type: 'button', hidden: true, text: 'Cancel task…' });
  const cancelOk = h('button', { id: 'cancel-confirm', type: 'button', class: 'danger', text: 'Cancel task' });
  const cancelPanel = h('div', { id: 'cancel-panel', class: 'confirm', hidden: true });
  let closeCancel = () => {};   // closes the cancel question, when open
  const reason = h('input', { id: 'repair-reason', type: 'text', hidden: true, maxlength: 1000, placeholder: 'reason (optional, recorded in the history)' });
  const retryBtn = h('button', { id: 'retry', type: 'button', hidden: true, class: 'primary', text: 'Retry failed step' });

  async function act(call, done) {
    if (view.busy) return;
    view.busy = true;
    view.render();
    clearError();
    try { await call(); reason.value = ''; if (done) done(); } catch (e) { showError(e); }
    view.busy = false;
    if (!view.signal.aborted) view.render();
  }
  // Who asked is the dashboard (the server adds the token's name when there is one).
  const withReason = (body) => Object.assign({ by: 'dashboard' }, reason.value.trim() ? { reason: reason.value.trim() } : {}, body);
  cancelBtn.addEventListener('click', () => {
    const what = view.snap && view.snap.task.state === 'scheduled' ? 'It never starts' : 'Its steps not yet done are cancelled';
    closeCancel = confirmIn(cancelPanel, ['Cancel task ', h('strong', { class: 'mono', text: id }),
      `? ${what}; this cannot be undone.`], cancelOk);
  });
  cancelOk.addEventListener('click', () => act(() => api('POST', `/v1/tasks/${enc(id)}/cancel`), () => closeCancel()));
  retryBtn.addEventListener('click', () => act(() => api('POST', `/v1/tasks/${enc(id)}/retry`, withReason())));

  const render = (task) => {
    const failed = task.state === 'error';
    cancelBtn.hidden = task.state !== 'running' && task.state !== 'scheduled';
    retryBtn.hidden = reason.hidden = !failed;
    cancelBtn.disabled = cancelOk.disabled = retryBtn.disabled = view.busy;
    if (cancelBtn.hidden) closeCancel();
  };
  return { el: [h('div', { class: 'actions' }, cancelBtn, reason, retryBtn), cancelPanel], render, act, withReason };
}

// A task's context, result and error (shown when it has one), and its history.
function taskData() {
  const contextPre = h('pre', { id: 'context' });
  const resultPre = h('pre', { id: 'task-result' });
  const errorPre = h('pre', { id: 'task-error', class: 'error' });
  const errorSection = section('Error', errorPre);
  const history = h('ol', { id: 'history', class: 'history' });
  errorSection.hidden = true;
  const render = (task) => {
    contextPre.textContent = pretty(task.context);
    resultPre.textContent = task.result != null ? pretty(task.result) : '';
    errorSection.hidden = task.error == null;
    errorPre.textContent = task.error != null ? pretty(task.error) : '';
  };
  return {
    el: h('div', { class: 'columns' }, section('Context', contextPre), section('Result', resultPre), errorSection),
    history: section('History', history),
    render,
    renderHistory: (transitions) => history.replaceChildren(...transitions.map(historyItem)),
  };
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
