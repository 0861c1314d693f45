// The templates and dead-letters pages, and the start of the app.

// ---------- templates ----------

async function templatesView(root, signal) {
  const data = await api('GET', '/v1/templates', undefined, signal);
  if (signal.aborted) return;
  put(root, h('h1', { text: 'Templates' }), table({ id: 'templates' },
    ['template', 'version', 'description', 'steps', 'registered', 'by'],
    data.templates.map((t) => h('tr', { 'data-template': `${t.namespace}/${t.name}@${t.version}` },
      h('td', {}, h('a', { href: templateHref(t), text: `${t.namespace}/${t.name}` })),
      h('td', { class: 'mono', text: t.version }),
      h('td', { text: t.description || '' }),
      h('td', { class: 'num', text: String(((t.definition || {}).steps || []).length) }),
      h('td', {}, timeEl(t.registered_at)),
      h('td', { class: 'muted', text: t.registered_by || '' }))),
    'No templates registered.'));
}

async function templateView(root, signal, namespace, name, version) {
  const t = await api('GET', `/v1/templates/${enc(namespace)}/${enc(name)}?version=${enc(version)}`, undefined, signal);
  if (signal.aborted) return;
  const def = t.definition || {};
  const steps = def.steps || [];
  const dag = svg('svg', { id: 'template-dag', class: 'dag', role: 'img', 'aria-label': 'step graph' });
  drawDag(dag, steps, (st) => ({ sub: st.handler }));
  const showTasks = () => {
    Object.assign(taskFilter, { state: '', namespace: t.namespace, name: t.name });
    location.hash = '#/tasks';
  };
  put(root,
    h('h1', {}, `${t.namespace}/${t.name}`, h('span', { class: 'muted', text: ` @${t.version}` })),
    t.description && h('p', { class: 'description', text: t.description }),
    dl([['registered', timeEl(t.registered_at)], ['by', t.registered_by], ['id', h('span', { class: 'mono', text: t.id })]]),
    h('div', { class: 'actions' }, h('button', { type: 'button', text: 'Tasks of this template', onclick: showTasks })),
    section('Graph', h('div', { class: 'dag-wrap' }, dag)),
    section('Definition', h('details', {}, h('summary', { text: `${steps.length} steps, retry policies, timeouts, context schema` }),
      h('pre', { text: pretty(def) }))));
}

// ---------- dead letters ----------

async function deadLettersView(root, signal) {
  const box = h('div');
  put(root, h('h1', { text: 'Dead letters' }), box);
  await pagedList(box, signal, {
    id: 'dead-letters', key: 'dead_letters', empty: 'No dead letters.',
    heads: ['id', 'queue', 'reason', 'task', 'first seen', 'last seen', 'times', 'bytes'],
    url: (before) => `/v1/dead-letters?limit=50${before != null ? `&before=${enc(before)}` : ''}`,
    row: (d) => h('tr', { 'data-dead-letter-id': d.id },
      h('td', {}, h('a', { href: `#/dead-letters/${enc(d.id)}`, text: String(d.id) })),
      h('td', { class: 'mono', text: d.queue || '—' }),
      h('td', { class: 'reason', text: d.reason }),
      h('td', {}, d.task_id ? h('a', { class: 'mono', href: `#/tasks/${enc(d.task_id)}`, title: d.task_id, text: `${d.task_id.slice(0, 8)}…` }) : '—'),
      h('td', {}, timeEl(d.first_seen)),
      h('td', {}, timeEl(d.last_seen)),
      h('td', { class: 'num', text: String(d.times_seen) }),
      h('td', { class: 'num', text: String(d.bytes) })),
  })(null);
}

async function deadLetterView(root, signal, id) {
  const d = await api('GET', `/v1/dead-letters/${enc(id)}`, undefined, signal);
  if (signal.aborted) return;
  const body = 'body' in d ? ['Body (JSON)', pretty(d.body)] : 'body_text' in d ? ['Body (text)', d.body_text]
    : ['Body (base64)', d.body_base64 || ''];
  // Replay or discard, then back to the list with a notice.
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
      ['task', d.task_id ? h('a', { class: 'mono', href: `#/tasks/${enc(d.task_id)}`, text: d.task_id }) : null],
      ['step', d.step_id ? h('span', { class: 'mono', text: d.step_id }) : null],
      ['first seen', timeEl(d.first_seen)], ['last seen', timeEl(d.last_seen)],
      ['times seen', String(d.times_seen)], ['bytes', String(d.bytes)],
    ]),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'replay primary', 'data-id': d.id, text: 'Replay to its queue',
        onclick: act('POST', `/v1/dead-letters/${enc(d.id)}/replay`, (r) => `Dead letter ${d.id} replayed to ${(r && r.queue) || d.queue}.`) }),
      h('button', { type: 'button', class: 'discard danger', 'data-id': d.id, text: 'Discard',
        onclick: act('DELETE', `/v1/dead-letters/${enc(d.id)}`, () => `Dead letter ${d.id} discarded.`) })),
    section('Headers', h('pre', { class: 'headers', text: pretty(d.headers) })),
    section(body[0], h('pre', { class: 'body', text: body[1] })));
}

// ---------- start ----------

byId('token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  setToken(byId('token-input').value.trim());
  byId('token-input').value = '';
  byId('token-form').hidden = true;
  route();
});
byId('forget-token').addEventListener('click', () => {
  setToken('');
  flash = 'API token forgotten.';
  route();
});
window.addEventListener('hashchange', route);
route();

