// The step cards of a task's page, grouped and filtered: a batch's instances ("sum#0" … "sum#299")
// under one header that counts them by state and folds them away, and a "Failed only" filter
// kept in the page's address (#/tasks/<id>?failed=1).

// The states of a step that failed for good (a failed attempt to be retried is `waiting_retry`).
const FAILED_STEP_STATES = ['failed'];
const isFailedStep = (st) => FAILED_STEP_STATES.includes(st.state);
// A batch of more instances than this starts folded.
const BATCH_UNFOLDED_MAX = 10;

// A task's steps (in graph order, step_order.js) as runs: a step on its own ({step}), or a
// batch's instances, one after the other in that order ({base, steps}).
function stepRuns(steps) {
  const runs = [];
  for (const st of steps) {
    const inst = batchInstance(st.name);
    const last = runs[runs.length - 1];
    if (inst && last && last.base === inst.base) last.steps.push(st);
    else runs.push(inst ? { base: inst.base, steps: [st] } : { step: st });
  }
  return runs;
}

// The step states, failed and in progress first: how a batch's counts are ordered when even.
const STATE_RANK = ['failed', 'running', 'enqueued', 'waiting_retry', 'throttled', 'waiting', 'pending', 'completed',
  'skipped', 'cancelled'];

// How many of `steps` are in each state: [[state, n]], the most common first (ties: failed, then
// in progress, then the rest).
function batchStateCounts(steps) {
  const counts = new Map();
  for (const st of steps) counts.set(st.state, (counts.get(st.state) || 0) + 1);
  const rank = (s) => { const i = STATE_RANK.indexOf(s); return i < 0 ? STATE_RANK.length : i; };
  return [...counts].sort((a, b) => b[1] - a[1] || rank(a[0]) - rank(b[0]));
}

// A batch's instances under a header (div.batch-group, data-group: the base name, data-count: how
// many): "sum — 300 steps:" with a badge a state ("290 completed", "8 failed"), and a button that
// folds or unfolds them. `open`: unfolded; `shown`: the instances to draw a card for (card(st));
// `locked`: the filter decides what is shown (the button is off); onToggle(): the button's click.
function batchGroup(base, steps, { open, shown, locked, onToggle }, card) {
  const toggle = h('button', {
    type: 'button', class: 'batch-toggle', 'aria-expanded': open ? 'true' : 'false', disabled: locked,
    title: locked ? 'showing its failed steps only' : `${open ? 'fold' : 'unfold'} its ${steps.length} steps`,
    text: base, onclick: onToggle,
  });
  const head = h('div', {
    class: 'batch-group', 'data-group': base, 'data-count': steps.length, 'data-open': open ? 'true' : 'false',
  },
    // (the spaces: for its text, "sum — 300 steps: 290 completed 8 failed"; the layout spaces them)
    toggle, ' ',
    h('span', { class: 'muted', text: `— ${steps.length} ${steps.length === 1 ? 'step' : 'steps'}:` }),
    batchStateCounts(steps).map(([state, n]) => [' ',
      h('span', { class: `badge state-${state}`, 'data-state': state, 'data-n': n, text: `${n} ${state}` })]));
  return h('div', { class: 'batch', 'data-group': base }, head,
    shown.length ? h('div', { class: 'batch-steps' }, shown.map(card)) : null);
}

// The "Failed only" checkbox (#failed-only) and how many steps failed (#failed-count, its
// data-count the number). onChange(on) when it is clicked; render(count, on) shows the count and
// whether the filter applies (it is off, and the checkbox disabled, while no step failed).
function failedOnlyToggle(onChange) {
  const box = h('input', { id: 'failed-only', type: 'checkbox', onchange: () => onChange(box.checked) });
  const count = h('span', { id: 'failed-count', class: 'muted' });
  const render = (failed, on) => {
    box.checked = on;
    box.disabled = !failed;
    count.dataset.count = failed;
    count.textContent = failed ? `${failed} failed` : 'none failed';
  };
  const el = h('div', { class: 'steps-toolbar' }, h('label', { class: 'check', for: 'failed-only' }, box, 'Failed only'), count);
  return { el, render };
}

// Whether the page's address asks for failed steps only (?failed=1), and to say so in it: the
// address is replaced, not navigated to (no new history entry, the page is not drawn again).
const failedOnlyInAddress = () => routeQuery().get('failed') === '1';
function setFailedOnlyInAddress(on) {
  const q = routeQuery();
  if (on) q.set('failed', '1');
  else q.delete('failed');
  const path = location.hash.split('?')[0];
  history.replaceState(null, '', q.toString() ? `${path}?${q}` : path);
}
