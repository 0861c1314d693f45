// ---------- the DAG, shared by the task and template views ----------

// Draws template steps ({name, depends_on?, type?}) into the <svg> `el`: one column per depth
// (the longest path from a root), nodes spread vertically, edges with arrowheads.
// info(step) → {state?, sub?, count?, kind?, unserved?, href?, notes?} for its node; a step with
// `wait` (or kind "wait") is a wait step, one with `child` (or kind "child") starts a child task.
// An unserved node has a warning sign, a node with `href` is a link, `notes` go in its tooltip.
function drawDag(el, steps, info) {
  const W = 176, H = 40, GX = 56, GY = 10, PAD = 10;
  const byName = new Map(steps.map((st, i) => [st.name, { st, i }]));
  const deps = (name) => (byName.get(name)?.st.depends_on || []).filter((d) => byName.has(d));
  const depth = new Map();
  const onPath = new Set();
  const depthOf = (name) => {
    if (depth.has(name)) return depth.get(name);
    if (onPath.has(name)) return 0; // a cycle (not in a valid template)
    onPath.add(name);
    const d = deps(name).reduce((m, p) => Math.max(m, depthOf(p) + 1), 0);
    onPath.delete(name);
    depth.set(name, d);
    return d;
  };
  const cols = [];
  for (const st of steps) {
    const d = depthOf(st.name);
    while (cols.length <= d) cols.push([]);
    cols[d].push(st.name);
  }
  // Order each column by the mean position of its parents (fewer crossings), then template order.
  const row = new Map();
  cols.forEach((col, c) => {
    const key = (n) => {
      const ps = deps(n).filter((p) => row.has(p));
      return ps.length ? ps.reduce((a, p) => a + row.get(p), 0) / ps.length : 1e9;
    };
    if (c > 0) col.sort((a, b) => key(a) - key(b) || byName.get(a).i - byName.get(b).i);
    col.forEach((n, r) => row.set(n, r - (col.length - 1) / 2));
  });
  const rows = Math.max(1, ...cols.map((c) => c.length));
  const width = PAD * 2 + Math.max(1, cols.length) * (W + GX) - GX;
  const height = PAD * 2 + rows * (H + GY) - GY;
  const pos = (n) => ({ x: PAD + depth.get(n) * (W + GX), y: height / 2 + row.get(n) * (H + GY) - H / 2 });
  const marker = `arrow-${el.id || 'dag'}`;
  const edges = steps.flatMap((st) => deps(st.name).map((p) => {
    const [a, b] = [pos(p), pos(st.name)];
    const [x1, y1, x2, y2] = [a.x + W, a.y + H / 2, b.x - 2, b.y + H / 2];
    return svg('path', {
      class: 'edge', 'marker-end': `url(#${marker})`, 'data-from': p, 'data-to': st.name,
      d: `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}`,
    });
  }));
  const nodes = steps.map((st) => {
    const { x, y } = pos(st.name);
    const i = info(st) || {};
    const kind = i.kind || (st.wait ? 'wait' : st.child ? 'child' : null);
    const type = st.type && st.type !== 'standard' ? st.type : kind;
    // "child → shop/enrich" reads as one phrase; else "wait · for approved".
    const sub = [type, i.sub].filter(Boolean).join(String(i.sub).startsWith('→') ? ' ' : ' · ');
    const attrs = {
      class: 'node', 'data-step': st.name, 'data-state': i.state, 'data-kind': kind,
      'data-unserved': i.unserved ? 'true' : null, transform: `translate(${x},${y})`,
    };
    const node = svg('g', attrs,
      svg('title', {}, [st.name, sub, i.count, ...(i.notes || [])].filter(Boolean).join('\n')),
      svg('rect', { width: W, height: H, rx: 6, ry: 6 }),
      svg('text', { x: 10, y: sub ? 17 : 25, class: 'name' }, clip(st.name, i.count ? 16 : 21)),
      i.count && svg('text', { x: W - 8, y: 17, class: 'count', 'text-anchor': 'end' }, i.count),
      sub && svg('text', { x: 10, y: 32, class: 'sub' }, clip(sub, i.unserved ? 24 : 27)),
      i.unserved && svg('text', { x: W - 8, y: 33, class: 'warn', 'text-anchor': 'end' }, '⚠'));
    return i.href ? svg('a', { href: i.href, class: 'node-link' }, node) : node;
  });
  el.setAttribute('viewBox', `0 0 ${width} ${height}`);
  el.setAttribute('width', width);
  el.setAttribute('height', height);
  el.replaceChildren(
    svg('defs', {}, svg('marker', {
      id: marker, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto',
    }, svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }))),
    svg('g', { class: 'edges' }, edges),
    svg('g', { class: 'nodes' }, nodes));
  if (!steps.length) el.append(svg('text', { x: PAD, y: 25, class: 'sub' }, 'no steps'));
}

