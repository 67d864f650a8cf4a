/* heapgraph.c: building snapshot graphs from a trace (see heapgraph.h).

   The runtime writes a snapshot's roots before its blocks (roots are
   scanned, then blocks written breadth first), so when the first block
   arrives every label node is known and the node numbering is fixed:
   block edges are appended in node numbering as they are decoded, the
   synthetic nodes' edges first.  A root after the first block is
   rejected as malformed.

   Non-retaining roots (statmemprof's: MPT_ROOT_NONRETAINING) must not
   change what the program's own roots retain, yet what only they reach
   is live and must be counted somewhere.  So once the graph is read,
   held_by_profiler_only keeps, under the memprof kind node, just the
   blocks that no retaining root reaches: memprof root edges to blocks
   reached otherwise are dropped, and so are the edges from profiler-held
   blocks into blocks reached otherwise.  The retained sizes of the
   other roots are then those of the same heap without the profiler. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapgraph.h"

int hg_open(hg_reader *r, const char *path)
{
  memset(r, 0, sizeof *r);
  r->path = path;
  r->t = ti_open(path, r->error, sizeof r->error);
  if (!r->t) return -1;
  u64map_init(&r->alloc_ids, 1024);
  r->strs = strpool_new();
  return 0;
}

void hg_close(hg_reader *r)
{
  if (r->t) ti_close(r->t);
  u64map_free(&r->alloc_ids);
  if (r->strs) strpool_free(r->strs);
  free(r->allocs); free(r->stacks);
  memset(r, 0, sizeof *r);
}

void hg_snapshot_free(hg_snapshot *s)
{
  free(s->label_kind); free(s->label_str); free(s->tag); free(s->wosize);
  free(s->big_wosize);
  free(s->alloc); free(s->custom); free(s->off); free(s->adj); free(s->weak_target);
  if (s->custom_of.e) u64map_free(&s->custom_of);
  if (s->big_wosize_of.e) u64map_free(&s->big_wosize_of);
  free(s->roots);
  memset(s, 0, sizeof *s);
}

static void on_alloc(hg_reader *r, const mpt_event *ev)
{
  grow_array((void **)&r->allocs, &r->allocs_cap, r->nallocs + 1, sizeof *r->allocs);
  grow_array((void **)&r->stacks, &r->stacks_cap, r->nstacks + ev->stack_len, sizeof *r->stacks);
  hg_alloc *a = &r->allocs[r->nallocs];
  a->stack_off = (uint32_t)r->nstacks;
  a->stack_len = ev->stack_len;
  a->nsamples = ev->nsamples;
  a->wosize = ev->wosize;
  if (ev->stack_len)           /* an empty stack may come before any */
    memcpy(r->stacks + r->nstacks, ev->stack, ev->stack_len * sizeof *ev->stack);
  r->nstacks += ev->stack_len;
  u64map_put(&r->alloc_ids, ev->id, (uint32_t)r->nallocs);
  r->nallocs++;
}

typedef struct {
  hg_snapshot *s;
  size_t roots_cap, blocks_cap, labels_cap;
  uint64_t adj_cap;
  u64map label_of;              /* kind << 32 | string id -> label node */
  int blocks_started;
  uint32_t filled;              /* blocks 1..filled have their slots set */
  uint64_t max_target;
  int explicit_ids;             /* an IDS record: renumbered at the end */
  uint32_t *sparse;             /* explicit ids: each block's id, by its
                                   place among the blocks read */
  size_t sparse_cap;
  uint32_t *weak_src;           /* explicit ids: each weak edge's block */
  size_t weak_src_cap;
} builder;

static const char too_many_blocks[] = "snapshot too large for this tool (2^31 blocks)";
static const char too_many_edges[] = "snapshot too large for this tool (2^32 edges)";

static int fail(hg_reader *r, const char *m)
{
  snprintf(r->error, sizeof r->error, "%s", m);
  return -1;
}

/* Room for [more] edges in s->adj (the caller has checked that the total
   stays below 2^32). */
