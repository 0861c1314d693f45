// Saved views of the task list: a name for an address of it (#/tasks?state=error&namespace=…),
// kept in this browser (localStorage `tasker.views`, a JSON array of {name, hash}). They show as
// links (a.saved-view, each with a × that removes it) above the list; "Save view" (#save-view)
// names the address on screen in a small inline form.

const VIEWS_KEY = 'tasker.views';
const VIEW_NAME_MAX = 60; // characters of a view's name

// A stored view worth showing: a name, and an address of this app (nothing else is followed).
const isView = (v) => v && typeof v.name === 'string' && v.name && typeof v.hash === 'string' && v.hash.startsWith('#/');

// The saved views (none when storage is off or holds something else).
function loadViews() {
  try {
    const views = JSON.parse(localStorage.getItem(VIEWS_KEY) || '[]');
    return Array.isArray(views) ? views.filter(isView) : [];
  } catch (_) {
    return [];
  }
}

// Keeps `views`; false when the browser would not (storage off or full).
function storeViews(views) {
  try {
    localStorage.setItem(VIEWS_KEY, JSON.stringify(views.map(({ name, hash }) => ({ name, hash }))));
    return true;
  } catch (_) {
    return false;
  }
}

// Opens a saved view: its address alone says the filter (one naming no filter shows every task,
// not the filter kept from the last visit). A click with a modifier (a new tab) is the browser's.
function openView(e, view) {
  if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  Object.assign(taskFilter, NO_TASK_FILTER);
  if (location.hash === view.hash) route(); // the same address: no hashchange, so drawn here
  else location.hash = view.hash;
}

// The bar of saved views and the "Save view" button with its inline form.
function savedViewsBar() {
  const links = h('span', { class: 'saved-view-links' });
  const draw = () => {
    const views = loadViews();
    links.replaceChildren(...views.map((v) => h('span', { class: 'saved-view-item', 'data-view': v.name },
      h('a', { class: 'saved-view', href: v.hash, title: v.hash, text: v.name, onclick: (e) => openView(e, v) }),
      h('button', { type: 'button', class: 'saved-view-remove', title: `Remove the view “${v.name}”`,
        'aria-label': `Remove the view ${v.name}`, text: '×',
        onclick: () => { storeViews(loadViews().filter((x) => x.name !== v.name)); draw(); } }))));
    if (!views.length) links.append(h('span', { class: 'muted', text: 'none yet' }));
  };
  const name = h('input', { id: 'save-view-name', type: 'text', maxlength: VIEW_NAME_MAX, required: true,
    placeholder: 'name this view', 'aria-label': 'Name of the view' });
  const saveBtn = h('button', { id: 'save-view', type: 'button', text: 'Save view',
    title: 'keep this list\'s address (its filters) under a name, in this browser' });
  const form = h('form', { id: 'save-view-form', class: 'save-view-form', hidden: true },
    name, h('button', { id: 'save-view-ok', type: 'submit', class: 'primary', text: 'Save' }),
    h('button', { type: 'button', class: 'cancel', text: 'Cancel', onclick: () => { form.hidden = true; saveBtn.hidden = false; } }));
  saveBtn.addEventListener('click', () => {
    form.hidden = false;
    saveBtn.hidden = true;
    name.value = '';
    name.focus();
  });
  // A view of the same name is replaced (in its place); a new one goes last.
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const view = { name: name.value.trim().slice(0, VIEW_NAME_MAX), hash: location.hash || '#/tasks' };
    if (!view.name) return;
    const views = loadViews();
    const at = views.findIndex((v) => v.name === view.name);
    if (at >= 0) views[at] = view; else views.push(view);
    if (!storeViews(views)) return showError(new ApiError(0, 'storage_unavailable', 'this browser keeps no saved views (storage is off or full)'));
    form.hidden = true;
    saveBtn.hidden = false;
    draw();
  });
  name.addEventListener('keydown', (e) => { if (e.key === 'Escape') { form.hidden = true; saveBtn.hidden = false; saveBtn.focus(); } });
  draw();
  return h('div', { id: 'saved-views', class: 'saved-views' }, h('span', { class: 'muted', text: 'Saved views:' }), links, saveBtn, form);
}
