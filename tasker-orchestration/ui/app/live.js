// What keeps a view live: Server-Sent Events over fetch (EventSource cannot send the
// Authorization header), and a fetch asked for again while under way.

// Calls onEvent(event, data) per frame and onLive(true/false) as the connection comes and goes;
// reconnects after 1 s, 2 s, 4 s … (at most 10 s) until `signal` aborts. A 4xx ends it.
async function eventStream(url, signal, onEvent, onLive) {
  let delay = 1000;
  while (!signal.aborted) {
    try {
      const resp = await fetch(url, { signal, cache: 'no-store', headers: headers({ Accept: 'text/event-stream' }) });
      if (!resp.ok) {
        const err = await failure(resp);
        showError(err);
        if (resp.status >= 400 && resp.status < 500 && resp.status !== 408 && resp.status !== 429) return onLive(false);
        throw err;
      }
      onLive(true);
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      let [buf, event, data] = ['', '', []];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        // Whole lines only; a trailing '\r' may be the first half of '\r\n'.
        const cut = buf.endsWith('\r') ? buf.length - 1 : buf.length;
        const lines = buf.slice(0, cut).split(/\r\n|\r|\n/);
        buf = lines.pop() + buf.slice(cut);
        for (const line of lines) {
          if (line === '') { // a blank line ends a frame
            if (data.length) { onEvent(event || 'message', data.join('\n')); delay = 1000; }
            [event, data] = ['', []];
          } else if (!line.startsWith(':')) { // ':' starts a comment (keep-alive)
            const i = line.indexOf(':');
            const field = i < 0 ? line : line.slice(0, i);
            const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
            if (field === 'event') event = val;
            else if (field === 'data') data.push(val);
          }
        }
      }
    } catch (e) {
      if (signal.aborted) return;
    }
    onLive(false);
    await new Promise((resolve) => {
      const t = setTimeout(resolve, delay);
      signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
    delay = Math.min(delay * 2, 10000);
  }
}

// A fetch that may be asked for again while under way: the returned function runs `load`, or,
// while it runs, has it run once more when it ends; `apply` gets the last answer (errors are
// shown, nothing is applied).
function refetcher(signal, load, apply) {
  let running = false;
  let again = false;
  return async () => {
    if (running) { again = true; return; }
    running = true;
    let value;
    let ok = false;
    try {
      do {
        again = false;
        value = await load();
        ok = true;
      } while (again && !signal.aborted);
    } catch (e) {
      ok = false;
      if (!signal.aborted) showError(e);
    }
    running = false;
    if (ok && !signal.aborted) apply(value);
  };
}
