// A task's signals: the form that sends one (shown while a step waits for a signal, its name
// prefilled), and the signals the task received (hidden while there are none).

function taskSignals(view) {
  const { id, signal } = view;
  let prefilled = '';  // the signal name last put in the signal form
  let waitKey = null;  // the wait steps' states: a change may mean a signal was consumed
  const signalName = h('input', { id: 'signal-name', type: 'text', maxlength: 64, placeholder: 'name', 'aria-label': 'Signal name' });
  const signalId = h('input', { id: 'signal-id', type: 'text', maxlength: 128, placeholder: 'optional: a repeat is then a no-op', 'aria-label': 'Signal id' });
  const signalPayload = h('textarea', { id: 'signal-payload', rows: 3, spellcheck: 'false', placeholder: '{"approved_by": "ada"}' });
  const signalBtn = h('button', { id: 'signal-submit', type: 'submit', class: 'primary', text: 'Send signal' });
  const signalWaiting = h('p', { class: 'muted waiting-steps' });
  const signalSection = h('section', { id: 'signal-section', hidden: true }, h('h3', { text: 'Send a signal' }),
    h('form', { id: 'signal-form', class: 'signal-form', onsubmit: submitSignal }, signalWaiting,
      h('div', { class: 'row' }, h('label', {}, 'Name ', signalName), h('label', {}, 'Signal id ', signalId)),
      h('label', { for: 'signal-payload', text: 'Payload (JSON, optional):' }), signalPayload,
      h('div', { class: 'row' }, signalBtn)));
  const signalsBox = h('div');
  const signalsSection = section('Signals', signalsBox);
  signalsSection.hidden = true;

  // POST /v1/tasks/{id}/signals/{name}; a refusal shows the API's error.
  function submitSignal(e) {
    e.preventDefault();
    const name = signalName.value.trim();
    const body = {};
    if (signalId.value.trim()) body.signal_id = signalId.value.trim();
    if (signalPayload.value.trim()) {
      try { body.payload = JSON.parse(signalPayload.value); } catch (err) {
        return showError(new ApiError(0, 'invalid_json', `the payload is not valid JSON: ${err.message}`)); // nothing sent
      }
    }
    if (!name) return showError(new ApiError(0, 'invalid_signal_name', 'a signal needs a name')); // nothing sent
    view.act(async () => {
      const sent = await api('POST', `/v1/tasks/${enc(id)}/signals/${enc(name)}`, body);
      if (signal.aborted) return;
      showNotice(`Signal ${sent.name} sent (id ${sent.signal_id}).`);
      signalPayload.value = '';
      signalId.value = '';
      load();
    });
  }

  // GET /v1/tasks/{id}/signals into the Signals table (hidden while there are none).
  const load = refetcher(signal,
    async () => (await api('GET', `/v1/tasks/${enc(id)}/signals`, undefined, signal)).signals || [],
    (signals) => {
      signalsSection.hidden = !signals.length;
      signalsBox.replaceChildren(table({ id: 'signals' },
        ['name', 'signal id', 'payload', 'received', 'consumed by', 'consumed'],
        signals.map((sg) => h('tr', { 'data-signal-id': sg.signal_id, 'data-name': sg.name },
          h('td', {}, h('code', { text: sg.name })),
          h('td', { class: 'mono', text: sg.signal_id }),
          h('td', {}, sg.payload != null ? h('code', { title: pretty(sg.payload), text: clip(JSON.stringify(sg.payload), 80) }) : '—'),
          h('td', {}, timeEl(sg.received_at)),
          h('td', { class: 'consumed-by' }, sg.consumed_by ? h('strong', { text: sg.consumed_by }) : h('span', { class: 'muted', text: 'not yet' })),
          h('td', {}, timeEl(sg.consumed_at)))),
        'No signals.'));
    });

  // Signals are consumed as wait steps move on: fetch them again when one does.
  const onSnapshot = (snap) => {
    const key = (snap.steps || []).filter((s) => s.step_type === 'wait').map((s) => `${s.name}:${s.state}`).join(',');
    if (waitKey !== null && key !== waitKey) load();
    waitKey = key;
  };

  // The signal form, while a step waits for a signal; its name is prefilled unless edited.
  const render = (steps) => {
    signalBtn.disabled = view.busy;
    const waiting = steps.filter((s) => s.state === 'waiting' && s.wait && s.wait.kind === 'signal' && s.wait.signal);
    signalSection.hidden = !waiting.length;
    if (waiting.length) {
      if (!signalName.value.trim() || signalName.value === prefilled) signalName.value = prefilled = waiting[0].wait.signal;
      signalWaiting.replaceChildren();
      put(signalWaiting, waiting.map((s, i) => [i ? '; ' : '',
        h('strong', { text: s.name }), ' waits for ', h('code', { text: s.wait.signal }),
        s.wait.until && [' until ', atEl(s.wait.until)]]), '.');
    }
  };
  return { form: signalSection, table: signalsSection, load, onSnapshot, render };
}
