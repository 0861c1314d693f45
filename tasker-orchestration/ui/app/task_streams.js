// A task's streams (docs/streams.md): what its steps emit while they run (ctx.emit,
// ctx.emit_text), live from GET /v1/tasks/{id}/stream. One box per step attempt, in the order
// they began: each text topic as its text so far, each JSON topic as its latest value; a retry's
// box says so, and an attempt's box says when its stream ended. Hidden until a chunk comes. A
// reconnection starts again from the next offset, so no chunk shows twice.

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
      a.el = h('div', { class: 'stream-attempt', 'data-step': c.step, 'data-attempt': String(c.attempt) },
        h('h4', {}, h('code', { text: c.step }), ` attempt ${c.attempt} `,
          c.attempt > 1 && h('span', { class: 'badge stream-retry', text: 'retry' }), ' ', state),
        a.body);
      attempts.set(key, a);
      box.append(a.el);
      el.hidden = false;
    }
    return a;
  };

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

  // Follows the stream until it is complete (its `end` event) or the page is left.
  const follow = async () => {
    const done = new AbortController();
    signal.addEventListener('abort', () => done.abort(), { once: true });
    await eventStream(`/v1/tasks/${enc(id)}/stream`, done.signal, (event, text) => {
      if (event === 'end') return done.abort();
      if (event !== 'chunk') return;
      try { onChunk(JSON.parse(text)); } catch (_) { /* not a chunk */ }
    }, () => {});
  };
  return { el, follow };
}