static inline void reserve_adj(builder *b, uint64_t more)
{
  hg_snapshot *s = b->s;
  if (s->nadj + more <= b->adj_cap) return;
  uint64_t cap = b->adj_cap ? b->adj_cap : 1 << 16;
  while (cap < s->nadj + more) cap *= 2;
  s->adj = xrealloc(s->adj, cap * sizeof *s->adj);
  b->adj_cap = cap;
}

static void push_adj(builder *b, uint32_t node)
{
  reserve_adj(b, 1);
  b->s->adj[b->s->nadj++] = node;
}

/* Grow the per-block arrays to hold block [id] (and the node offsets);
   the slots are set when blocks arrive (hg_next, fill_blocks). */
static void grow_blocks(builder *b, uint64_t id);
static inline void ensure_blocks(builder *b, uint64_t id)
{
  if (id > b->blocks_cap) grow_blocks(b, id);
}

static void grow_blocks(builder *b, uint64_t id)
{
  hg_snapshot *s = b->s;
  size_t cap = b->blocks_cap ? b->blocks_cap : 1 << 16;
  while (cap < id) cap *= 2;
  s->tag = xrealloc(s->tag, cap);
  s->wosize = xrealloc(s->wosize, cap * sizeof *s->wosize);
  s->alloc = xrealloc(s->alloc, cap * sizeof *s->alloc);
  s->off = xrealloc(s->off, ((size_t)s->base + cap + 1) * sizeof *s->off);
  b->blocks_cap = cap;
}

/* Blocks filled+1 .. [id] not written (yet): empty leaves. */
static void fill_blocks(builder *b, uint32_t id)
{
  hg_snapshot *s = b->s;
  if (id <= b->filled) return;
  ensure_blocks(b, id);
  for (uint32_t i = b->filled; i < id; i++) {
    s->tag[i] = 0; s->wosize[i] = 0; s->alloc[i] = 0;
    s->off[s->base + i] = (uint32_t)s->nadj;
  }
  b->filled = id;
}

static void set_wosize(hg_snapshot *s, uint32_t id, uint64_t wosize)
{
  if (wosize < HG_WOSIZE_BIG) { s->wosize[id - 1] = (uint32_t)wosize; return; }
  s->wosize[id - 1] = HG_WOSIZE_BIG;
  uint32_t *i = u64map_get(&s->big_wosize_of, id);
  if (!i) {
    grow_array((void **)&s->big_wosize, &s->big_wosize_cap, s->nbig_wosize + 1,
               sizeof *s->big_wosize);
    u64map_put(&s->big_wosize_of, id, (uint32_t)s->nbig_wosize);
    i = u64map_get(&s->big_wosize_of, id);
    s->nbig_wosize++;
  }
  s->big_wosize[*i] = wosize;
}

uint64_t hg_big_wosize(const hg_snapshot *s, uint32_t b)
{
  return s->big_wosize[*u64map_get(&s->big_wosize_of, b)];
}

/* The synthetic nodes and their edges, once all roots are known. */
static void start_blocks(builder *b)
{
  hg_snapshot *s = b->s;
  b->blocks_started = 1;
  s->base = 1 + HG_KINDS + s->nlabels;
  ensure_blocks(b, 1);
  s->off[0] = 0;
  for (uint32_t k = 0; k < HG_KINDS; k++) push_adj(b, 1 + k);
  for (uint32_t k = 0; k < HG_KINDS; k++) {
    s->off[1 + k] = s->nadj;
    for (uint32_t l = 0; l < s->nlabels; l++)
      if (s->label_kind[l] == k) push_adj(b, 1 + HG_KINDS + l);
  }
  /* Roots grouped by label node (counting sort by label). */
  uint32_t *count = xcalloc(s->nlabels + 1, sizeof *count);
  for (size_t i = 0; i < s->nroots; i++) count[s->roots[i].label + 1]++;
  for (uint32_t l = 0; l < s->nlabels; l++) count[l + 1] += count[l];
  uint32_t first = (uint32_t)s->nadj;
  for (uint32_t l = 0; l < s->nlabels; l++) s->off[1 + HG_KINDS + l] = first + count[l];
  for (size_t i = 0; i < s->nroots; i++) push_adj(b, 0);
  for (size_t i = 0; i < s->nroots; i++) {
    const hg_root *rt = &s->roots[i];
    s->adj[first + count[rt->label]++] = s->base + (uint32_t)rt->target - 1;
  }
  free(count);
}

