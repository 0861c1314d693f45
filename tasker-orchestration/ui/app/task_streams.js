// A task's streams (docs/streams.md): what its steps emit while they run (ctx.emit,
// ctx.emit_text), from GET /v1/tasks/{id}/stream. One box per step attempt, in the order they
// began: each text topic as its text so far, each JSON topic as its latest value; a retry's box
// says so, and an attempt's box says when its stream ended. Hidden until a chunk comes.
// Read with children=true: the chunks of the task's child tasks (`child:` steps, at any depth,
// of the namespaces the token covers) come merged in, at offsets of this task's stream; a child
// task's attempt boxes are labelled with it (a link to its page, its id shortened) and its step.
//
// A browser opens at most six connections to a host, and every task tab already shares one
// (live_share.js), so one tab at a time follows its stream live (Server-Sent Events, held under
// a Web Lock); the others read its pages (JSON) when they open and whenever their task changes,
// and follow live once the lock comes to them. Chunks are drawn by offset: none shows twice.

function taskStreams(view) {
  const { id, signal } = view;
  const box = h('div', { id: 'streams' });
  const el = section('Streams', box);
  el.hidden = true;
  const attempts = new Map(); // `${step_id}/${attempt}` → { el, topics: Map(topic → element), ended }
  let next = 0;

  // The box of a chunk's step attempt, made when its first chunk comes.
  const attemptBox = (c) => {
    const key = `${c.step_id}/${c.attempt}`;
    let a = attempts.get(key);
    if (!a) {
      const state = h('span', { class: 'muted stream-state', text: 'streaming' });
      a = { topics: new Map(), state, body: h('div', { class: 'stream-topics' }) };
      a.el = h('div', { class: 'stream-attempt', 'data-step': c.step, 'data-attempt': String(c.attempt),
        'data-task-id': c.task_id || id },
        h('h4', {}, childLabel(c), h('code', { text: c.step }), ` attempt ${c.attempt} `,
          c.attempt > 1 && h('span', { class: 'badge stream-retry', text: 'retry' }), ' ', state),
        a.body);
      attempts.set(key, a);
      box.append(a.el);
      el.hidden = false;
    }
    return a;
  };

  // A child task's chunk: its task, linked, before the step's name (none for this task's own).
  // The id's tail: a UUIDv7 starts with its time, the same for a family created together.
  const childLabel = (c) => c.task_id && c.task_id !== id && h('span', { class: 'muted stream-child' }, 'child task ',
    h('a', { class: 'mono stream-child-link', href: taskHref(c.task_id), title: c.task_id, text: `…${c.task_id.slice(-8)}` }), ' · ');

  // One topic's place in its attempt's box: text grows, JSON shows its latest value.
  const topicEl = (a, topic, text) => {
    let t = a.topics.get(topic);
    if (!t) {
      const value = text ? h('pre', { class: 'stream-text' }) : h('code', { class: 'stream-data' });
      t = { value };
      a.topics.set(topic, t);
      a.body.append(h('div', { class: 'stream-topic', 'data-topic': topic },
        h('span', { class: 'muted', text: topic }), value));
    }
    return t;
  };

  const onChunk = (c) => {
    if (c.offset < next) return; // shown before a reconnection
    next = c.offset + 1;
    const a = attemptBox(c);
    if (c.end) {
      a.state.textContent = 'ended';
      return;
    }
    if (c.text != null) topicEl(a, c.topic, true).value.append(c.text);
    else topicEl(a, c.topic, false).value.textContent = JSON.stringify(c.data);
  };

  // Reads the pages from `next` on (until the last, or the stream is complete).
  let complete = false;
  const catchUp = refetcher(signal, async () => {
    let page;
    do {
      page = await api('GET', `/v1/tasks/${enc(id)}/stream?from=${next}&limit=1000&children=true`, undefined, signal);
      for (const c of page.chunks) onChunk(c);
      next = Math.max(next, page.next);
    } while (page.chunks.length === 1000 && !signal.aborted);
    return page.complete;
  }, (done) => { complete = complete || done; });

  // Follows the stream live until it is complete (its `end` event) or the page is left, once
  // this tab holds the lock (one follower per browser).
  const followLive = async () => {
    const done = new AbortController();
    signal.addEventListener('abort', () => done.abort(), { once: true });
    await eventStream(`/v1/tasks/${enc(id)}/stream?from=${next}&children=true`, done.signal, (event, text) => {
      if (event === 'end') { complete = true; return done.abort(); }
      if (event !== 'chunk') return;
      try { onChunk(JSON.parse(text)); } catch (_) { /* not a chunk */ }
    }, () => {});
  };

  const follow = async () => {
    await catchUp();
    if (complete || signal.aborted || !navigator.locks) return;
    try {
      await navigator.locks.request('tasker-stream-follow', { signal }, followLive);
    } catch (_) { /* the page was left while waiting for the lock */ }
  };
  // A change of the task (a step started or ended): read what was added since.
  const onSnapshot = () => { if (!complete) catchUp(); };
  return { el, follow, onSnapshot };
}
