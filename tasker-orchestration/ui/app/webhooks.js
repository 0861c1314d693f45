// The webhooks page (#/webhooks): the webhooks of the namespaces the token covers (GET
// /v1/webhooks), each with the URL a sender posts to, its signature format, how a request
// becomes an event (its name, key and id: the format's defaults or pointers into the body), the
// replay window, how many requests it turned into events and when the last came — and a link to
// those events. Never a secret. Fetched again every few seconds while the page is open.

const WEBHOOKS_EVERY = 5000;

// The event name a webhook's requests become: its fixed `event`, else its format's default.
function webhookEvent(w) {
  if (w.event) return w.event;
  return { github: 'github.<X-GitHub-Event>', stripe: 'stripe.<type>' }[w.format] || w.name;
}

async function webhooksView(root, signal) {
  const box = h('div');
  const status = h('span', { id: 'webhooks-status', class: 'muted' });
  const heads = ['webhook', 'namespace', 'URL', 'format', 'event', 'key', 'id', 'window', 'received', 'last'];
  const row = (w) => h('tr', { 'data-webhook': w.name },
    h('td', {}, h('strong', { class: 'webhook-name', text: w.name })),
    h('td', {}, h('code', { class: 'namespace', text: w.namespace })),
    h('td', {}, h('code', { class: 'webhook-url', text: `${location.origin}/v1/webhooks/${enc(w.name)}` })),
    h('td', { class: 'webhook-format', text: w.format }),
    h('td', { class: 'webhook-event' }, h('a', {
      href: w.event || w.format === 'generic' ? eventsHref({ namespace: w.namespace, name: webhookEvent(w) })
        : eventsHref({ namespace: w.namespace }),
      text: webhookEvent(w),
    })),
    h('td', {}, h('code', { class: 'webhook-key', text: w.key || '—' })),
    h('td', {}, h('code', { class: 'webhook-id', text: w.id || '—' })),
    h('td', { class: 'num webhook-window', text: `${w.tolerance_seconds}s` }),
    h('td', { class: 'num webhook-received', text: String(w.received) }),
    h('td', { class: 'webhook-last' }, relEl(w.last_received_at) || '—'));
  const load = async (current) => {
    const data = await api('GET', '/v1/webhooks', undefined, signal);
    if (!current()) return;
    const hooks = [...(data.webhooks || [])].sort((a, b) => String(a.name).localeCompare(String(b.name)));
    const received = hooks.reduce((n, w) => n + Number(w.received || 0), 0);
    status.replaceChildren(`${hooks.length} webhooks · ${received} requests received`,
      ` · updated ${fmtShort(new Date().toISOString())}`);
    box.replaceChildren(table({ id: 'webhooks' }, heads, hooks.map(row),
      'No webhook. Save one with `tasker webhooks set` or PUT /v1/webhooks/{name}.'));
  };
  const { again, start } = refreshing(signal, load, () => WEBHOOKS_EVERY);
  put(root, h('h1', { text: 'Webhooks' }), h('div', { class: 'toolbar' },
    h('button', { id: 'refresh', type: 'button', text: 'Refresh', onclick: again }), status), box);
  await start();
}
