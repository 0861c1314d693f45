// The limits page (#/limits): the concurrency keys in use and the rate keys, a rate key paused
// and resumed.

const limitFilter = { key: '' }; // kept across views
const LIMITS_EVERY = 5000; // the page is fetched again this often while it is open

// A rate key is paused while its `paused_until` is ahead.
const isPaused = (r) => isFinite(ms(r.paused_until)) && ms(r.paused_until) > Date.now();

// A local time for <input type="datetime-local">: "2025-02-01T14:05".
function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

// Pause one rate key (for some minutes or until a time, with an optional note) in `panel`
// (`holder`, which holds it, is shown while it is open), or resume it: its button. A pause asks
// for confirmation in a dialog before it is sent; both end with done(notice). `onOpen(open)`
// says when the form opens and closes (the page is not redrawn under it).
function rateControls(r, panel, holder, done, onOpen) {
  const path = `/v1/rate-limits/${enc(r.key)}/pause`;
  const close = () => { holder.hidden = true; panel.replaceChildren(); onOpen(false); };
  // The request; `btn` stays disabled unless it fails.
  const send = async (btn, method, body, notice) => {
    btn.disabled = true;
    clearError();
    try {
      const after = await api(method, path, body);
      onOpen(false);
      done(notice(after || r));
    } catch (e) {
      showError(e);
      btn.disabled = false;
    }
  };
  const askPause = () => {
    const mode = h('select', { class: 'pause-mode', 'aria-label': 'Pause for or until' },
      h('option', { value: 'for', text: 'for', selected: true }), h('option', { value: 'until', text: 'until' }));
    const minutes = h('input', { type: 'number', class: 'pause-minutes', min: 1, max: 525600, step: 1, value: 5, 'aria-label': 'Minutes' });
    const minutesLabel = h('span', { class: 'pause-for' }, minutes, ' minutes');
    const until = h('input', { type: 'datetime-local', class: 'pause-until', hidden: true, 'aria-label': 'Paused until',
      value: localInput(new Date(Date.now() + 3600000)) });
    const note = h('input', { type: 'text', class: 'pause-note', maxlength: 1000, placeholder: 'note (optional): why, e.g. 429 from the provider', 'aria-label': 'Pause note' });
    const ok = h('button', { type: 'submit', class: 'pause-confirm danger', text: 'Pause rate limit' });
    mode.addEventListener('change', () => {
      minutesLabel.hidden = mode.value !== 'for';
      until.hidden = mode.value !== 'until';
    });
    const submit = (e) => {
      e.preventDefault();
      // The end of the pause; a value the browser cannot read is refused here (nothing sent), one
      // the API refuses (in the past, over a year ahead) shows its error.
      let at;
      if (mode.value === 'for') {
        const n = Number(minutes.value);
        if (!(n > 0)) return showError(new ApiError(0, 'invalid_request', 'the pause needs a number of minutes above 0'));
        at = new Date(Math.round((Date.now() + n * 60000) / 1000) * 1000); // to the second
      } else {
        at = new Date(until.value); // a local time
        if (!until.value || isNaN(at)) return showError(new ApiError(0, 'invalid_request', 'the pause needs a time to end at'));
      }
      const body = { until: at.toISOString() };
      if (note.value.trim()) body.note = note.value.trim();
      if (!window.confirm(`Pause rate limit ${r.key} until ${fmtShort(body.until)} (${fmtRel(body.until)})? No step of it starts before then.`)) return;
      send(ok, 'POST', body, (p) => `Rate limit ${r.key} paused until ${fmtShort(p.paused_until || body.until)}.`);
    };
    panel.replaceChildren();
    put(panel, h('form', { class: 'confirm-form', onsubmit: submit },
      h('span', {}, 'Pause ', h('strong', { text: r.key }), ': no step of it starts before the end of the pause.'),
      mode, minutesLabel, until, note, ok,
      h('button', { type: 'button', class: 'cancel', text: 'Cancel', onclick: close })));
    holder.hidden = false;
    onOpen(true);
    minutes.focus();
  };
  return isPaused(r)
    ? h('button', { type: 'button', class: 'resume', 'data-key': r.key, text: 'Resume',
      onclick: (e) => send(e.currentTarget, 'DELETE', undefined, () => `Rate limit ${r.key} resumed.`) })
    : h('button', { type: 'button', class: 'pause', 'data-key': r.key, text: 'Pause…', onclick: askPause });
}

