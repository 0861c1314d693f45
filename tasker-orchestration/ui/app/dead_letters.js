// The dead letters page (#/dead-letters) and one dead letter's page: replay or discard it.

// The list's filter, from the page's address (#/dead-letters?queue=…&reason=…).
function letterFilter() {
  const q = routeQuery();
  const f = {};
  for (const k of ['queue', 'reason']) if (q.get(k)) f[k] = q.get(k);
  return f;
}

async function deadLettersView(root, signal) {
  const box = h('div');
  const f = letterFilter();
  const queue = h('input', { id: 'letters-queue', type: 'text', placeholder: 'queue', 'aria-label': 'Queue', value: f.queue || '' });
  const reason = h('input', { id: 'letters-reason', type: 'text', placeholder: 'reason starts with', 'aria-label': 'Reason starts with', value: f.reason || '' });
  const apply = (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    if (queue.value.trim()) q.set('queue', queue.value.trim());
    if (reason.value.trim()) q.set('reason', reason.value.trim());
    location.hash = q.toString() ? `#/dead-letters?${q}` : '#/dead-letters';
  };
  const panel = h('div', { id: 'bulk-confirm', class: 'confirm', hidden: true });
  const bulk = h('div', { id: 'bulk-bar', class: 'bulk-bar' },
    ['replay', 'discard'].map((action) => h('button', { type: 'button', class: `bulk-${action}`, 'data-action': action,
      text: `${capitalized(action)} all matching…`, onclick: () => askBulk(panel, action, letterFilter(), 'dead letters') })),
    panel);
  put(root, h('h1', { text: 'Dead letters' }),
    h('div', { class: 'toolbar' }, h('form', { class: 'filters', onsubmit: apply }, queue, reason,
      h('button', { type: 'submit', text: 'Apply' }))),
    bulk, box);
  const listed = new URLSearchParams(f).toString();
  await pagedList(box, signal, {
    id: 'dead-letters', key: 'dead_letters', empty: 'No dead letters.',
    heads: ['id', 'queue', 'reason', 'task', 'first seen', 'last seen', 'times', 'bytes'],
    url: (before) => `/v1/dead-letters?limit=50${listed ? `&${listed}` : ''}${before != null ? `&before=${enc(before)}` : ''}`,
    row: (d) => h('tr', { 'data-dead-letter-id': d.id },
      h('td', {}, h('a', { href: `#/dead-letters/${enc(d.id)}`, text: String(d.id) })),
      h('td', { class: 'mono', text: d.queue || '—' }),
      h('td', { class: 'reason', text: d.reason }),
      h('td', {}, d.task_id ? h('a', { class: 'mono', href: `#/tasks/${enc(d.task_id)}`, title: d.task_id, text: `${d.task_id.slice(0, 8)}…` }) : '—'),
      h('td', {}, timeEl(d.first_seen)),
      h('td', {}, timeEl(d.last_seen)),
      h('td', { class: 'num', text: String(d.times_seen) }),
      h('td', { class: 'num', text: String(d.bytes) })),
  }).start();
}

async function deadLetterView(root, signal, id) {
  const d = await api('GET', `/v1/dead-letters/${enc(id)}`, undefined, signal);
  if (signal.aborted) return;
  const body = 'body' in d ? ['Body (JSON)', pretty(d.body)] : 'body_text' in d ? ['Body (text)', d.body_text]
    : ['Body (base64)', d.body_base64 || ''];
  const panel = h('div', { id: 'discard-panel', class: 'confirm', hidden: true });
  // Replay or discard (asked first), then back to the list with a notice.
  const act = (method, path, notice) => async (e) => {
    const btn = e.currentTarget;
    btn.disabled = true;
    clearError();
    try {
      flash = notice(await api(method, path));
      location.hash = '#/dead-letters';
    } catch (err) {
      showError(err);
      btn.disabled = false;
    }
  };
  put(root,
    h('h1', { text: `Dead letter ${d.id}` }),
    dl([
      ['queue', h('span', { class: 'mono', text: d.queue || 'unknown' })], ['reason', d.reason],
      ['sender', h('span', { class: 'mono', text: d.sender || 'none (replaying it could move nothing)' })],
      ['namespaces', (d.namespaces || []).join(', ') || 'unknown (tokens of every namespace only)'],
      ['task', d.task_id ? h('a', { class: 'mono', href: `#/tasks/${enc(d.task_id)}`, text: d.task_id }) : null],
      ['step', d.step_id ? h('span', { class: 'mono', text: d.step_id }) : null],
      ['first seen', timeEl(d.first_seen)], ['last seen', timeEl(d.last_seen)],
      ['times seen', String(d.times_seen)], ['bytes', String(d.bytes)],
    ]),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'replay primary', 'data-id': d.id, text: 'Replay to its queue',
        onclick: act('POST', `/v1/dead-letters/${enc(d.id)}/replay`, (r) => `Dead letter ${d.id} replayed to ${(r && r.queue) || d.queue}.`) }),
      h('button', { type: 'button', class: 'discard danger', 'data-id': d.id, text: 'Discard…', onclick: () => confirmIn(panel,
        ['Discard dead letter ', h('strong', { text: String(d.id) }), '? Its message is deleted; this cannot be undone.'],
        h('button', { id: 'discard-confirm', type: 'button', class: 'danger', text: 'Discard',
          onclick: act('DELETE', `/v1/dead-letters/${enc(d.id)}`, () => `Dead letter ${d.id} discarded.`) })) })),
    panel,
    section('Headers', h('pre', { class: 'headers', text: pretty(d.headers) })),
    section(body[0], h('pre', { class: 'body', text: body[1] })));
}
