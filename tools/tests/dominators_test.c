/* dominators_test.c: dom_compute against a brute-force definition on
   random graphs (fixed seed): v dominates w iff w is unreachable from the
   root once v is removed, and retained sizes (the nodes v dominates,
   0 when unreachable).  Also a 2-million-cell chain (no recursion).  Prints "dominators: N graphs ok" or the first
   mismatch, exit 1. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dominators.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (uint32_t)(rng % n);
}

/* Reachable from 0 avoiding [removed] (DOM_NONE: none). */
static void reach(uint32_t n, const uint32_t *off, const uint32_t *adj,
                  uint32_t removed, char *seen, uint32_t *stack)
{
  memset(seen, 0, n);
  if (removed == 0) return;
  uint32_t sp = 0;
  seen[0] = 1; stack[sp++] = 0;
  while (sp) {
    uint32_t v = stack[--sp];
    for (uint32_t k = off[v]; k < off[v + 1]; k++) {
      uint32_t w = adj[k];
      if (w != removed && !seen[w]) { seen[w] = 1; stack[sp++] = w; }
    }
  }
}

int main(void)
{
  int graphs = 0;
  for (int g = 0; g < 300; g++) {
    uint32_t n = 1 + rnd(40), m = rnd(3 * n + 1);
    uint32_t *off = calloc(n + 1, sizeof *off);
    uint32_t *src = malloc((m + 1) * sizeof *src), *dst = malloc((m + 1) * sizeof *dst);
    uint32_t *adj = malloc((m + 1) * sizeof *adj);
    for (uint32_t e = 0; e < m; e++) { src[e] = rnd(n); dst[e] = rnd(n); off[src[e] + 1]++; }
    for (uint32_t v = 0; v < n; v++) off[v + 1] += off[v];
    uint32_t *fill = malloc((n + 1) * sizeof *fill);
    memcpy(fill, off, (n + 1) * sizeof *fill);
    for (uint32_t e = 0; e < m; e++) adj[fill[src[e]]++] = dst[e];
    dom_tree t;
    if (dom_compute(n, off, adj, &t) != 0) { printf("dominators: out of memory\n"); return 1; }
    char *all = malloc(n), *seen = malloc(n);
    uint32_t *stack = malloc((n + 1) * sizeof *stack);
    reach(n, off, adj, DOM_NONE, all, stack);
    /* dom[v][w]: v dominates w */
    char *dom = calloc((size_t)n * n, 1);
    for (uint32_t v = 0; v < n; v++) {
      reach(n, off, adj, v, seen, stack);
      for (uint32_t w = 0; w < n; w++) dom[(size_t)v * n + w] = all[w] && !seen[w];
    }
    for (uint32_t w = 1; w < n; w++) {
      uint32_t expect = DOM_NONE;
      if (all[w])   /* the strict dominator dominated by all the others */
        for (uint32_t v = 0; v < n; v++) {
          if (v == w || !dom[(size_t)v * n + w]) continue;
          int closest = 1;
          for (uint32_t u = 0; u < n; u++)
            if (u != w && u != v && dom[(size_t)u * n + w] && !dom[(size_t)u * n + v]) closest = 0;
          if (closest) expect = v;
        }
      if (t.idom[w] != expect) {
        printf("dominators: graph %d node %u: idom %u, expected %u\n", g, w, t.idom[w], expect);
        return 1;
      }
    }
    uint64_t *ret = malloc(n * sizeof *ret);
    for (uint32_t v = 0; v < n; v++) ret[v] = 1;
    dom_retained(&t, ret);
    for (uint32_t v = 0; v < n; v++) {
      uint64_t expect = 0;
      for (uint32_t w = 0; w < n; w++) expect += dom[(size_t)v * n + w];
      if (ret[v] != expect) {
        printf("dominators: graph %d node %u: retained %llu, expected %llu\n", g, v,
               (unsigned long long)ret[v], (unsigned long long)expect);
        return 1;
      }
    }
    free(ret);
    free(dom); free(all); free(seen); free(stack);
    free(off); free(src); free(dst); free(adj); free(fill);
    dom_free(&t);
    graphs++;
  }
  /* A long chain 0 -> 1 -> ... -> n-1: each retains the rest. */
  uint32_t n = 2000000;
  uint32_t *off = malloc((n + 1) * sizeof *off);
  uint64_t *ret = malloc(n * sizeof *ret);
  uint32_t *adj = malloc(n * sizeof *adj);
  for (uint32_t v = 0; v < n; v++) { off[v] = v; adj[v] = v + 1; ret[v] = 3; }
  off[n] = n - 1;
  dom_tree t;
  if (dom_compute(n, off, adj, &t) != 0) { printf("dominators: out of memory\n"); return 1; }
  dom_retained(&t, ret);
  if (t.reached != n || t.idom[n - 1] != n - 2 || ret[0] != 3ull * n || ret[n / 2] != 3ull * (n - n / 2)) {
    printf("dominators: chain: reached %u, retained(0) %llu\n", t.reached, (unsigned long long)ret[0]);
    return 1;
  }
  dom_free(&t);
  free(off); free(ret); free(adj);
  printf("dominators: %d random graphs and a %u-node chain ok\n", graphs, n);
  return 0;
}
