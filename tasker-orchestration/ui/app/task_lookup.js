// The task list's lookup box (#task-lookup): a task found by the start of its id or by its
// idempotency key. One match opens its page; several are listed (as the task list shows tasks,
// in #task-lookup-result); none says so.

const LOOKUP_LIMIT = 50; // matches listed at most

// The start of a task id, as typed: 4 to 32 hex digits, hyphens allowed (a UUID's are).
function looksLikeIdPrefix(text) {
  const digits = text.replace(/-/g, '');
  return /^[0-9a-f-]+$/i.test(text) && digits.length >= 4 && digits.length <= 32;
}

// The tasks `text` names: by id prefix when it looks like one (and, should no id start so, by
// idempotency key, which may look like hex too), else by idempotency key. → {tasks, more}
async function lookupTasks(text, signal) {
  const query = async (key, value) => {
    const q = new URLSearchParams({ [key]: value, limit: String(LOOKUP_LIMIT) });
    const data = await api('GET', `/v1/tasks?${q}`, undefined, signal);
    return { tasks: data.tasks || [], more: data.next_before != null };
  };
  if (looksLikeIdPrefix(text)) {
    const byId = await query('id_prefix', text.toLowerCase());
    if (byId.tasks.length) return byId;
  }
  return query('idempotency_key', text);
}

// The lookup form and the box its answers show in: {form, result}.
function taskLookup(signal) {
  const input = h('input', {
    id: 'task-lookup', type: 'search', class: 'mono', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'id start or idempotency key…', 'aria-label': 'Find a task by id prefix or idempotency key',
    title: 'the start of a task id (4 or more hex digits) or a task\'s idempotency key',
  });
  const button = h('button', { id: 'task-lookup-submit', type: 'submit', text: 'Find' });
  const result = h('div', { id: 'task-lookup-result', class: 'lookup-result', hidden: true });
  const close = () => { result.hidden = true; result.replaceChildren(); };
  // What was found for `text`: several listed, none said.
  const show = (text, { tasks, more }) => {
    result.dataset.matches = String(tasks.length);
    result.replaceChildren(h('div', { class: 'lookup-head' },
      h('span', { class: tasks.length ? null : 'muted', text: tasks.length
        ? `${tasks.length}${more ? '+' : ''} tasks match “${text}”${more ? ` (the newest ${tasks.length} shown)` : ''}:`
        : `No task matches “${text}” (the start of an id, or an idempotency key).` }),
      h('button', { type: 'button', class: 'close', title: 'Close', 'aria-label': 'Close', text: '×', onclick: close })));
    if (tasks.length) result.append(table({ id: 'lookup-tasks' }, TASK_HEADS, tasks.map(taskRow), ''));
    result.hidden = false;
  };
  let seq = 0; // the newest lookup: an older answer arriving late is dropped
  const submit = async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return close();
    const mine = ++seq;
    button.disabled = true;
    try {
      const found = await lookupTasks(text, signal);
      if (signal.aborted || mine !== seq) return;
      if (found.tasks.length === 1 && !found.more) location.hash = taskHref(found.tasks[0].id);
      else show(text, found);
    } catch (err) {
      if (mine === seq) showError(err);
    } finally {
      if (mine === seq) button.disabled = false;
    }
  };
  const form = h('form', { id: 'task-lookup-form', class: 'lookup', role: 'search', onsubmit: submit }, input, button);
  return { form, result };
}