/* A snapshot with explicit ids (the runtime swept the heap in address
   order: memprof_snapshot_sweep=1) is renumbered as the runtime's walk
   from the roots numbers blocks, and the blocks it would not have reached
   are dropped (blocks that died in the minor heap, major blocks dead
   since the cycle began or allocated during it and dropped), as are
   edges to ids without a block: roots' targets first, in the order of
   the ROOT records, then each block's targets in the order of its edges,
   the strong ones, then the weak ones (a record's weak edges come after
   its strong ones).  So the graph, and everything computed from it, is
   the one a walk from the roots gives.  While the snapshot is read, its
   blocks are kept in the order they came (b->sparse: their ids) and its
   edges name ids, which may be far larger than the blocks written (the
   IDS record's limit, which no memory is sized by): they are turned into
   blocks here (id_index, util.h).  Memory while it
   runs: 12 bytes per block (16 with the table) and 4 per edge more, freed
   before the analyses (whose own tables are larger). */

static void renumber(builder *b)
{
  hg_snapshot *s = b->s;
  uint32_t nb = s->nblocks, base = s->base;
  /* Ids to blocks, in place: roots' targets, edges (UINT32_MAX: no
     block), weak targets. */
  id_index blocks;
  id_index_init(&blocks, b->sparse, nb);
  for (size_t i = 0; i < s->nroots; i++)
    s->roots[i].target = id_index_find(&blocks, s->roots[i].target);
  for (uint64_t e = 0; e < s->nadj; e++)
    if (s->adj[e] >= base) {
      uint32_t d = id_index_find(&blocks, (uint64_t)s->adj[e] - base + 1);
      s->adj[e] = d ? base + d - 1 : UINT32_MAX;
    }
  for (uint64_t i = 0; i < s->nweak; i++)
    s->weak_target[i] = id_index_find(&blocks, s->weak_target[i]);
  id_index_free(&blocks);
  /* The order of the walk from the roots. */
  uint32_t *newid = xcalloc((size_t)nb + 1, sizeof *newid);
  uint32_t *order = xmalloc(((size_t)nb + 1) * sizeof *order);
  uint32_t m = 0;
  for (size_t i = 0; i < s->nroots; i++) {
    uint32_t t = (uint32_t)s->roots[i].target;
    if (t && !newid[t]) { newid[t] = ++m; order[m - 1] = t; }
  }
  for (uint32_t q = 0; q < m; q++) {
    uint32_t old = order[q], v = base + old - 1;
    for (uint32_t e = s->off[v]; e < s->off[v + 1]; e++) {
      if (s->adj[e] == UINT32_MAX) continue;
      uint32_t t = s->adj[e] - base + 1;
      if (!newid[t]) { newid[t] = ++m; order[m - 1] = t; }
    }
    if (s->nweak == 0) continue;
    size_t lo = 0, hi = s->nweak;      /* the block's first weak edge */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (b->weak_src[mid] < old) lo = mid + 1; else hi = mid;
    }
    for (; lo < s->nweak && b->weak_src[lo] == old; lo++) {
      uint32_t t = s->weak_target[lo];
      if (t && !newid[t]) { newid[t] = ++m; order[m - 1] = t; }
    }
  }
  /* The edges: the synthetic nodes' (roots' targets renamed), then the
     reached blocks' in their new order; those to no block dropped. */
  uint32_t *adj = xmalloc((s->nadj ? s->nadj : 1) * sizeof *adj);
  uint32_t *off = xmalloc(((size_t)base + m + 1) * sizeof *off);
  uint32_t k = 0;
  for (uint32_t v = 0; v < base; v++) {
    off[v] = k;
    for (uint32_t e = s->off[v]; e < s->off[v + 1]; e++)
      if (s->adj[e] < base) adj[k++] = s->adj[e];
      else if (s->adj[e] != UINT32_MAX) adj[k++] = base + newid[s->adj[e] - base + 1] - 1;
  }
  uint32_t synthetic = k;
  for (uint32_t i = 0; i < m; i++) {
    uint32_t v = base + order[i] - 1;
    off[base + i] = k;
    for (uint32_t e = s->off[v]; e < s->off[v + 1]; e++)
      if (s->adj[e] != UINT32_MAX) adj[k++] = base + newid[s->adj[e] - base + 1] - 1;
  }
  off[base + m] = k;
  free(s->adj); free(s->off);
  s->adj = adj; s->off = off; s->nadj = k;
  /* The per-block arrays, copied in the new order. */
  uint8_t *tag = xmalloc(m ? m : 1);
  uint32_t *alloc = xmalloc((m ? m : 1) * sizeof *alloc);
  uint32_t *wosize = xmalloc((m ? m : 1) * sizeof *wosize);
  u64map big;
  u64map_init(&big, 16);
  for (uint32_t i = 0; i < m; i++) {
    uint32_t old = order[i];
    tag[i] = s->tag[old - 1];
    alloc[i] = s->alloc[old - 1];
    wosize[i] = s->wosize[old - 1];
    if (wosize[i] == HG_WOSIZE_BIG)
      u64map_put(&big, i + 1, *u64map_get(&s->big_wosize_of, old));
  }
  free(s->tag); free(s->alloc); free(s->wosize);
  s->tag = tag; s->alloc = alloc; s->wosize = wosize;
  u64map_free(&s->big_wosize_of);
  s->big_wosize_of = big;
  /* Custom blocks: the reached ones, renamed (the others stay in
     s->custom, unnamed). */
  u64map custom;
  u64map_init(&custom, 16);
  s->ext_total = 0;
  for (uint32_t i = 0; i < m; i++) {
    uint32_t *c = u64map_get(&s->custom_of, order[i]);
    if (!c) continue;
    s->ext_total += s->custom[*c].ext;
    u64map_put(&custom, i + 1, *c);
  }
  u64map_free(&s->custom_of);
  s->custom_of = custom;
  /* Weak targets of the reached blocks, renamed. */
  uint64_t w = 0;
  for (uint64_t i = 0; i < s->nweak; i++)
    if (newid[b->weak_src[i]] && s->weak_target[i])
      s->weak_target[w++] = newid[s->weak_target[i]];
  s->nweak = w;
  /* Roots to no block dropped (their edges were). */
  size_t nr = 0;
  s->nheld_roots = 0;
  for (size_t i = 0; i < s->nroots; i++)
    if (s->roots[i].target) {
      s->roots[nr] = s->roots[i];
      s->roots[nr].target = newid[s->roots[i].target];
      if (s->roots[nr].flags & MPT_ROOT_NONRETAINING) s->nheld_roots++;
      nr++;
    }
  s->nroots = nr;
  s->nedges_file = k - synthetic + w;
  s->nblocks = m;
  s->n = base + m;
  free(newid); free(order);
}

