// The workers page (#/workers): the live workers (and, asked, those not seen lately).

const workerFilter = { all: false }; // kept across views
const HANDLERS_SHOWN = 4; // a longer list of handlers is folded

// The workers (GET /v1/workers; with `all`, those not seen lately too), fetched again every
// heartbeat (2 to 30 s) while the page is open; a handler list unfolded stays so.
async function workersView(root, signal) {
  const allBox = h('input', { id: 'workers-all', type: 'checkbox', checked: workerFilter.all });
  const box = h('div');
  const status = h('span', { id: 'workers-status', class: 'muted' });
  const unfolded = new Set();
  const heads = ['worker', 'language', 'version', 'host / pid', 'namespaces', 'handlers', 'concurrency', 'started', 'last seen', ''];
  let every = 5000;
  const handlersCell = (w) => {
    const list = w.handlers || [];
    const codes = list.map((x) => [h('code', { text: x }), ' ']);
    if (list.length <= HANDLERS_SHOWN) return codes;
    const details = h('details', { open: unfolded.has(w.id) }, h('summary', { text: `${list.length} handlers` }), codes);
    details.addEventListener('toggle', () => (details.open ? unfolded.add(w.id) : unfolded.delete(w.id)));
    return details;
  };
  const row = (w) => h('tr', { 'data-worker-id': w.id, 'data-name': w.name, 'data-live': String(!!w.live), class: w.live ? null : 'stale' },
    h('td', {}, h('strong', { class: 'worker-name', text: w.name })),
    h('td', { class: 'language', text: w.language }),
    h('td', { class: 'mono', text: w.version }),
    h('td', { class: 'mono host', text: `${w.host} / ${w.pid}` }),
    h('td', { class: 'namespaces' }, (w.namespaces || []).map((ns) => [h('code', { class: 'namespace', text: ns }), ' '])),
    h('td', { class: 'handlers' }, handlersCell(w)),
    h('td', { class: 'num', text: String(w.concurrency ?? '—') }),
    h('td', {}, timeEl(w.started_at)),
    h('td', { class: 'last-seen', title: w.heartbeat_ms ? `reports every ${w.heartbeat_ms / 1000} s` : null }, relEl(w.last_seen_at) || '—'),
    h('td', {}, h('span', { class: `badge live-badge state-${w.live ? 'live' : 'stale'}`, text: w.live ? 'live' : 'not live' })));
  const load = async (current) => {
    const data = await api('GET', `/v1/workers${workerFilter.all ? '?all=true' : ''}`, undefined, signal);
    if (!current()) return;
    // Live ones first, then by name.
    const workers = [...(data.workers || [])].sort((a, b) => (b.live === true) - (a.live === true) ||
      String(a.name).localeCompare(String(b.name)) || String(a.host).localeCompare(String(b.host)) || (a.pid - b.pid));
    // The answer's heartbeat, else the shortest of the workers' own (`heartbeat_ms`).
    const beat = Number(data.heartbeat_seconds) ||
      Math.min(...workers.map((w) => Number(w.heartbeat_ms) / 1000).filter((x) => x > 0));
    if (isFinite(beat) && beat > 0) every = Math.min(30, Math.max(2, beat)) * 1000;
    const live = workers.filter((w) => w.live).length;
    status.replaceChildren(`${live} live`, workerFilter.all ? ` of ${workers.length}` : '',
      isFinite(beat) && beat > 0 ? ` · heartbeat every ${+beat.toFixed(1)} s` : '', ` · updated ${fmtShort(new Date().toISOString())}`);
    box.replaceChildren(table({ id: 'workers' }, heads, workers.map(row),
      workerFilter.all ? 'No worker seen in the last 24 hours.' : 'No live worker.'));
  };
  const { again, start } = refreshing(signal, load, () => every);
  allBox.addEventListener('change', () => { workerFilter.all = allBox.checked; again(); });
  put(root, h('h1', { text: 'Workers' }), h('div', { class: 'toolbar' },
    h('label', { class: 'check' }, allBox, ' also workers not seen lately (last 24 h)'),
    h('button', { id: 'refresh', type: 'button', text: 'Refresh', onclick: again }),
    status), box);
  await start();
}
