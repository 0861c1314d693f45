// The task's DAG: its template's graph (dag.js), each step coloured by the task's steps.

// The Graph section of a task's page: the template (asked once, at the first snapshot) drawn with
// each step's state; without a template, the steps alone.
function taskGraph(view) {
  const { signal } = view;
  let template; // undefined: not asked; 'loading'; null: unavailable; else the template
  const dag = svg('svg', { id: 'dag', class: 'dag', role: 'img', 'aria-label': 'step graph' });
  const render = (task, steps) => {
    const states = stepStates(steps, task.state, task.namespace);
    if (template && template !== 'loading') drawDag(dag, template.definition.steps || [], (st) => states(st.name));
    else if (template === null) drawDag(dag, [...new Set(steps.map((s) => baseName(s.name)))].map((name) => ({ name })), (st) => states(st.name));
  };
  const onSnapshot = (t) => {
    if (template !== undefined) return; // the template, once per view
    template = 'loading';
    api('GET', `/v1/templates/${enc(t.namespace)}/${enc(t.name)}?version=${enc(t.version)}`, undefined, signal)
      .then((v) => { template = v; }, (e) => { template = null; if (!signal.aborted) showError(e); })
      .then(() => { if (!signal.aborted) view.schedule(); });
  };
  // The template's steps ({name, depends_on?, …}, in its order) once known, else null: what the
  // step cards and the timeline are ordered by (step_order.js).
  const templateSteps = () => (template && template !== 'loading' ? template.definition.steps || [] : null);
  return { el: section('Graph', h('div', { class: 'dag-wrap' }, dag)), render, onSnapshot, templateSteps };
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
  for (const s of ['failed', 'running', 'enqueued', 'throttled', 'waiting_retry', 'waiting', 'pending']) if (states.includes(s)) return s;
  if (states.every((s) => s === 'completed')) return 'completed';
  const counts = new Map();
  for (const s of states) counts.set(s, (counts.get(s) || 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0][0];
}

// A waiting step's wait in its DAG node (after "wait · "): "for approved", "until 14:02:31".
function waitSub(w) {
  if (w.kind === 'signal') return `for ${w.signal}`;
  if (w.kind === 'event') return `for event ${w.event}`;
  return w.until ? `until ${fmtShort(w.until)}` : 'waiting';
}

// A throttled step's throttle in its DAG node: "throttled · shop/charge:A", "paused · stripe".
const throttleSub = (t) => `${t.kind === 'paused' ? 'paused' : 'throttled'} · ${t.key}`;

// The same in one line of text (the DAG node's tooltip).
function throttleText(t, limits) {
  const rate = rateOf(limits, t.key);
  if (t.kind === 'concurrency') return `throttled by concurrency key ${t.key} (limit ${t.limit}) since ${fmtShort(t.since)}`;
  if (t.kind === 'paused') return `rate limit ${t.key} paused${t.until ? ` until ${fmtShort(t.until)}` : ''}`;
  return `throttled by rate limit ${t.key} (${rate || `limit ${t.limit}`})${t.until ? ` until ${fmtShort(t.until)}` : ''}`;
}
