// The audit log page (#/audit): every request that asked to change something, newest first —
// who (the token), what (method, route, namespaces, task and other targets), when, from where,
// and the answer's status — filtered and paged as GET /v1/audit allows (an admin token; one
// scoped to namespaces sees the rows of its namespaces).

// ---------- audit log ----------

// Kept across views: the inputs as typed (`since`/`until` local times).
const auditFilter = { namespace: '', token: '', route: '', method: '', since: '', until: '' };
const AUDIT_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];

// The list's query: the filters (times as RFC 3339 UTC), 50 rows a page, before `before`.
function auditQuery(before) {
  const q = new URLSearchParams({ limit: '50' });
  for (const k of ['namespace', 'token', 'route', 'method']) if (auditFilter[k]) q.set(k, auditFilter[k]);
  if (auditFilter.since) q.set('since', new Date(auditFilter.since).toISOString());
  if (auditFilter.until) q.set('until', new Date(auditFilter.until).toISOString());
  if (before != null) q.set('before', before);
  return `/v1/audit?${q}`;
}

// What a row acted on: its namespaces, its task (a link) and its other targets by kind.
function auditTargets(e) {
  const parts = [];
  if (e.namespaces.length) parts.push(h('span', { class: 'audit-ns', text: e.namespaces.join(', ') }));
  if (e.task_id) parts.push(h('a', { class: 'mono', href: taskHref(e.task_id), text: `task ${e.task_id}` }));
  for (const [kind, value] of Object.entries(e.target || {})) {
    parts.push(h('span', { class: 'audit-target', 'data-kind': kind },
      h('span', { class: 'muted', text: `${kind} ` }), typeof value === 'string' ? value : JSON.stringify(value)));
  }
  return parts.length ? parts.flatMap((p, i) => (i ? [' · ', p] : [p])) : '—';
}

async function auditView(root, signal) {
  const input = (key, attrs) => h('input', Object.assign({ id: `audit-${key}`, type: 'text', value: auditFilter[key] }, attrs));
  const nsInput = input('namespace', { placeholder: 'namespace', 'aria-label': 'Namespace' });
  const tokenInput = input('token', { placeholder: 'token name', 'aria-label': 'Token name' });
  const routeInput = input('route', { class: 'mono', placeholder: 'route /v1/tasks/{id}/cancel', 'aria-label': 'Route pattern' });
  const methodSel = h('select', { id: 'audit-method', 'aria-label': 'Method' },
    ['', ...AUDIT_METHODS].map((m) => h('option', { value: m, text: m || 'all methods', selected: m === auditFilter.method })));
  const sinceInput = input('since', { type: 'datetime-local', step: 1 });
  const untilInput = input('until', { type: 'datetime-local', step: 1 });
  const box = h('div');
  const list = pagedList(box, signal, {
    id: 'audit', key: 'entries', empty: 'No requests recorded.',
    heads: ['id', 'at', 'token', 'request', 'status', 'from', 'acted on'],
    url: auditQuery,
    row: (e) => h('tr', { 'data-audit-id': e.id, 'data-status': e.status, 'data-route': e.route },
      h('td', { class: 'num', text: String(e.id) }),
      h('td', {}, timeEl(e.at)),
      h('td', { class: 'audit-token', title: e.token_id != null ? `token id ${e.token_id}` : 'no token' },
        e.token_name || h('span', { class: 'muted', text: 'none' })),
      h('td', { class: 'mono audit-request', text: `${e.method} ${e.route}` }),
      h('td', { class: `num audit-status${e.status >= 400 ? ' refused' : ''}`, text: String(e.status) }),
      h('td', { class: 'mono', title: e.forwarded_for ? `X-Forwarded-For: ${e.forwarded_for}` : null,
        text: e.forwarded_for ? `${e.peer || '?'} (${e.forwarded_for})` : (e.peer || '—') }),
      h('td', { class: 'audit-targets' }, auditTargets(e))),
  });
  const apply = () => {
    Object.assign(auditFilter, {
      namespace: nsInput.value.trim(), token: tokenInput.value.trim(), route: routeInput.value.trim(),
      method: methodSel.value, since: sinceInput.value, until: untilInput.value,
    });
    list.show(null);
  };
  for (const el of [nsInput, tokenInput, routeInput, methodSel, sinceInput, untilInput]) el.addEventListener('change', apply);
  put(root, h('h1', { text: 'Audit log' }), h('div', { class: 'toolbar' },
    h('form', { class: 'filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
      nsInput, tokenInput, routeInput, methodSel,
      h('label', {}, 'since ', sinceInput), h('label', {}, 'until ', untilInput),
      h('button', { type: 'submit', text: 'Apply' }))),
  h('p', { class: 'muted hint' },
    'Every request that asked to change something, refused ones too (401, 403, …), newest first. It takes an admin token; one limited to namespaces sees the requests that named only its namespaces.'),
  box);
  await list.start();
}
