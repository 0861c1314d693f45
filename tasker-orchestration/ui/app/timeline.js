// The task page's timeline: its steps in time, every attempt a bar, zoomable.

const MIN_WINDOW_US = 10; // the narrowest window of the timeline
const FAILED_ENDS = ['failed', 'waiting_retry'];
const STEP_TIMES = ['dispatched_at', 'started_at', 'finished_at', 'processed_at']; // an attempt's, in order

// Each step's attempts from a task's history: step name → [{attempt, from, to, end, reason}],
// `from` when it was enqueued and `to` when it ended (µs; NaN while under way), `end` the state it
// ended in.
function attemptsOf(history) {
  const byStep = new Map();
  for (const t of history) {
    if (!t.step || t.attempt == null) continue;
    if (!byStep.has(t.step)) byStep.set(t.step, []);
    const list = byStep.get(t.step);
    // A worker's report that the attempt runs (`running`) does not end it.
    if (t.to === 'running') continue;
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

// A window [from, to] (µs from the task's creation) kept inside the task's span and at least
// MIN_WINDOW_US wide; null when it covers all of the span.
function clampWindow(from, to, span) {
  const width = Math.max(MIN_WINDOW_US, to - from);
  if (width >= span) return null;
  const start = Math.min(Math.max(0, (from + to) / 2 - width / 2), span - width);
  return [start, start + width];
}

// The window of a task's activity (activityOf): with a margin of a twentieth of it each side.
const activityWindow = (activity, span) => {
  if (!activity) return null;
  const pad = Math.max(MIN_WINDOW_US, activity[1] - activity[0]) / 20;
  return clampWindow(activity[0] - pad, activity[1] + pad, span);
};

// A task's steps in time, a row each, in the order given (graph order, step_order.js). Every
// attempt (from the history) is a bar, a failed one drawn failed; the latest, once it ran, is
// split into queue (dispatched → started), handler (started → finished) and result (finished →
// processed). Times are in µs, as the API gives them. The axis shows a window of the task's span
// (data-from-us / data-to-us on #waterfall, µs from its creation): at first (and with "Fit
// activity", .fit-activity) its activity, from its first bar to its last with a small margin (a
// task that waited long before or after its steps ran is not shown as empty track), else all of
// it ("Whole task", #timeline-fit), zoomed in or out, a step's attempts (a click on its name), one
// bar (a click on it), or a range dragged over the axis. draw(task, steps, history) again (each
// snapshot) keeps the window; fitted to the activity, it follows the activity.
function timeline() {
  const box = h('div', { id: 'waterfall', class: 'waterfall' });
  const zoomIn = h('button', { id: 'timeline-zoom-in', type: 'button', text: 'Zoom in', onclick: () => zoomBy(0.5) });
  const zoomOut = h('button', { id: 'timeline-zoom-out', type: 'button', text: 'Zoom out', onclick: () => zoomBy(2) });
  const fitActivity = h('button', {
    type: 'button', class: 'fit-activity', title: 'from the first bar to the last', text: 'Fit activity',
    onclick: () => { win = null; fit = 'activity'; redraw(); },
  });
  const whole = h('button', {
    id: 'timeline-fit', type: 'button', title: "from the task's creation to its end", text: 'Whole task',
    onclick: () => { win = null; fit = 'all'; redraw(); },
  });
  const shown = h('span', { id: 'timeline-window', class: 'muted' });
  let win = null;        // a window zoomed to: [from, to], µs from the task's creation; null: `fit`'s
  let fit = 'activity';  // the window when not zoomed: 'activity' (activityWindow()) or 'all' (the span)
  let activity = null;   // [first, last] of the bars at the last draw, µs from the task's creation
  let span = 1;    // the task's span, µs
  let last = null; // the arguments of the last draw
  let growing = null; // while a step runs: the timer that draws its bar on to now
  const redraw = () => { if (last) draw(...last); };
  // Zoomed, the window zoomed to; else the activity's (unless none, or it fills the span), or all.
  const view = () => win || (fit === 'activity' && activityWindow(activity, span)) || [0, span];
  // A window zoomed to; one that covers the span shows all of it (not the activity).
  const setWindow = (from, to) => {
    win = clampWindow(from, to, span);
    if (!win) fit = 'all';
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
    const times = [task.completed_at, ...history.map((t) => t.at), ...steps.flatMap((st) => STEP_TIMES.map((f) => st[f]))]
      .map(us).filter(isFinite);
    // A running step's handler bar grows to now: drawn again every second while on the page.
    const running = steps.some((st) => st.state === 'running');
    const t1 = Math.max(t0, ...times, running && !task.completed_at ? Date.now() * 1000 : -Infinity);
    clearTimeout(growing);
    growing = running ? setTimeout(() => { if (box.isConnected && !document.hidden) redraw(); }, 1000) : null;
    span = Math.max(1, t1 - t0);
    const attempts = attemptsOf(history);
    const tries = steps.map((st) => attempts.get(st.name) || []);
    const extents = steps.map((st, i) => stepExtent(st, tries[i], t1));
    activity = activityOf(extents, t0);
    const [from, to] = view();
    const pct = (t) => ((t - t0 - from) / (to - from)) * 100;
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
    box.dataset.fromUs = Math.round(from);
    box.dataset.toUs = Math.round(to);
    box.replaceChildren(
      h('div', { class: 'wf-axis' }, h('span', { class: 'wf-label', text: 'step' }), axisScale(from, to, setWindow)),
      ...steps.map((st, i) => timelineRow(st, tries[i], extents[i], t0, t1, bar, zoomTo)));
    const all = from <= 0 && to >= span;
    zoomIn.disabled = to - from <= MIN_WINDOW_US;
    zoomOut.disabled = whole.disabled = all;
    fitActivity.disabled = !activityWindow(activity, span) || (!win && fit === 'activity');
    shown.textContent = all ? `all of the task: ${fmtDuration(span)}`
      : `${!win ? 'activity: ' : ''}${fmtDuration(to - from)} from ${fmtDuration(from)} · task ${fmtDuration(span)}`;
  }

  const legend = h('span', { class: 'wf-legend' }, ['queue', 'handler', 'result', 'attempt'].map((k) => h('span', { class: `legend ${k}`, text: k })));
  return { el: h('div', {}, h('div', { class: 'wf-controls' }, zoomIn, zoomOut, fitActivity, whole, shown, legend), box), draw };
}

// A step's latest attempt as its row draws it: its dispatch, start, finish and processing times
// (µs), whether it ran (its start is not older than its dispatch: a step enqueued again keeps the
// times of the attempt before until this one reports) and whether it runs now.
function latestRun(st) {
  const [d, s, f, p] = STEP_TIMES.map((k) => us(st[k]));
  const ran = isFinite(s) && !(s < d);
  return { d, s, f, p, ran, running: ran && st.state === 'running' };
}

// When a step's bars begin and end: [first, last] (absolute µs), null when it has none. `tries`:
// its attempts (attemptsOf); `t1`: the end of the task's span (an open attempt's end).
function stepExtent(st, tries, t1) {
  const { d, f, p, ran, running } = latestRun(st);
  const ends = [...tries.flatMap((x) => [x.from, x.end == null ? t1 : x.to]), ...(running ? [d, t1] : ran ? [d, p, f] : [])]
    .filter(isFinite);
  return ends.length ? [Math.min(...ends), Math.max(...ends)] : null;
}

// When the task's steps ran: [first, last] over their extents (stepExtent), µs from the task's
// creation `t0`; null when none has a bar.
function activityOf(extents, t0) {
  const found = extents.filter(Boolean);
  if (!found.length) return null;
  return [Math.min(...found.map((e) => e[0])) - t0, Math.max(...found.map((e) => e[1])) - t0];
}

// One step's row of the timeline: a bar for each of its `tries` (attemptsOf) and, once its
// latest attempt ran, its queue, handler and result bars (bar(kind, a, b, attempt, title, failed)
// draws one, null outside the window); its label zooms to its `extent` (stepExtent). `t0`: the
// task's creation, `t1`: the end of its span (an open attempt's end).
function timelineRow(st, tries, extent, t0, t1, bar, zoomTo) {
  const { d, s, f, p, ran, running } = latestRun(st);
  const failed = ran && FAILED_ENDS.includes(st.state);
  const bars = [
    tries.filter((x) => !(ran && x.attempt === st.attempt)).map((x) => {
      const end = x.end == null ? t1 : x.to;
      return bar(`attempt${x.end == null ? ' open' : ''}`, x.from, end, x.attempt, attemptTitle(x, end), FAILED_ENDS.includes(x.end));
    }),
    // Running: its handler bar ends at t1 (now), with no result yet.
    running && [
      bar('queue', d, s, st.attempt, `queue ${fmtDuration(s - d)} (attempt ${st.attempt})`),
      bar('handler open', s, t1, st.attempt, `running on ${st.worker || '?'} for ${fmtDuration(t1 - s)} (attempt ${st.attempt})`),
    ],
    ran && !running && [
      bar('queue', d, s, st.attempt, `queue ${fmtDuration(s - d)} (attempt ${st.attempt})`),
      bar('handler', s, f, st.attempt, `handler ${fmtDuration(f - s)} (attempt ${st.attempt}${failed ? ', failed' : ''})`, failed),
      bar('result', f, p, st.attempt, `result ${fmtDuration(p - f)} (attempt ${st.attempt})`),
    ],
  ];
  return h('div', { class: 'wf-row', 'data-step': st.name, 'data-state': st.state, 'data-attempts': tries.length || null },
    h('button', {
      type: 'button', class: 'wf-label', title: `${st.name} (${st.state}): zoom to its attempts`, text: st.name,
      disabled: !extent, onclick: () => zoomTo(extent[0] - t0, extent[1] - t0),
    }),
    h('span', { class: 'wf-track' }, bars));
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