/* Mark in [seen] every node reachable from the root node 0 through the
   graph's edges, not entering nodes already marked; [stack] has room for
   every node. */
static void mark_reachable(const hg_snapshot *s, uint8_t *seen, uint32_t *stack)
{
  size_t sp = 0;
  stack[sp++] = 0;
  while (sp) {
    uint32_t v = stack[--sp];
    for (uint32_t e = s->off[v]; e < s->off[v + 1]; e++) {
      uint32_t t = s->adj[e];
      if (!seen[t]) { seen[t] = 1; stack[sp++] = t; }
    }
  }
}

/* See the comment at the top.  Edges are removed by compacting adj in
   place; reachability is a bitmap and a stack of nodes. */
static void held_by_profiler_only(hg_snapshot *s)
{
  uint32_t n = s->n, held = 1 + MPT_ROOT_MEMPROF;
  uint8_t *seen = xcalloc(n, 1);
  uint32_t *stack = xmalloc((size_t)n * sizeof *stack);
  seen[0] = seen[held] = 1;
  mark_reachable(s, seen, stack);
  /* seen: the retaining roots' closure, plus the memprof kind node.  The
     nodes outside it (the memprof label nodes, which only the memprof
     kind node points to, and the blocks they alone reach) keep only
     edges to nodes outside. */
  uint32_t w = 0, from = 0;
  for (uint32_t v = 0; v < n; v++) {
    int outside = !seen[v];
    uint32_t end = s->off[v + 1];
    s->off[v] = w;
    for (uint32_t e = from; e < end; e++) {
      uint32_t t = s->adj[e];
      if (!outside || !seen[t]) s->adj[w++] = t;
    }
    from = end;
  }
  s->off[n] = w;
  s->nadj = w;
  free(seen); free(stack);
}

