/* dominators.c: Lengauer-Tarjan dominators (see dominators.h).

   Data structures, all indexed by DFS preorder number (1..N, the root is
   1; 0 means "none"), every one 32 bits: vertex (number -> node), the
   eval forest's ancestor, semidominator, label (the vertex of least
   semidominator on the compressed path), the buckets (head per vertex,
   and a link per member), idom, and the predecessors numbered above
   their vertex in CSR form (those below only set its initial
   semidominator).

   Algorithm: Lengauer-Tarjan, simple version (eval with path compression,
   link without balancing: O(m log n) worst case, near-linear in
   practice), with buckets for the implicit immediate dominators.  (The
   semi-NCA variant, which replaces the buckets by a walk up the partial
   dominator tree, is quadratic on long chains with back edges: 6 M blocks
   of records linked to their predecessors took minutes.)

   Memory is what a large snapshot costs (48 M nodes: 190 MB per array),
   so arrays are shared where lifetimes allow:
   - ancestor starts as the DFS tree's parent: vertices are linked in
     decreasing number, so at any time the linked ones are those above a
     limit, and "is x a root of the forest" is "x <= limit" (no separate
     parent array, no zeroing);
   - a vertex's bucket link is needed until its bucket is processed, its
     idom only from then on: one array for both;
   - eval compresses its path by pointing the ancestors back down on the
     way up, then at the forest root on the way down (no stack);
   - the DFS's stack becomes the semidominators, its edge cursors the
     predecessors' offsets (the two one allocation, which the result
     keeps as room for the retained sizes), the node -> number map
     (needed until the predecessors are built) the bucket links, and the
     labels the result's per-node idom; the DFS numbering is the result's
     preorder.
   So the peak is 7 arrays of n words and one of the cross and back
   edges, which are also all the fresh memory, the retained sizes
   included (about 19 words per node and one per edge before): fresh
   pages, zeroed by the kernel, were a third of the time.  Offsets are
   32-bit: the graph has fewer than 2^32 edges (heapgraph.h).

   Memory access: the arrays of a large snapshot are hundreds of MB, so
   the cost is cache and TLB misses.  The predecessor lists are built by
   scanning the successor lists in node order (sequential; the snapshot's
   breadth-first numbering), not in DFS order.
   No array asks for transparent huge pages (madvise MADV_HUGEPAGE),
   although they spare TLB misses: on this project's VM a huge page
   fault cost from 0.3 to 23 ms (1 GiB through 512 of them, two runs a
   minute apart), 4 KiB pages 0.4-0.6 s per GiB, and `retainers` on
   bench/snapshot's 48 M-block snapshot took 18-25 s with them (11-15 s
   of system time, 350 k faults) against 8.0-9.3 s with 4 KiB pages
   (1.1-1.3 s of system time, 710 k faults; user time 6.8-7.9 s, about
   the same), runs alternated on 2026-11-28.  When the advice was added,
   it had taken dom_compute's CPU time on 12 M nodes from 4.3 s to
   2.4 s: the cost of a fault is the host's, and moves. */

#include <stdlib.h>
#include <string.h>

#include "dominators.h"
#include "util.h"

/* An array of [n] 32-bit words (zeroed if [zero]); NULL if memory ran
   out. */
static uint32_t *array(size_t n, int zero)
{
  if (n == 0) n = 1;
  return zero ? calloc(n, sizeof(uint32_t)) : malloc(n * sizeof(uint32_t));
}

/* eval(v) in the forest whose linked vertices are those above [linked]
   (see the top: ancestor doubles as the parent of unlinked vertices),
   with path compression by pointer reversal. */
static inline uint32_t eval(uint32_t v, uint32_t linked, uint32_t *ancestor, uint32_t *label,
                            const uint32_t *semi)
{
  if (v <= linked) return v;
  /* Up: while x's ancestor is linked, point x back at the vertex below
     it (0 below v). */
  uint32_t below = 0, x = v;
  while (ancestor[x] > linked) {
    uint32_t up = ancestor[x];
    ancestor[x] = below;
    below = x;
    x = up;
  }
  /* Down: x is the top of the path (its ancestor is the forest root);
     each vertex takes the least label above it and the root as
     ancestor. */
  while (below) {
    uint32_t y = below;
    below = ancestor[y];
    if (semi[label[x]] < semi[label[y]]) label[y] = label[x];
    ancestor[y] = ancestor[x];
    x = y;
  }
  return label[v];
}

