// One live connection per browser for every task page open on this dashboard. Over HTTP/1.1 a
// browser opens at most six connections to a host, so one stream per tab would leave the
// seventh tab waiting. The tabs elect a leader with the Web Locks API: the leader holds one
// stream of every task any tab watches (`GET /v1/events?tasks=…`) and hands each event to the
// tabs over a BroadcastChannel; when its tab closes, the lock passes to another tab, which opens
// the stream again. A browser without either API streams each task on its own.

const SHARE = { channel: 'tasker-live', lock: 'tasker-live-leader', every: 5000, stale: 15000 };

// Watches task `id` until `signal` aborts: onEvent(event, data) per frame of its stream and
// onLive(true/false) as the shared connection comes and goes, as eventStream does.
async function watchTask(id, signal, onEvent, onLive) {
  if (!('BroadcastChannel' in window) || !navigator.locks) {
    return eventStream(`/v1/tasks/${enc(id)}/events`, signal, onEvent, onLive);
  }
  const hub = liveHub();
  const off = hub.watch(id, onEvent, onLive);
  await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  off();
}

// This tab's end of the shared connection (one per tab, made on first use).
function liveHub() {
  if (liveHub.hub) return liveHub.hub;
  const tab = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  const channel = new BroadcastChannel(SHARE.channel);
  const mine = new Map(); // task id → Set of {onEvent, onLive}
  let live = false;
  const deliver = (id, event, data) => { for (const w of mine.get(id) || []) w.onEvent(event, data); };
  const setLive = (on) => { live = on; for (const set of mine.values()) for (const w of set) w.onLive(on); };
  const announce = () => channel.postMessage({ type: 'watch', tab, ids: [...mine.keys()] });
  let leader = null; // set while this tab leads
  const receive = (m) => {
    if (m.type === 'event') { if (!m.to || m.to === tab) deliver(m.id, m.event, m.data); }
    else if (m.type === 'live') setLive(m.on);
    else if (m.type === 'who') announce();
    if (leader) leader.receive(m);
  };
  channel.onmessage = (e) => receive(e.data);
  // Every tab waits for the lock; the one holding it leads until its tab closes.
  navigator.locks.request(SHARE.lock, () => new Promise(() => {
    leader = liveLeader(channel, tab, (m) => receive(m));
    leader.receive({ type: 'watch', tab, ids: [...mine.keys()] });
  }));
  setInterval(announce, SHARE.every);
  liveHub.hub = {
    watch(id, onEvent, onLive) {
      const w = { onEvent, onLive };
      if (!mine.has(id)) mine.set(id, new Set());
      mine.get(id).add(w);
      onLive(live);
      announce();
      if (leader) leader.receive({ type: 'watch', tab, ids: [...mine.keys()] });
      return () => {
        mine.get(id).delete(w);
        if (!mine.get(id).size) mine.delete(id);
        announce();
        if (leader) leader.receive({ type: 'watch', tab, ids: [...mine.keys()] });
      };
    },
  };
  return liveHub.hub;
}

// The leading tab's side: what every tab watches (each tab says so every few seconds; one
// silent for longer is forgotten), and one stream of all of it, opened again when that changes.
function liveLeader(channel, self, local) {
  const tabs = new Map(); // tab → {ids, seen}
  const last = new Map(); // task id → its latest event, for a tab that starts watching it
  let streaming = '';     // the ids of the open stream, sorted and joined
  let stop = null;
  const send = (m) => { channel.postMessage(m); local(m); };
  const wanted = () => {
    const now = Date.now();
    for (const [t, v] of tabs) if (t !== self && now - v.seen > SHARE.stale) tabs.delete(t);
    return [...new Set([...tabs.values()].flatMap((v) => v.ids))].sort();
  };
  const restream = () => {
    const ids = wanted();
    if (ids.join(',') === streaming) return;
    streaming = ids.join(',');
    if (stop) stop.abort();
    stop = null;
    if (!ids.length) return;
    const ctl = new AbortController();
    stop = ctl;
    eventStream(`/v1/events?tasks=${ids.map(enc).join(',')}`, ctl.signal,
      (event, data) => {
        let id = null;
        try { const m = JSON.parse(data); id = (m.task && m.task.id) || m.task_id; } catch (_) { return; }
        if (!id) return;
        last.set(id, { event, data });
        send({ type: 'event', id, event, data });
      },
      (on) => { if (!ctl.signal.aborted) send({ type: 'live', on }); });
  };
  setInterval(restream, SHARE.every);
  channel.postMessage({ type: 'who' });
  return {
    receive(m) {
      if (m.type !== 'watch') return;
      const before = new Set((tabs.get(m.tab) || { ids: [] }).ids);
      tabs.set(m.tab, { ids: m.ids, seen: Date.now() });
      // A task already streamed: its latest event at once, to the tab that starts watching it.
      for (const id of m.ids.filter((i) => !before.has(i) && last.has(i))) {
        send(Object.assign({ type: 'event', id, to: m.tab }, last.get(id)));
      }
      for (const id of last.keys()) if (!wanted().includes(id)) last.delete(id);
      restream();
    },
  };
}