/* Hang the blocks reachable only through weak references under the weak
   kind node (see heapgraph.h): its edges go to the weak targets that the
   strong graph does not reach, each once.  They are inserted in adj at
   the weak kind node's place (it has no label, so its range is empty),
   shifting the edges of the nodes after it.  Without weak edges there is
   nothing to hang (and no pass over the graph).  -1 if the edges would
   reach 2^32. */
static int weak_only_under_weak_kind(hg_snapshot *s)
{
  if (s->nweak == 0) return 0;
  uint32_t n = s->n, weak = 1 + HG_KIND_WEAK;
  uint8_t *seen = xcalloc(n, 1);
  uint32_t *stack = xmalloc((size_t)n * sizeof *stack);
  seen[0] = 1;
  mark_reachable(s, seen, stack);
  /* Reuse the stack for the targets: the unreached ones, each once. */
  uint32_t m = 0;
  for (uint64_t i = 0; i < s->nweak; i++) {
    uint32_t v = s->base + s->weak_target[i] - 1;
    if (!seen[v]) { seen[v] = 1; stack[m++] = v; }
  }
  int rc = 0;
  if (s->nadj + m > UINT32_MAX) rc = -1;
  else if (m) {
    uint32_t at = s->off[weak + 1];
    s->adj = xrealloc(s->adj, (s->nadj + m) * sizeof *s->adj);
    memmove(s->adj + at + m, s->adj + at, (s->nadj - at) * sizeof *s->adj);
    memcpy(s->adj + at, stack, m * sizeof *s->adj);
    for (uint32_t v = weak + 1; v <= n; v++) s->off[v] += m;
    s->nadj += m;
  }
  free(s->weak_target);
  s->weak_target = NULL;
  free(seen); free(stack);
  return rc;
}

