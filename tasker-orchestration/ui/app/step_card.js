// A step's card on the task page: its state, attempt, wait, throttle, limits, child, result
// and error.

// The rate of a step's rate limit, when its `limits` name the key: "100 per 1 s".
const rateOf = (limits, key) => {
  const r = limits && limits.rate;
  return r && r.key === key && r.per_ms ? `${r.limit} per ${fmtPer(r.per_ms)}` : null;
};

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
// signal `approved` until … — on timeout: fail", "waiting for event `payment.settled` until …".
const waitInfo = (w) => h('div', { class: 'wait-info', 'data-kind': w.kind },
  w.kind === 'sleep' ? 'sleeping' : w.kind === 'signal' ? ['waiting for signal ', h('code', { text: w.signal || '?' })]
    : w.kind === 'event' ? ['waiting for event ', h('code', { text: w.event || '?' })] : 'waiting',
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
      st.state === 'running' && st.started_at
        ? h('span', { class: 'muted step-running' }, `running on ${st.worker || '?'} since `, timeEl(st.started_at))
        : st.worker && h('span', { class: 'muted', text: `worker ${st.worker}` }),
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
