// The templates page (#/templates) and one template's page: its graph, child workflows, the
// events that start it (its triggers), and a form that starts a task of it.

// A template wait step's `wait` ({sleep}, {until} or {signal, …}) in a few words.
const templateWait = (w) => (w && typeof w === 'object'
  ? (w.signal ? `signal ${w.signal}` : w.sleep ? `sleep ${w.sleep}` : w.until ? `until ${w.until}` : null) : null);

// The template's triggers (`on:`), when it has any: "Started by events", each trigger's event
// (a link to those events of its namespace), its conditions (pointer → schema, as compact JSON)
// and the context it makes of the event.
function templateTriggers(t) {
  const on = (t.definition && t.definition.on) || [];
  if (!on.length) return null;
  const compact = (v, attrs) => h('code', Object.assign({ title: pretty(v), text: clip(JSON.stringify(v), 120) }, attrs));
  const conditions = (c) => (c && Object.keys(c).length
    ? Object.entries(c).map(([pointer, schema], i) => [i ? ' and ' : null,
      h('code', { class: 'trigger-condition', 'data-pointer': pointer, title: pretty(schema),
        text: `${pointer} → ${clip(JSON.stringify(schema), 120)}` })])
    : h('span', { class: 'muted', text: 'every such event' }));
  const context = (c) => (c == null ? h('span', { class: 'muted', text: 'the event’s data' })
    : typeof c === 'string' ? [compact(c, { class: 'trigger-mapping' }), h('span', { class: 'muted', text: ' (the whole context)' })]
      : compact(c, { class: 'trigger-mapping' }));
  return h('section', { id: 'template-triggers' }, h('h3', { text: 'Started by events' }),
    h('ul', { class: 'child-steps triggers' }, on.map((trig) => h('li', { 'data-event': trig.event },
      h('strong', { class: 'trigger-event', text: trig.event }), ' · ',
      h('a', { class: 'trigger-events', href: eventsHref({ name: trig.event, namespace: t.namespace }), text: 'its events' }),
      h('div', { class: 'trigger-if' }, h('span', { class: 'muted', text: 'if ' }), conditions(trig.if)),
      h('div', { class: 'trigger-context' }, h('span', { class: 'muted', text: 'context ' }), context(trig.context)),
      triggerControl(trig)))));
}

// A trigger's start control (debounce or dedupe), in words, with where its key is read.
function triggerControl(trig) {
  const d = trig.debounce;
  const u = trig.dedupe;
  if (!d && !u) return null;
  const key = (c) => h('code', { class: 'trigger-key', text: c.key || '/key' });
  return h('div', { class: 'trigger-control', 'data-control': d ? 'debounce' : 'dedupe' },
    h('span', { class: 'muted', text: d ? 'debounce ' : 'dedupe ' }),
    d ? [`${d.mode || 'trailing'}: one task per burst of events by `, key(d), ` ending after ${d.period} of quiet`,
      d.max ? `, at most ${d.max}` : '']
      : ['one task per ', key(u), ` for ${u.ttl}`]);
}

// Every registered version, searched by namespace/name and paged in the browser (the API
// answers the whole list); the search and the page are in the address (#/templates?q=…&page=2).
async function templatesView(root, signal) {
  const list = searchedList({
    path: 'templates', id: 'templates', searchId: 'templates-search', noun: 'templates',
    empty: 'No templates registered.',
    cols: [['template', 'template'], ['version', 'version'], ['description', 'description'], ['steps', 'steps'],
      ['registered', 'registered'], ['by', 'by']],
    label: (t) => `${t.namespace}/${t.name}`,
    row: (t) => h('tr', { 'data-template': `${t.namespace}/${t.name}@${t.version}` },
      h('td', {}, h('a', { href: templateHref(t), text: `${t.namespace}/${t.name}` })),
      h('td', { class: 'mono' }, clipped(t.version)),
      h('td', {}, t.description && h('span', { class: 'clamp', title: t.description, text: t.description })),
      h('td', { class: 'num', text: String(((t.definition || {}).steps || []).length) }),
      h('td', {}, timeEl(t.registered_at)),
      h('td', { class: 'muted' }, clipped(t.registered_by || ''))),
  });
  put(root, h('h1', { text: 'Templates' }), h('div', { class: 'toolbar' }, list.search), list.box);
  const data = await api('GET', '/v1/templates', undefined, signal);
  if (signal.aborted) return;
  list.show(data.templates);
}

