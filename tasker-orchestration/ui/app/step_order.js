// A task's steps in graph order, for its page's step cards and timeline rows: the API lists them
// as they were created (a convergence step before the batch it waits for, `sum#46` before
// `sum#0`); here a step comes after all its parents (by its depth in the template's DAG), steps
// of one depth in the template's declared order, and a batch's instances ("sum#2") by number.

// A batch worker instance's name, "<base>#<N>": {base, index}; null for any other name.
function batchInstance(name) {
  const m = /^(.+)#(\d+)$/.exec(name);
  return m ? { base: m[1], index: Number(m[2]) } : null;
}

// Each template step's place in the graph: name → {depth, index}, `depth` the length of the
// longest path to it from a step with no parents (0 for those), `index` its place in the
// template. `defs`: the template's steps ({name, depends_on?}); a dependency naming no step is
// ignored, and so is one that would close a cycle (the orchestrator refuses those anyway).
function templateRanks(defs) {
  const parentsOf = new Map(defs.map((d) => [d.name, d.depends_on || []]));
  const depths = new Map();
  const path = new Set(); // the steps being measured: a parent among them would be a cycle
  const depthOf = (name) => {
    if (depths.has(name)) return depths.get(name);
    path.add(name);
    const parents = parentsOf.get(name).filter((p) => parentsOf.has(p) && !path.has(p));
    const depth = parents.length ? 1 + Math.max(...parents.map(depthOf)) : 0;
    path.delete(name);
    depths.set(name, depth);
    return depth;
  };
  return new Map(defs.map((d, index) => [d.name, { depth: depthOf(d.name), index }]));
}

// `steps` (the API's, {name, …}) in graph order, as a new array. `defs`: the template's steps, or
// null while it is not known: the steps are then grouped by name in the API's order, a batch's
// instances still by number. A step the template does not name comes after those it does.
function orderSteps(steps, defs) {
  const ranks = templateRanks(defs || []);
  const firstSeen = new Map(); // a name the template lacks → its place in the API's list
  const keyOf = (st) => {
    // A template step whose own name looks like an instance ("a#1") is that step.
    const inst = ranks.has(st.name) ? null : batchInstance(st.name);
    const base = inst ? inst.base : st.name;
    const rank = ranks.get(base);
    if (!rank && !firstSeen.has(base)) firstSeen.set(base, firstSeen.size);
    return rank
      ? [0, rank.depth, rank.index, inst ? inst.index : -1]
      : [1, 0, firstSeen.get(base), inst ? inst.index : -1];
  };
  const keyed = steps.map((st) => ({ st, key: keyOf(st) }));
  keyed.sort((a, b) => {
    for (let i = 0; i < a.key.length; i++) if (a.key[i] !== b.key[i]) return a.key[i] - b.key[i];
    return 0;
  });
  return keyed.map((k) => k.st);
}
