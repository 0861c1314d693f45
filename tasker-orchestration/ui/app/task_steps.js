// A task's steps, a card each (step_card.js); once the task failed, a failed step can be resolved
// with the result its handler would have returned, in a form under its card.

function taskSteps(view) {
  const { id } = view;
  let resolving = null;         // the step whose resolve form is open
  const unfolded = new Set();   // the folded parts of step cards the user unfolded (see foldable)
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

  // Step cards; the open resolve form (and its focus) moves to the rebuilt card. `more`: the
  // snapshot holds only the first steps.
  const render = (task, steps, more) => {
    const failed = task.state === 'error';
    if (resolving && !(failed && steps.some((s) => s.name === resolving && s.state === 'failed'))) resolving = null;
    const hadFocus = resolveForm.contains(document.activeElement) ? document.activeElement : null;
    stepsNote.hidden = !more;
    stepsBox.replaceChildren(...steps.map((st) => {
      const card = stepCard(st, unfolded, task.namespace);
      if (failed && st.state === 'failed') {
        card.querySelector('.step-head').append(h('button', {
          type: 'button', class: 'resolve', 'data-step': st.name, text: 'Resolve…', disabled: view.busy,
          onclick: () => { resolving = st.name; view.render(); resolveInput.focus(); },
        }));
        if (resolving === st.name) {
          resolveLabel.replaceChildren('Result of ', h('strong', { text: st.name }), ' (JSON, as its handler would have returned it):');
          card.append(resolveForm);
        }
      }
      return card;
    }));
    if (!steps.length) stepsBox.append(h('p', { class: 'muted', text: 'No steps.' }));
    if (hadFocus && resolveForm.isConnected) hadFocus.focus();
  };
  return { el: section('Steps', stepsNote, stepsBox), render };
}