// The concurrency keys (GET /v1/concurrency-limits, `?key=` a prefix) and the rate keys
// (GET /v1/rate-limits), fetched again every few seconds while the page is open; the rate
// table is not redrawn while a pause form is open in it.
async function limitsView(root, signal) {
  const keyInput = h('input', { id: 'limits-key', type: 'text', placeholder: 'concurrency key prefix', 'aria-label': 'Concurrency key prefix', value: limitFilter.key });
  const concurrencyBox = h('div');
  const rateBox = h('div');
  const status = h('span', { id: 'limits-status', class: 'muted' });
  const rateHeads = ['key', 'rate', 'burst', 'paused', 'throttled', ''];
  let formOpen = false;
  const concurrencyRow = (c) => {
    const full = c.in_use >= c.limit;
    return h('tr', { 'data-key': c.key, 'data-in-use': String(c.in_use), 'data-limit': String(c.limit), class: full ? 'full' : null },
      h('td', {}, h('code', { class: 'limit-key', text: c.key })),
      h('td', { class: 'num in-use', title: full ? 'every slot in use' : null, text: `${c.in_use} / ${c.limit}` }),
      h('td', { class: 'num throttled', text: String(c.throttled ?? 0) }));
  };
  const rateRows = (r) => {
    const paused = isPaused(r);
    const panel = h('div', { class: 'confirm' });
    const holder = h('tr', { class: 'confirm-row', 'data-confirm-for': r.key, hidden: true }, h('td', { colspan: rateHeads.length }, panel));
    const row = h('tr', { 'data-key': r.key, 'data-paused': String(paused) },
      h('td', {}, h('code', { class: 'limit-key', text: r.key })),
      h('td', { class: 'rate', text: `${r.limit} per ${fmtPer(r.per_ms)}` }),
      h('td', { class: 'num burst', text: String(r.burst ?? r.limit) }),
      h('td', { class: 'paused-state' }, paused
        ? [h('span', { class: 'badge state-paused', text: 'paused' }), ' until ', atEl(r.paused_until),
          r.pause_note && h('span', { class: 'note', text: ` ${r.pause_note}` })]
        : h('span', { class: 'muted', text: '—' })),
      h('td', { class: 'num throttled', text: String(r.throttled ?? 0) }),
      h('td', { class: 'row-actions' }, rateControls(r, panel, holder, reloadWith, (open) => { formOpen = open; })));
    return [row, holder];
  };
  const load = async (current) => {
    const q = limitFilter.key ? `?key=${enc(limitFilter.key)}` : '';
    const [conc, rate] = await Promise.all([
      api('GET', `/v1/concurrency-limits${q}`, undefined, signal),
      api('GET', '/v1/rate-limits', undefined, signal),
    ]);
    if (!current()) return;
    const cs = conc.limits || [];
    const rs = rate.limits || [];
    concurrencyBox.replaceChildren(table({ id: 'concurrency-limits' }, ['key', 'in use / limit', 'throttled'], cs.map(concurrencyRow),
      limitFilter.key ? `No concurrency key starting with ${limitFilter.key} in use.` : 'No concurrency key in use.'),
    more(conc, 'concurrency-more', `The first ${cs.length} keys; narrow them with a key prefix to see the others.`));
    if (!formOpen) rateBox.replaceChildren(table({ id: 'rate-limits' }, rateHeads, rs.flatMap(rateRows), 'No rate limit used yet.'),
      more(rate, 'rate-more', `The ${rs.length} rate keys used most recently; the others are older.`));
    status.textContent = `${cs.length} concurrency ${cs.length === 1 ? 'key' : 'keys'} · ${rs.length} rate ${rs.length === 1 ? 'key' : 'keys'}` +
      ` · updated ${fmtShort(new Date().toISOString())}`;
  };
  const { again, start } = refreshing(signal, load, () => LIMITS_EVERY);
  const apply = () => { limitFilter.key = keyInput.value.trim(); again(); };
  keyInput.addEventListener('change', apply);
  put(root, h('h1', { text: 'Limits' }), h('div', { class: 'toolbar' },
    h('form', { class: 'filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
      keyInput, h('button', { type: 'submit', text: 'Apply' })),
    h('button', { id: 'refresh', type: 'button', text: 'Refresh', onclick: again }),
    status),
  section('Concurrency', h('p', { class: 'muted hint' },
    'Keys with a slot in use or a step throttled, and the most recently used. A step without a free slot waits ',
    badge('throttled'), ' and starts when one frees, by priority then age.'), concurrencyBox),
  section('Rate limits', h('p', { class: 'muted hint' },
    'A pause (after a provider answered 429, say) starts no step of its key before its end; Resume ends it now.'), rateBox));
  await start();
}
