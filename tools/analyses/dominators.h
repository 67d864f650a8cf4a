/* dominators.h: dominator tree and retained sizes of a rooted graph.

   The graph has nodes 0..n-1, root 0, and its successors in CSR form:
   node v's successors are adj[off[v] .. off[v+1]).  dom_compute finds the
   immediate dominator of every node reachable from the root
   (Lengauer-Tarjan with path compression: near-linear time, iterative: no
   recursion however deep the graph).  Memory: at most 7 arrays of n
   32-bit words and one of 4 bytes per reachable edge that is not a
   tree or forward edge of the DFS (predecessors); the retained sizes
   use memory dom_compute has used already (dom_tree.retained).  Edge
   offsets are 32-bit: the graph has fewer than 2^32 edges. */

#ifndef OCAML_MEMPROF_DOMINATORS_H
#define OCAML_MEMPROF_DOMINATORS_H

#include <stdint.h>

#define DOM_NONE UINT32_MAX

typedef struct {
  uint32_t n;             /* nodes */
  uint32_t reached;       /* nodes reachable from the root */
  uint32_t *idom;         /* idom[v]; DOM_NONE for the root and the
                             unreachable nodes */
  uint32_t *preorder;     /* reachable nodes in DFS preorder (root first):
                             a node comes after its dominators */
  uint64_t *retained;     /* room for n 64-bit words (dom_compute's own
                             scratch, reused), for dom_retained */
} dom_tree;

/* 0, or -1 if memory ran out (then *t is empty). */
int dom_compute(uint32_t n, const uint32_t *off, const uint32_t *adj, dom_tree *t);

/* In place: [retained] (n entries) holds every node's own size, and
   becomes retained[v] = its own size + the retained sizes of the nodes v
   immediately dominates (0 for unreachable nodes). */
void dom_retained(const dom_tree *t, uint64_t *retained);

void dom_free(dom_tree *t);

#endif
