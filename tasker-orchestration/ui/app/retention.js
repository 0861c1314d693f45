// The retention page (#/retention): the retention policy the orchestrators run.

const RETENTION_EVERY = 30000; // the page is fetched again this often while it is open

// A retention as configured ("30d", "1h30m") or "never".
const isNever = (v) => String(v).trim() === 'never';
// How long finished tasks of a state are kept: "kept 30d", or "never purged".
const keptFor = (v) => (isNever(v) ? 'never purged' : `kept ${v}`);
// How often an orchestrator looks: "60 s", "1.5 s", then "10 min", "1 h" (fmtPer).
const fmtEvery = (v) => (v == null || !isFinite(v) ? '—' : v < 600000 ? `${+(v / 1000).toFixed(1)} s` : fmtPer(v));

// The retention policy the orchestrators run (GET /v1/retention): how long finished tasks of each
// state are kept before they are purged, how long a purged task's id answers 410 task_purged, the
// purge's pace and when a task was last purged; fetched again every 30 s while the page is open.
async function retentionView(root, signal) {
  const box = h('div', { id: 'retention' });
  const status = h('span', { id: 'retention-status', class: 'muted' });
  const load = async (current) => {
    const r = await api('GET', '/v1/retention', undefined, signal);
    if (!current()) return;
    const kept = (state) => h('span', { id: `retention-${state}`, 'data-kept': r[state], text: keptFor(r[state]) });
    box.replaceChildren(dl([
      ['Completed tasks', kept('complete')],
      ['Failed tasks', kept('error')],
      ['Cancelled tasks', kept('cancelled')],
      ['Purged ids', h('span', { id: 'retention-tombstones', 'data-kept': r.tombstones,
        text: isNever(r.tombstones) ? 'answer 410 forever' : `answer 410 for ${r.tombstones}` })],
      ['Audit log', r.audit ? h('span', { id: 'retention-audit', 'data-kept': r.audit, text: keptFor(r.audit) }) : null],
      ['Pace', h('span', { id: 'retention-pace',
        text: `${r.batch} ${r.batch === 1 ? 'task' : 'tasks'} a batch, at most ${r.busy_percent}% of the time, every ${fmtEvery(r.interval_ms)}` })],
      ['Last purge', h('span', { id: 'retention-last', 'data-purged-at': r.last_purged_at },
        r.last_purged_at ? [timeEl(r.last_purged_at), ' (', relEl(r.last_purged_at), ')']
          : h('span', { class: 'muted', text: 'No purged task remembered' }))],
    ]));
    status.textContent = `updated ${fmtShort(new Date().toISOString())}`;
  };
  const { again, start } = refreshing(signal, load, () => RETENTION_EVERY);
  put(root, h('h1', { text: 'Retention' }), h('div', { class: 'toolbar' },
    h('button', { id: 'refresh', type: 'button', text: 'Refresh', onclick: again }),
    status),
  h('p', { class: 'muted hint' },
    'An orchestrator purges a finished task (with its steps, history, signals and dead letters) this long after it finished, as its ',
    h('code', { text: '[retention]' }), ' configuration says; the purged task\'s id then answers 410 task_purged while its tombstone is kept.'),
  box);
  await start();
}
