// The alerts page (#/alerts): the alert rules of the namespaces the token covers (GET
// /v1/alerts), firing ones first, each with what it watches, where it tells, what it counted at
// its last check, when it last fired and cleared, and its notices sent, failed and held back.
// Fetched again every few seconds while the page is open.

const ALERTS_EVERY = 5000;

// "5 failures of charge within 1m", "1 steps_waiting longer than 10m".
function alertCondition(w) {
  const filter = w.template ? ` of ${w.template}` : w.schedule ? ` of schedule ${w.schedule}` : '';
  const span = w.kind === 'steps_waiting' ? `longer than ${w.longer_than || '5m'}` : `within ${w.within || '5m'}`;
  return `${w.count ?? 1} ${w.kind}${filter} ${span}`;
}

async function alertsView(root, signal) {
  const box = h('div');
  const status = h('span', { id: 'alerts-status', class: 'muted' });
  const heads = ['rule', 'namespace', 'when', 'state', 'seen', 'sink', 'fired', 'resolved', 'notices', 'last error'];
  const row = (a) => h('tr', { 'data-alert': a.name, 'data-state': a.state },
    h('td', {}, h('strong', { class: 'alert-name', text: a.name })),
    h('td', {}, h('code', { class: 'namespace', text: a.namespace })),
    h('td', { class: 'alert-when', text: alertCondition(a.when) }),
    h('td', {}, h('span', { class: `badge alert-state state-${a.state === 'firing' ? 'error' : 'complete'}`, text: a.state })),
    h('td', { class: 'num alert-observed', text: a.observed == null ? '—' : String(a.observed) }),
    h('td', { class: 'alert-sink' }, h('span', { text: `${a.sink.kind} ` }), h('code', { text: a.sink.url || (a.sink.to || []).join(', ') })),
    h('td', { class: 'alert-fired' }, relEl(a.fired_at) || '—'),
    h('td', { class: 'alert-resolved' }, relEl(a.resolved_at) || '—'),
    h('td', { class: 'alert-notices', text: `${a.sent} sent · ${a.failed} failed · ${a.suppressed} held back` }),
    h('td', { class: 'alert-error muted', text: a.last_error || '' }));
  const load = async (current) => {
    const data = await api('GET', '/v1/alerts', undefined, signal);
    if (!current()) return;
    const alerts = [...(data.alerts || [])].sort((a, b) => (b.state === 'firing') - (a.state === 'firing') ||
      String(a.name).localeCompare(String(b.name)));
    const firing = alerts.filter((a) => a.state === 'firing').length;
    status.replaceChildren(`${firing} firing of ${alerts.length}`, ` · updated ${fmtShort(new Date().toISOString())}`);
    box.replaceChildren(table({ id: 'alerts' }, heads, alerts.map(row),
      'No alert rule. Save one with `tasker alerts set` or PUT /v1/alerts/{name}.'));
  };
  const { again, start } = refreshing(signal, load, () => ALERTS_EVERY);
  put(root, h('h1', { text: 'Alerts' }), h('div', { class: 'toolbar' },
    h('button', { id: 'refresh', type: 'button', text: 'Refresh', onclick: again }), status), box);
  await start();
}
