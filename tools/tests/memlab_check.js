// memlab_check.js FILE.heapsnapshot: the retained size of every synthetic
// node (root kinds and root labels of an `ocaml-memprof retainers
// --heapsnapshot` export) as memlab computes it, with its own dominator
// tree, as lines "name<TAB>retained".  An independent check of our
// dominators (tests/memlab_check.sh); needs @memlab/core, installed at
// test time by `make check-memlab`, never committed.
const core = require('@memlab/core');
(async () => {
  const file = process.argv[2];
  const heap = await core.utils.getSnapshotFromFile(file, { buildNodeIdIndex: true, verbose: false });
  new core.TraceFinder().calculateAllNodesRetainedSizes(heap);
  const rows = [];
  heap.nodes.forEach(node => {
    if (node.type === 'synthetic' && node.id !== 1) rows.push([node.name, node.retainedSize]);
  });
  rows.sort((a, b) => b[1] - a[1]);
  for (const [n, r] of rows) console.log(n + '\t' + r);
})().catch(e => { console.error(String(e)); process.exit(1); });