int dom_compute(uint32_t n, const uint32_t *off, const uint32_t *adj, dom_tree *t)
{
  memset(t, 0, sizeof *t);
  t->n = n;
  size_t len = (size_t)n + 3;
  uint32_t *pre = array(len, 1);                /* node -> number */
  uint32_t *vertex = array(len, 0);
  uint32_t *ancestor = array(len, 0);           /* parent, then the forest */
  uint32_t *stack = array(2 * len, 0);           /* and the cursors */
  uint32_t *cursor = stack ? stack + len : NULL;
  int ok = pre && vertex && ancestor && stack;
  uint32_t N = 0;
  if (ok && n > 0) {
    /* Iterative DFS from node 0. */
    uint32_t sp = 0;
    pre[0] = ++N; vertex[N] = 0; ancestor[N] = 0;
    stack[sp] = 0; cursor[sp] = off[0]; sp++;
    while (sp > 0) {
      uint32_t v = stack[sp - 1];
      if (cursor[sp - 1] < off[v + 1]) {
        uint32_t w = adj[cursor[sp - 1]++];
        if (!pre[w]) {
          pre[w] = ++N; vertex[N] = w; ancestor[N] = pre[v];
          stack[sp] = w; cursor[sp] = off[w]; sp++;
        }
      } else {
        sp--;
      }
    }
  }
  /* A predecessor v of w numbered below it is not linked when w is
     processed: eval(v) is v, whose semidominator is still v.  So those
     predecessors only set w's initial semidominator (their least number,
     or w), and the lists keep the others (cross and back edges: in a
     heap, where most edges are tree edges, a fraction of them).
     Predecessors, by number, of reachable vertices: one sequential scan
     of the successor lists (in node order, not in preorder, which would
     jump around them) to count, one to fill; poff[w] .. poff[w + 1] are
     w's after the fill (the count of w is kept at poff[w + 2] until the
     prefix sum, whose fill moves every start up by one slot). */
  uint32_t *poff = cursor;
  uint32_t *semi = stack;
  uint32_t *pred = NULL;
  if (ok) {
    memset(poff, 0, len * sizeof *poff);
    for (uint32_t i = 1; i <= N; i++) semi[i] = i;
    for (uint32_t v = 0; v < n; v++) {
      uint32_t pv = pre[v];
      if (pv)
        for (uint32_t k = off[v]; k < off[v + 1]; k++) {
          uint32_t pw = pre[adj[k]];
          if (pv > pw) poff[pw + 2]++;
          else if (pv < semi[pw]) semi[pw] = pv;
        }
    }
    for (uint32_t i = 3; i <= N + 2; i++) poff[i] += poff[i - 1];
    pred = array(poff[N + 2], 0);
    ok = pred != NULL;
  }
  if (ok) {
    for (uint32_t v = 0; v < n; v++) {
      uint32_t pv = pre[v];
      if (pv)
        for (uint32_t k = off[v]; k < off[v + 1]; k++) {
          uint32_t pw = pre[adj[k]];
          if (pv > pw) pred[poff[pw + 1]++] = pv;
        }
    }
  }
  uint32_t *next = pre;                         /* bucket links, then idom */
  uint32_t *idom = pre;
  uint32_t *label = ok ? array(len, 0) : NULL;
  uint32_t *bucket = ok ? array(len, 1) : NULL;
  ok = ok && label && bucket;
  if (ok) {
    for (uint32_t i = 1; i <= N; i++) label[i] = i;
    for (uint32_t w = N; w >= 2; w--) {
      /* Linked: the vertices above w (its listed predecessors). */
      for (uint32_t k = poff[w]; k < poff[w + 1]; k++) {
        uint32_t u = eval(pred[k], w, ancestor, label, semi);
        if (semi[u] < semi[w]) semi[w] = semi[u];
      }
      next[w] = bucket[semi[w]]; bucket[semi[w]] = w;
      /* Link w under its parent (its ancestor already): the linked are
         now the vertices above w - 1. */
      uint32_t p = ancestor[w];
      for (uint32_t v = bucket[p], after; v; v = after) {
        after = next[v];
        uint32_t u = eval(v, w - 1, ancestor, label, semi);
        idom[v] = semi[u] < semi[v] ? u : p;
      }
      bucket[p] = 0;
    }
    idom[1] = 0;
    for (uint32_t w = 2; w <= N; w++)
      if (idom[w] != semi[w]) idom[w] = idom[idom[w]];
  }
  free(pred); free(ancestor); free(bucket);
  if (!ok) {
    free(stack); free(vertex); free(idom); free(label);
    memset(t, 0, sizeof *t);
    return -1;
  }
  /* Room for the retained sizes: the semidominators and offsets. */
  t->retained = (uint64_t *)stack;
  /* Per node, in the labels' array (n + 3 words). */
  t->idom = label;
  for (uint32_t v = 0; v < n; v++) t->idom[v] = DOM_NONE;
  for (uint32_t i = 2; i <= N; i++) t->idom[vertex[i]] = vertex[idom[i]];
  free(idom);
  /* vertex[1..N] is the preorder: shift it down into place. */
  memmove(vertex, vertex + 1, (size_t)N * sizeof *vertex);
  t->preorder = vertex;
  t->reached = N;
  return 0;
}

void dom_retained(const dom_tree *t, uint64_t *retained)
{
  for (uint32_t v = 1; v < t->n; v++)
    if (t->idom[v] == DOM_NONE) retained[v] = 0;
  for (uint32_t i = t->reached; i-- > 1;) {
    uint32_t v = t->preorder[i];
    retained[t->idom[v]] += retained[v];
  }
}

void dom_free(dom_tree *t)
{
  free(t->idom); free(t->preorder); free(t->retained);
  memset(t, 0, sizeof *t);
}