// A template, of `version` or (without one) the newest.
async function templateView(root, signal, namespace, name, version) {
  const q = version ? `?version=${enc(version)}` : '';
  const t = await api('GET', `/v1/templates/${enc(namespace)}/${enc(name)}${q}`, undefined, signal);
  if (signal.aborted) return;
  const def = t.definition || {};
  const steps = def.steps || [];
  const unserved = t.unserved_steps || [];
  const unservedBy = new Map(unserved.map((u) => [u.step, u]));
  // A child step's template: in this template's namespace unless it names one, the newest version
  // (when a task starts) unless it names one.
  const childTemplate = (c) => ({ namespace: c.namespace || t.namespace, name: c.template, version: c.version });
  const childSteps = steps.filter((st) => st.child);
  const dag = svg('svg', { id: 'template-dag', class: 'dag', role: 'img', 'aria-label': 'step graph' });
  drawDag(dag, steps, (st) => {
    const u = unservedBy.get(st.name);
    const notes = [st.namespace && st.namespace !== t.namespace && `namespace ${st.namespace}`,
      u && unservedTitle(u.namespace, u.handler)];
    if (!st.child) return { sub: st.handler || templateWait(st.wait), unserved: !!u, notes };
    const c = childTemplate(st.child);
    return { sub: `→ ${templateLabel(c)}`, href: templateHref(c), unserved: !!u, notes };
  });
  put(root,
    h('h1', {}, `${t.namespace}/${t.name}`, h('span', { class: 'muted', text: ` @${t.version}` })),
    t.description && h('p', { class: 'description', text: t.description }),
    dl([['registered', timeEl(t.registered_at)], ['by', t.registered_by], ['id', h('span', { class: 'mono', text: t.id })]]),
    h('div', { class: 'actions' }, h('button', { type: 'button', text: 'Tasks of this template', onclick: () => showTasksOf(t.namespace, t.name) })),
    unserved.length > 0 && h('section', { id: 'unserved', class: 'warning-box' },
      h('h3', { text: 'Unserved steps' }),
      h('p', {}, 'No live worker serves these steps: a task of this template waits at them until one does (see ',
        h('a', { href: '#/workers', text: 'Workers' }), ').'),
      table({ id: 'unserved-steps' }, ['step', 'namespace', 'handler'], unserved.map((u) => h('tr', { 'data-step': u.step },
        h('td', {}, h('strong', { text: u.step })),
        h('td', {}, h('code', { text: u.namespace })),
        h('td', {}, h('code', { text: u.handler })))), '')),
    section('Graph', h('div', { class: 'dag-wrap' }, dag)),
    childSteps.length > 0 && section('Child workflows', h('ul', { id: 'template-children', class: 'child-steps' },
      childSteps.map((st) => {
        const c = childTemplate(st.child);
        return h('li', { 'data-step': st.name },
          h('strong', { text: st.name }), ': child → ', h('a', { href: templateHref(c), text: templateLabel(c) }),
          !c.version && h('span', { class: 'muted', text: ' (the newest version when a task starts)' }),
          st.child.context != null &&
            [' · context ', h('code', { title: pretty(st.child.context), text: clip(JSON.stringify(st.child.context), 80) })],
          st.child.on_parent_cancel === 'abandon' && h('span', { class: 'muted', text: ' · keeps running if its parent is cancelled' }));
      }))),
    templateTriggers(t),
    startForm(t),
    section('Definition', h('details', {}, h('summary', { text: `${steps.length} steps, retry policies, timeouts, context schema` }),
      h('pre', { text: pretty(def) }))));
}

// A value `schema` (JSON Schema) accepts, to start from: its `default`, `const`, first example
// or enum value, else one of its type: for an object, its required properties, each so.
function exampleOf(schema) {
  if (!schema || typeof schema !== 'object') return null;
  if ('default' in schema) return schema.default;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const alt = schema.oneOf || schema.anyOf;
  if (Array.isArray(alt) && alt.length) return exampleOf(alt[0]);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type || (schema.properties ? 'object' : null);
  if (type === 'object') {
    const props = schema.properties || {};
    return Object.fromEntries((schema.required || []).map((k) => [k, exampleOf(props[k])]));
  }
  if (type === 'integer' || type === 'number') return Math.min(Math.max(0, schema.minimum ?? 0), schema.maximum ?? Infinity); // 0 if allowed
  return { string: '', boolean: false, array: [] }[type] ?? null;
}

// "Start a task" of template `t`: its context (prefilled from the context schema), checked as
// JSON as it is typed, and an optional idempotency key; the API checks the context against the
// schema, and its refusal (a 422 lists the failing paths; a read-only token gets 403) is shown
// under the editor. A task started opens.
function startForm(t) {
  const context = h('textarea', { id: 'start-context', rows: 6, spellcheck: 'false', 'aria-label': 'Context (JSON)' });
  context.value = pretty(exampleOf(t.definition && t.definition.context_schema) ?? {});
  const key = h('input', { id: 'start-key', type: 'text', maxlength: 255, placeholder: 'optional',
    title: 'a task started again with the same key is the same task', 'aria-label': 'Idempotency key' });
  const submit = h('button', { id: 'start-submit', type: 'submit', class: 'primary', text: 'Start task' });
  const error = h('div', { id: 'start-error', class: 'form-error', role: 'alert', hidden: true });
  const fail = (e) => {
    error.replaceChildren();
    put(error, h('strong', { class: 'code', text: e.code }), ' ', h('span', { class: 'message', text: e.message }),
      e.details !== undefined && h('pre', { text: Array.isArray(e.details) ? e.details.join('\n') : pretty(e.details) }));
    error.hidden = false;
  };
  // The context as an object, or null with the reason shown (and nothing to submit).
  const parsed = () => {
    const [value, why] = jsonObject(context.value);
    submit.disabled = !!why;
    error.hidden = !why;
    if (why) fail({ code: 'invalid_json', message: `the context is ${why}` });
    return why ? null : value;
  };
  context.addEventListener('input', parsed);
  const send = async (e) => {
    e.preventDefault();
    const ctx = parsed();
    if (!ctx) return;
    const body = { namespace: t.namespace, name: t.name, version: t.version, context: ctx };
    if (key.value.trim()) body.idempotency_key = key.value.trim();
    submit.disabled = true;
    try {
      const task = await api('POST', '/v1/tasks', body);
      flash = `Task ${task.id} started.`;
      location.hash = taskHref(task.id);
    } catch (err) {
      fail(err);
      submit.disabled = false;
    }
  };
  return h('section', { id: 'start' }, h('h3', { text: 'Start a task' }),
    h('form', { class: 'start-form', onsubmit: send },
      h('label', { for: 'start-context', text: 'Context (JSON):' }), context, error,
      h('div', { class: 'row' }, h('label', {}, 'Idempotency key ', key), submit)));
}
