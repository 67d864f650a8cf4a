/* domtree.c: the aggregated, pruned dominator tree (see domtree.h).

   Data structures: the children of every dominator-tree node in CSR form
   (kid_off, kids: built once from idom); the output nodes (dt_node, a
   growing array: children of a node are made together, so they are
   contiguous and sorted by retained size); per output node waiting to be
   expanded, the list of its member graph nodes; a binary max-heap of
   those nodes by retained size (best-first expansion).

   Grouping: an expansion visits the dominator-tree children of all the
   members of one group and sums them per key in a hash map (u64map):
   kinds and labels are keys of their own, blocks share a key when tag,
   size class (log2 of bytes) and allocation site (the location naming
   the sampled allocation's site, by default the innermost of its stack;
   1 for a sample without one, 0 unsampled) are
   equal; a block with a group (its type and field name) has it in place
   of its tag.  A second visit gives the kept groups their members.  Every
   graph node is a member of at most one group, so the whole is linear in
   the blocks visited. */

#include <stdlib.h>
#include <string.h>

#include "domtree.h"
#include "util.h"

typedef struct {
  dt_tree *t;
  const hg_reader *r;
  const hg_snapshot *s;
  const uint64_t *retained;
  const uint32_t *site_loc;     /* per allocation, or NULL (dt_build) */
  const uint32_t *group;        /* per graph node, or NULL (dt_build) */
  uint32_t *kid_off, *kids;
  uint32_t **members;           /* per output node, until expanded */
  uint32_t *nmembers, *depth;
  size_t cap;
  uint32_t *heap; size_t nheap, heap_cap;
} builder;

static uint64_t key_of(const builder *b, uint32_t v)
{
  const hg_snapshot *s = b->s;
  if (v < s->base) return 1ull << 63 | v;
  uint32_t k = v - s->base + 1, al = s->alloc[k - 1];
  uint64_t bytes = hg_block_bytes(s, k), site = 0;
  unsigned c = 63 - (unsigned)__builtin_clzll(bytes);
  if (al) {
    const hg_alloc *a = &b->r->allocs[al - 1];
    if (b->site_loc) site = b->site_loc[al - 1] ? (uint64_t)b->site_loc[al - 1] + 2 : 1;
    else site = a->stack_len ? (uint64_t)b->r->stacks[a->stack_off] + 2 : 1;
  }
  /* A typed block by its group instead of its tag (site < 2^33). */
  if (b->group && b->group[v] && b->group[v] < 1u << 23)
    return 1ull << 62 | (uint64_t)b->group[v] << 39 | (uint64_t)c << 33 | site;
  return (uint64_t)s->tag[k - 1] << 48 | (uint64_t)c << 40 | site;
}

static uint32_t new_node(builder *b, int32_t parent, uint32_t example)
{
  dt_tree *t = b->t;
  if (t->n + 1 > b->cap) {
    b->cap = b->cap ? 2 * b->cap : 64;
    t->v = xrealloc(t->v, b->cap * sizeof *t->v);
    b->members = xrealloc(b->members, b->cap * sizeof *b->members);
    b->nmembers = xrealloc(b->nmembers, b->cap * sizeof *b->nmembers);
    b->depth = xrealloc(b->depth, b->cap * sizeof *b->depth);
  }
  uint32_t i = t->n++;
  const hg_snapshot *s = b->s;
  dt_node *d = &t->v[i];
  memset(d, 0, sizeof *d);
  d->parent = parent;
  d->example = example;
  d->type = example == 0 ? DT_ROOT : example <= HG_KINDS ? DT_KIND : example < s->base ? DT_LABEL : DT_BLOCKS;
  if (d->type == DT_BLOCKS) {
    uint32_t k = example - s->base + 1;
    d->tag = s->tag[k - 1];
    d->size_class = 63 - (unsigned)__builtin_clzll(hg_block_bytes(s, k));
    d->alloc = s->alloc[k - 1];
  }
  b->members[i] = NULL;
  b->nmembers[i] = 0;
  b->depth[i] = parent < 0 ? 0 : b->depth[parent] + 1;
  return i;
}

