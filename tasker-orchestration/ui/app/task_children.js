// A task's family: its child tasks (shown when a step starts one), and its parent task with the
// step of it that started this one.

function taskChildren(view) {
  const { id, signal } = view;
  let children = null; // the child tasks (GET /v1/tasks/{id}) when the snapshot has none
  let childKey = '';   // the child steps' states: a change may mean a child started or ended
  const childrenBox = h('div');
  const childrenSection = section('Children', childrenBox);
  childrenSection.id = 'children-section';
  childrenSection.hidden = true;

  // The child tasks, from GET /v1/tasks/{id} (a snapshot's task may come without them).
  const load = refetcher(signal,
    async () => (await api('GET', `/v1/tasks/${enc(id)}`, undefined, signal)).children || [],
    (list) => { children = list; view.schedule(); });

  // The child tasks, when the snapshot lacks them: again whenever a child step moves.
  const onSnapshot = (snap) => {
    if (Array.isArray(snap.task.children)) return;
    const kids = (snap.steps || []).filter((s) => s.step_type === 'child')
      .map((s) => `${s.name}:${s.state}:${s.attempt}:${(s.child && s.child.task_id) || ''}`).join(',');
    if (kids && `${snap.task.state}/${kids}` !== childKey) load();
    childKey = `${snap.task.state}/${kids}`;
  };

  // The child tasks: shown when a step starts one (or one was started).
  const render = (task, steps) => {
    const kids = Array.isArray(task.children) ? task.children : children;
    childrenSection.hidden = !steps.some((s) => s.step_type === 'child') && !(kids && kids.length);
    if (!childrenSection.hidden) childrenBox.replaceChildren(childrenTable(kids || [], kids ? 'No child task started yet.' : 'Loading…'));
  };
  return { el: childrenSection, onSnapshot, render };
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

// The parent of a child task: el(task) links to it and names the step of it that started this
// task, once onSnapshot(task) asked the parent for it.
function taskParent(view) {
  const { signal } = view;
  let parentEntry; // undefined: not asked; null: unknown; else this task in its parent's children

  // This task's entry in its parent's children (the name of the step that started it), once.
  function loadParent(task) {
    parentEntry = null;
    api('GET', `/v1/tasks/${enc(task.parent_task_id)}`, undefined, signal)
      .then((p) => {
        parentEntry = (p.children || []).find((c) => c.task_id === task.id &&
          (!task.parent_step_id || c.step_id === task.parent_step_id)) || null;
      }, () => { /* the parent step's id stands in for its name */ })
      .then(() => { if (!signal.aborted) view.schedule(); });
  }

  // The parent task and the step of it that started this one.
  const el = (task) => h('span', { id: 'parent-task' },
    h('a', { class: 'mono parent-link', href: taskHref(task.parent_task_id), text: task.parent_task_id }),
    ' · step ',
    parentEntry
      ? [h('strong', { class: 'parent-step', text: parentEntry.step_name }),
        parentEntry.attempt > 1 && h('span', { class: 'muted', text: ` (attempt ${parentEntry.attempt})` })]
      : h('span', { class: 'mono muted parent-step', title: 'the parent step id', text: task.parent_step_id || '?' }));

  const onSnapshot = (task) => { if (parentEntry === undefined && task.parent_task_id) loadParent(task); };
  return { el, onSnapshot };
}
