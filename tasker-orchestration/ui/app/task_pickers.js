// The task list's namespace and template inputs as pickers fed from the template registry
// (GET /v1/templates): a <datalist> of every namespace with a registered template, and one of the
// template names of the namespace typed (of every namespace while none is). A <datalist> only
// suggests: free text (a namespace whose templates are gone, a part of a name) still works.

// The registry's names: namespace → its template names (sorted), from the versions listed.
function registryNames(templates) {
  const names = new Map();
  for (const t of templates) {
    if (!names.has(t.namespace)) names.set(t.namespace, new Set());
    names.get(t.namespace).add(t.name);
  }
  return new Map([...names.keys()].sort().map((ns) => [ns, [...names.get(ns)].sort()]));
}

// Ties datalists to `nsInput` and `nameInput` and fills them once the registry answers (a
// failure leaves them empty: the inputs work as plain text boxes). Returns the datalists, to
// put on the page.
function templatePickers(signal, nsInput, nameInput) {
  const nsList = h('datalist', { id: 'filter-namespace-options' });
  const nameList = h('datalist', { id: 'filter-name-options' });
  nsInput.setAttribute('list', nsList.id);
  nameInput.setAttribute('list', nameList.id);
  let names = new Map();
  // The names offered: those of the namespace typed, else every name (once each).
  const fillNames = () => {
    const ns = nsInput.value.trim();
    const offered = ns ? names.get(ns) || [] : [...new Set([...names.values()].flat())].sort();
    nameList.replaceChildren(...offered.map((n) => h('option', { value: n })));
  };
  nsInput.addEventListener('input', fillNames);
  api('GET', '/v1/templates', undefined, signal).then((data) => {
    if (signal.aborted) return;
    names = registryNames(data.templates || []);
    nsList.replaceChildren(...[...names.keys()].map((ns) => h('option', { value: ns })));
    fillNames();
  }).catch(() => { /* a convenience only: the list itself says what went wrong, if anything */ });
  return [nsList, nameList];
}