/* ---- the max-heap of nodes to expand, by retained size ---- */

static int heavier(const builder *b, uint32_t x, uint32_t y)
{
  const dt_node *p = &b->t->v[x], *q = &b->t->v[y];
  return p->retained != q->retained ? p->retained > q->retained : x < y;
}

static void heap_push(builder *b, uint32_t x)
{
  grow_array((void **)&b->heap, &b->heap_cap, b->nheap + 1, sizeof *b->heap);
  size_t i = b->nheap++;
  while (i > 0 && heavier(b, x, b->heap[(i - 1) / 2])) { b->heap[i] = b->heap[(i - 1) / 2]; i = (i - 1) / 2; }
  b->heap[i] = x;
}

static uint32_t heap_pop(builder *b)
{
  uint32_t top = b->heap[0], x = b->heap[--b->nheap];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= b->nheap) break;
    if (c + 1 < b->nheap && heavier(b, b->heap[c + 1], b->heap[c])) c++;
    if (!heavier(b, b->heap[c], x)) break;
    b->heap[i] = b->heap[c]; i = c;
  }
  if (b->nheap) b->heap[i] = x;
  return top;
}

/* ---- expansion ---- */

typedef struct { uint64_t key, retained, self, count; uint32_t example, slot; int more; } group;

static int by_retained(const void *x, const void *y)
{
  const group *a = x, *b = y;
  if (a->retained != b->retained) return a->retained < b->retained ? 1 : -1;
  return (a->key > b->key) - (a->key < b->key);
}

/* Expand output node [g] into at most [room] children (an "others" row
   included); returns the children made. */
static uint32_t expand(builder *b, uint32_t g, uint32_t room, uint32_t width, uint32_t max_depth)
{
  const hg_snapshot *s = b->s;
  uint32_t *m = b->members[g], nm = b->nmembers[g];
  u64map idx;
  u64map_init(&idx, 64);
  group *gs = NULL;
  size_t ng = 0, gcap = 0;
  for (uint32_t i = 0; i < nm; i++)
    for (uint32_t k = b->kid_off[m[i]]; k < b->kid_off[m[i] + 1]; k++) {
      uint32_t c = b->kids[k];
      uint64_t key = key_of(b, c);
      uint32_t *p = u64map_get(&idx, key), j;
      if (p) j = *p;
      else {
        grow_array((void **)&gs, &gcap, ng + 1, sizeof *gs);
        j = (uint32_t)ng++;
        memset(&gs[j], 0, sizeof gs[j]);
        gs[j].key = key; gs[j].example = c;
        u64map_put(&idx, key, j);
      }
      gs[j].retained += b->retained[c];
      gs[j].self += c >= s->base ? hg_block_bytes(s, c - s->base + 1) : 0;
      gs[j].count++;
      gs[j].more |= b->kid_off[c + 1] > b->kid_off[c];
    }
  /* root kinds without roots: nothing to show */
  for (size_t j = 0; j < ng;)
    if (gs[j].example >= 1 && gs[j].example <= HG_KINDS && !gs[j].more && !gs[j].retained) {
      u64map_del(&idx, gs[j].key, NULL);
      gs[j] = gs[--ng];
    } else j++;
  uint32_t made = 0;
  if (ng) {
    qsort(gs, ng, sizeof *gs, by_retained);
    size_t keep = ng <= width + 1 ? ng : width;
    if (keep + (keep < ng) > room) keep = room > 1 ? room - 1 : 0;
    if (keep == 0) { b->t->v[g].more = 1; goto done; }
    b->t->v[g].first = b->t->n;
    for (size_t j = 0; j < keep; j++) {
      uint32_t x = new_node(b, (int32_t)g, gs[j].example);
      dt_node *d = &b->t->v[x];
      d->retained = gs[j].retained; d->self = gs[j].self; d->count = gs[j].count; d->more = gs[j].more;
      gs[j].slot = x + 1;
      if (gs[j].more && b->depth[x] < max_depth) {
        b->members[x] = xmalloc(gs[j].count * sizeof **b->members);
        d->more = 0;                    /* until we know it stays unexpanded */
      }
    }
    if (keep < ng) {
      uint32_t x = new_node(b, (int32_t)g, 0);
      dt_node *d = &b->t->v[x];
      d->type = DT_OTHERS; d->example = (uint32_t)(ng - keep);   /* groups in it */
      for (size_t j = keep; j < ng; j++) {
        d->retained += gs[j].retained; d->self += gs[j].self; d->count += gs[j].count;
        d->more |= gs[j].more;
      }
    }
    made = b->t->n - b->t->v[g].first;
    b->t->v[g].nkids = made;
    /* the kept groups' members, then the groups to expand */
    for (size_t j = 0; j < ng; j++) u64map_put(&idx, gs[j].key, (uint32_t)j);
    for (uint32_t i = 0; i < nm; i++)
      for (uint32_t k = b->kid_off[m[i]]; k < b->kid_off[m[i] + 1]; k++) {
        uint32_t c = b->kids[k], *j = u64map_get(&idx, key_of(b, c)), x = j ? gs[*j].slot : 0;
        if (x && b->members[x - 1]) b->members[x - 1][b->nmembers[x - 1]++] = c;
      }
    for (size_t j = 0; j < keep; j++)
      if (b->members[gs[j].slot - 1]) heap_push(b, gs[j].slot - 1);
  }
done:
  free(gs);
  u64map_free(&idx);
  return made;
}