int hg_next(hg_reader *r, hg_snapshot *s)
{
  memset(s, 0, sizeof *s);
  u64map_init(&s->custom_of, 16);
  u64map_init(&s->big_wosize_of, 16);
  builder b;
  memset(&b, 0, sizeof b);
  b.s = s;
  u64map_init(&b.label_of, 64);
  int open = 0, rc = 0;
  uint32_t cur = 0;                 /* current block id */
  mpt_event ev;
  int k;
  while ((k = ti_next(r->t, &ev)) == TI_OK) {
    if (ev.time_ns > r->end_ns) r->end_ns = ev.time_ns;
    switch (ev.kind) {
    case MPT_EV_ALLOC: on_alloc(r, &ev); break;
    case MPT_EV_SNAP_BEGIN:
      if (open) { rc = fail(r, "a snapshot starts inside another"); goto done; }
      open = 1;
      s->seq = ev.snap.seq; s->time_ns = ev.time_ns; s->anchor = ev.snap.anchor;
      s->ndomains = (uint32_t)ev.arg;
      s->walk_mode = -1;
      break;
    case MPT_EV_SNAP_ROOT: {
      if (!open) break;
      if (b.blocks_started) { rc = fail(r, "snapshot root after its first block"); goto done; }
      if (ev.snap.target > UINT32_MAX / 2) { rc = fail(r, too_many_blocks); goto done; }
      /* Synthetic edges: one per kind, label and root. */
      if (HG_KINDS + 2 * (uint64_t)s->nroots + 2 >= UINT32_MAX) { rc = fail(r, too_many_edges); goto done; }
      uint32_t str = strpool_intern(r->strs, ev.snap.label, strlen(ev.snap.label));
      uint64_t key = (uint64_t)ev.snap.root_kind << 32 | str;
      uint32_t *l = u64map_get(&b.label_of, key);
      uint32_t label;
      if (l) label = *l;
      else {
        grow_array((void **)&s->label_kind, &b.labels_cap, s->nlabels + 1, sizeof *s->label_kind);
        size_t cap2 = b.labels_cap;
        s->label_str = xrealloc(s->label_str, cap2 * sizeof *s->label_str);
        label = s->nlabels++;
        s->label_kind[label] = ev.snap.root_kind;
        s->label_str[label] = str;
        u64map_put(&b.label_of, key, label);
      }
      if (ev.snap.flags & MPT_ROOT_NONRETAINING) s->nheld_roots++;
      grow_array((void **)&s->roots, &b.roots_cap, s->nroots + 1, sizeof *s->roots);
      s->roots[s->nroots++] = (hg_root){ ev.snap.root_kind, ev.snap.flags, label,
                                         ev.snap.detail, ev.snap.target };
      /* (Explicit ids name more than the blocks written: see renumber.) */
      if (!b.explicit_ids && ev.snap.target > b.max_target) b.max_target = ev.snap.target;
      break;
    }
    case MPT_EV_SNAP_BLOCK: case MPT_EV_SNAP_EDGES: {
      if (!open) break;
      if (!b.blocks_started) start_blocks(&b);
      if (ev.kind == MPT_EV_SNAP_BLOCK) {
        if (ev.snap.block > UINT32_MAX / 2) { rc = fail(r, too_many_blocks); goto done; }
        if (b.explicit_ids) {         /* by its place, its id kept */
          cur = s->nblocks + 1;
          grow_array((void **)&b.sparse, &b.sparse_cap, cur, sizeof *b.sparse);
          b.sparse[cur - 1] = (uint32_t)ev.snap.block;
        } else {
          cur = (uint32_t)ev.snap.block;
        }
        fill_blocks(&b, cur);
        s->nblocks = cur;
        s->off[s->base + cur - 1] = (uint32_t)s->nadj;
        s->tag[cur - 1] = (uint8_t)ev.snap.tag;
        set_wosize(s, cur, ev.wosize);
        if (ev.snap.sample_id) {
          uint32_t *a = u64map_get(&r->alloc_ids, ev.snap.sample_id);
          if (a) s->alloc[cur - 1] = *a + 1;
        }
      }
      /* Strong edges, then the weak ones (counted, not graph edges). */
      uint64_t weak_from = ev.snap.weak_from;
      uint32_t nstrong = ev.snap.nedges;
      if (weak_from < ev.snap.edge_base + nstrong)
        nstrong = weak_from > ev.snap.edge_base
                  ? (uint32_t)(weak_from - ev.snap.edge_base) : 0;
      s->nedges_file += ev.snap.nedges;
      s->nweak += ev.snap.nedges - nstrong;
      if (s->nadj + nstrong > UINT32_MAX) { rc = fail(r, too_many_edges); goto done; }
      reserve_adj(&b, nstrong);
      uint32_t *out = s->adj + s->nadj;
      uint64_t max = b.max_target;
      for (uint32_t i = 0; i < nstrong; i++) {
        uint64_t t = ev.snap.edges[i];
        if (t > max) max = t;
        out[i] = s->base + (uint32_t)t - 1;
      }
      if (nstrong < ev.snap.nedges) {
        grow_array((void **)&s->weak_target, &s->weak_cap, s->nweak, sizeof *s->weak_target);
        if (b.explicit_ids)
          grow_array((void **)&b.weak_src, &b.weak_src_cap, s->nweak, sizeof *b.weak_src);
      }
      for (uint32_t i = nstrong; i < ev.snap.nedges; i++) {
        uint64_t t = ev.snap.edges[i];
        if (t > max) max = t;
        s->weak_target[s->nweak - ev.snap.nedges + i] = (uint32_t)t;
        if (b.explicit_ids) b.weak_src[s->nweak - ev.snap.nedges + i] = cur;
      }
      if (max > UINT32_MAX / 2) { rc = fail(r, too_many_blocks); goto done; }
      if (!b.explicit_ids) b.max_target = max;
      s->nadj += nstrong;
      break;
    }
    case MPT_EV_SNAP_CUSTOM:
      if (b.explicit_ids) ev.snap.block = s->nblocks;   /* the last block */
      if (!open || ev.snap.block == 0 || ev.snap.block > s->nblocks) break;
      if (u64map_get(&s->custom_of, ev.snap.block)) break;   /* first one counts */
      grow_array((void **)&s->custom, &s->custom_cap, s->ncustom + 1, sizeof *s->custom);
      s->custom[s->ncustom].ident = strpool_intern(r->strs, ev.snap.label, strlen(ev.snap.label));
      s->custom[s->ncustom].ext = ev.snap.ext_bytes;
      s->ext_total += ev.snap.ext_bytes;
      u64map_put(&s->custom_of, ev.snap.block, (uint32_t)s->ncustom++);
      break;
    case MPT_EV_SNAP_IDS:
      if (!open) break;
      if (ev.snap.id_limit > UINT32_MAX / 2) { rc = fail(r, too_many_blocks); goto done; }
      b.explicit_ids = 1;
      break;
    case MPT_EV_SNAP_WALK:
      if (!open) break;
      s->walk_mode = (int)ev.snap.walk_mode;
      s->walk_ns = ev.snap.walk_ns;
      s->walk_extra_bytes = ev.snap.extra_bytes;
      break;
    case MPT_EV_SNAP_END:
      if (!open) break;
      s->complete = 1;
      s->pause_ns = ev.snap.pause_ns;
      s->end_flags = ev.snap.flags;
      goto finish;
    default: break;
    }
  }
  if (k == TI_ERR) { rc = fail(r, ti_error(r->t)); goto done; }
  r->truncated = ti_truncated(r->t);
  if (!open) { rc = 0; goto done; }
 finish:
  if (!b.blocks_started) start_blocks(&b);
  /* Blocks named but never written (a snapshot cut short) are leaves. */
  {
    uint32_t nb = (uint32_t)(b.max_target > s->nblocks ? b.max_target : s->nblocks);
    fill_blocks(&b, nb);
    s->n = s->base + nb;
    s->off[s->n] = (uint32_t)s->nadj;
    s->nblocks = nb;
  }
  if (b.explicit_ids) renumber(&b);
  if (s->nheld_roots) held_by_profiler_only(s);
  if (weak_only_under_weak_kind(s) != 0) { rc = fail(r, too_many_edges); goto done; }
  rc = 1;
 done:
  u64map_free(&b.label_of);
  free(b.weak_src); free(b.sparse);
  if (rc != 1) hg_snapshot_free(s);
  return rc;
}

int hg_snapshot_overdue(const uint64_t *times_ns, size_t n, uint64_t end_ns, char *buf, size_t len)
{
  if (n < 2 || end_ns <= times_ns[n - 1]) return 0;
  uint64_t shortest = UINT64_MAX, longest = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t d = times_ns[i] - (i ? times_ns[i - 1] : 0);
    if (d < shortest) shortest = d;
    if (d > longest) longest = d;
  }
  uint64_t since = end_ns - times_ns[n - 1];
  if (shortest == 0 || (double)longest > 1.5 * (double)shortest || since <= longest) return 0;
  char every[64];
  if (longest - shortest < 5000000)   /* the same to the 10 ms printed */
    snprintf(every, sizeof every, "every %.2f s", shortest / 1e9);
  else
    snprintf(every, sizeof every, "every %.2f to %.2f s", shortest / 1e9, longest / 1e9);
  snprintf(buf, len, "no heap snapshot in the last %.2f s of the trace, though its %zu snapshots "
           "came %s: a periodic one looks overdue (inferred: the trace does not record "
           "memprof_snapshot_every_s or _every_cycles)", since / 1e9, n, every);
  return 1;
}
