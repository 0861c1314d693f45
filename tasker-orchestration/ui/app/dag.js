// ---------- the DAG, shared by the task and template views ----------

// Draws template steps ({name, depends_on?, type?}) into the <svg> `el`, laid out left to right
// by dagre (vendor/dagre.min.js: ranks, fewer crossings, edge routes), edges with arrowheads.
// info(step) → {state?, sub?, count?, kind?, unserved?, href?, notes?} for its node; a step with
// `wait` (or kind "wait") is a wait step, one with `child` (or kind "child") starts a child task.
// An unserved node has a warning sign, a node with `href` is a link, `notes` go in its tooltip.
function drawDag(el, steps, info) {
  const W = 176, H = 40, GX = 56, GY = 10, PAD = 10;
  const names = new Set(steps.map((st) => st.name));
  const deps = (st) => (st.depends_on || []).filter((d) => names.has(d));
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', ranksep: GX, nodesep: GY, marginx: PAD, marginy: PAD });
  g.setDefaultEdgeLabel(() => ({}));
  for (const st of steps) g.setNode(st.name, { width: W, height: H });
  for (const st of steps) for (const p of deps(st)) g.setEdge(p, st.name);
  dagre.layout(g);
  const { width = PAD * 2, height = PAD * 2 } = g.graph();
  const pos = (n) => { const { x, y } = g.node(n); return { x: x - W / 2, y: y - H / 2 }; };
  const marker = `arrow-${el.id || 'dag'}`;
  const edges = steps.flatMap((st) => deps(st).map((p) => {
    // dagre's route from the parent's side to the child's: smoothed through its inner points.
    const [start, ...via] = g.edge(p, st.name).points;
    const end = via.pop();
    const d = [`M${start.x},${start.y}`, ...via.map((q, i) => {
      const next = via[i + 1] || end;
      return `Q${q.x},${q.y} ${(q.x + next.x) / 2},${(q.y + next.y) / 2}`;
    }), `L${end.x},${end.y}`].join(' ');
    return svg('path', {
      class: 'edge', 'marker-end': `url(#${marker})`, 'data-from': p, 'data-to': st.name,
      d,
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

