// A task's steps, a card each (step_card.js), in graph order (step_order.js), a batch's instances
// grouped under one header (step_groups.js), filtered to the failed ones on request; once the
// task failed, a failed step can be resolved with the result its handler would have returned, in
// a form under its card.

function taskSteps(view) {
  const { id } = view;
  let resolving = null;         // the step whose resolve form is open
  const unfolded = new Set();   // the folded parts of step cards the user unfolded (see foldable)
  const batchOpen = new Map();  // a batch (its base name) the user folded or unfolded → unfolded
  let failedOnly = failedOnlyInAddress(); // asked for: applies while a step failed
  const failedToggle = failedOnlyToggle((on) => { failedOnly = on; setFailedOnlyInAddress(on); view.render(); });
  const stepsBox = h('div', { id: 'steps', class: 'steps' });
  const stepsNote = h('p', { class: 'muted', hidden: true, text: 'Only the first 1,000 steps are shown live.' });
  const resolveInput = h('textarea', { id: 'resolve-result', rows: 4, spellcheck: 'false', placeholder: '{"value": 42}' });
  const resolveLabel = h('label', { for: 'resolve-result' });
  const resolveForm = h('div', { class: 'resolve-form' }, resolveLabel, resolveInput, h('div', { class: 'row' },
    h('button', { id: 'resolve-submit', type: 'button', class: 'primary', text: 'Resolve step', onclick: submitResolve }),
    h('button', { type: 'button', text: 'Close', onclick: () => { resolving = null; view.render(); } })));

  function submitResolve() {
    let result;
    try { result = JSON.parse(resolveInput.value); } catch (e) {
      return showError(new ApiError(0, 'invalid_json', `the result is not valid JSON: ${e.message}`)); // nothing sent
    }
    const step = resolving;
    view.act(() => api('POST', `/v1/tasks/${enc(id)}/steps/${enc(step)}/resolve`, view.withReason({ result })),
      () => { resolving = null; resolveInput.value = ''; });
  }

  // A step's card, with its resolve button (and open form) when it failed in a failed task.
  const cardOf = (st, task) => {
    const card = stepCard(st, unfolded, task.namespace);
    // A handler's failure can be run again on a developer's machine (docs/testing.md).
    if (st.error != null && !st.handler.startsWith('tasker:') && (st.state === 'failed' || st.state === 'waiting_retry')) {
      card.append(h('div', { class: 'replay muted' }, 'replay it with your handler: ',
        h('code', { text: `tasker replay ${task.id} ${st.name} -- …` })));
    }
    if (task.state !== 'error' || st.state !== 'failed') return card;
    card.querySelector('.step-head').append(h('button', {
      type: 'button', class: 'resolve', 'data-step': st.name, text: 'Resolve…', disabled: view.busy,
      onclick: () => { resolving = st.name; view.render(); resolveInput.focus(); },
    }));
    if (resolving === st.name) {
      resolveLabel.replaceChildren('Result of ', h('strong', { text: st.name }), ' (JSON, as its handler would have returned it):');
      card.append(resolveForm);
    }
    return card;
  };

  // A batch's header and the cards it shows: folded past BATCH_UNFOLDED_MAX instances unless the
  // user unfolded it; with the filter on, its failed instances (none of it if none failed).
  const groupOf = ({ base, steps }, filtering, card) => {
    const failedHere = steps.filter(isFailedStep);
    if (filtering && !failedHere.length) return null;
    const open = filtering || (batchOpen.has(base) ? batchOpen.get(base) : steps.length <= BATCH_UNFOLDED_MAX);
    const onToggle = () => { batchOpen.set(base, !open); view.render(); };
    const shown = filtering ? failedHere : open ? steps : [];
    return batchGroup(base, steps, { open, shown, locked: filtering, onToggle }, card);
  };

  // Step cards (`steps` in graph order); the open resolve form (and its focus) moves to the
  // rebuilt card, the focus on a batch's button to its new one. `more`: the snapshot holds only
  // the first steps.
  const render = (task, steps, more) => {
    const failed = task.state === 'error';
    if (resolving && !(failed && steps.some((s) => s.name === resolving && s.state === 'failed'))) resolving = null;
    const hadFocus = resolveForm.contains(document.activeElement) ? document.activeElement : null;
    const toggleFocus = stepsBox.contains(document.activeElement) && document.activeElement.matches('.batch-toggle')
      ? document.activeElement.closest('.batch-group').dataset.group : null;
    const failedCount = steps.filter(isFailedStep).length;
    const filtering = failedOnly && failedCount > 0;
    failedToggle.render(failedCount, filtering);
    stepsNote.hidden = !more;
    const card = (st) => cardOf(st, task);
    stepsBox.replaceChildren(...stepRuns(steps).map((run) => (run.step
      ? (!filtering || isFailedStep(run.step)) && card(run.step)
      : groupOf(run, filtering, card))).filter(Boolean));
    if (!steps.length) stepsBox.append(h('p', { class: 'muted', text: 'No steps.' }));
    if (hadFocus && resolveForm.isConnected) hadFocus.focus();
    const again = toggleFocus != null &&
      stepsBox.querySelector(`.batch-group[data-group="${CSS.escape(toggleFocus)}"] .batch-toggle`);
    if (again) again.focus();
  };
  return { el: section('Steps', failedToggle.el, stepsNote, stepsBox), render };
}