void dt_build(const hg_reader *r, const hg_snapshot *s, const dom_tree *dom,
              const uint64_t *retained, const uint32_t *site_loc, const uint32_t *group,
              uint32_t max_nodes,
              uint32_t width, uint32_t max_depth, dt_tree *t)
{
  builder b = { .t = t, .r = r, .s = s, .retained = retained, .site_loc = site_loc,
                .group = group };
  memset(t, 0, sizeof *t);
  if (s->n == 0 || max_nodes == 0) return;
  if (width == 0) width = 1;
  /* children of the dominator tree, CSR */
  b.kid_off = xcalloc((size_t)s->n + 1, sizeof *b.kid_off);
  for (uint32_t v = 0; v < s->n; v++)
    if (dom->idom[v] != DOM_NONE) b.kid_off[dom->idom[v] + 1]++;
  for (uint32_t v = 0; v < s->n; v++) b.kid_off[v + 1] += b.kid_off[v];
  uint32_t *fill = xmalloc((size_t)s->n * sizeof *fill);
  memcpy(fill, b.kid_off, (size_t)s->n * sizeof *fill);
  b.kids = xmalloc(((size_t)b.kid_off[s->n] + 1) * sizeof *b.kids);
  for (uint32_t v = 0; v < s->n; v++)
    if (dom->idom[v] != DOM_NONE) b.kids[fill[dom->idom[v]]++] = v;
  free(fill);

  uint32_t root = new_node(&b, -1, 0);
  t->v[root].retained = retained[0];
  t->v[root].count = 1;
  b.members[root] = xmalloc(sizeof **b.members);
  b.members[root][0] = 0;
  b.nmembers[root] = 1;
  heap_push(&b, root);
  while (b.nheap) {
    uint32_t g = heap_pop(&b);
    if (t->n < max_nodes) expand(&b, g, max_nodes - t->n, width, max_depth);
    if (!t->v[g].nkids) t->v[g].more = 1;
    free(b.members[g]); b.members[g] = NULL;
  }
  free(b.members); free(b.nmembers); free(b.depth); free(b.heap);
  free(b.kid_off); free(b.kids);
}

void dt_free(dt_tree *t)
{
  free(t->v);
  memset(t, 0, sizeof *t);
}
