/* holders.c: the roots holding a set of blocks (see holders.h).

   The searches share per-node arrays stamped per search (mark: reaches a
   queried block, from the reverse search; visit: reached by the current
   root's forward search), so that a query costs the part of the graph it
   touches, not a clearing of n words.  A node's path shape from the
   current root is one entry of a tree of steps, interned by (previous
   step, text): extending a path is one hash look-up, and a run of
   identical steps stays one step (the node inherits its parent's shape,
   with that step's bit set in its run mask). */

#include <stdlib.h>
#include <string.h>

#include "holders.h"

static int is_root(const hg_snapshot *s, uint32_t v)
{
  return (v > HG_KINDS && v < s->base) || v == 1 + HG_KIND_WEAK;
}

void hd_init(hd_ctx *c, const hg_snapshot *s, const dom_tree *d)
{
  memset(c, 0, sizeof *c);
  c->s = s;
  c->d = d;
}

void hd_owners(hd_ctx *c)
{
  const hg_snapshot *s = c->s;
  const dom_tree *d = c->d;
  size_t n = s->n ? s->n : 1;
  c->owner = xcalloc(n, sizeof *c->owner);
  /* Preorder: a node comes after its dominators. */
  for (uint32_t i = 1; i < d->reached; i++) {
    uint32_t v = d->preorder[i], p = d->idom[v];
    if (v < s->base) c->owner[v] = v;
    else c->owner[v] = p < s->base ? p : c->owner[p];
  }
}

void hd_free(hd_ctx *c)
{
  free(c->owner); free(c->roff); free(c->radj);
  free(c->mark); free(c->visit); free(c->queue); free(c->shape); free(c->runs);
  memset(c, 0, sizeof *c);
}

static void build_reverse(hd_ctx *c)
{
  const hg_snapshot *s = c->s;
  size_t n = s->n ? s->n : 1;
  c->roff = xcalloc(n + 1, sizeof *c->roff);
  c->radj = xmalloc((s->nadj ? s->nadj : 1) * sizeof *c->radj);
  for (uint64_t e = 0; e < s->nadj; e++) c->roff[s->adj[e] + 1]++;
  for (uint32_t v = 0; v < s->n; v++) c->roff[v + 1] += c->roff[v];
  uint32_t *fill = xmalloc(n * sizeof *fill);
  memcpy(fill, c->roff, n * sizeof *fill);
  for (uint32_t v = 0; v < s->n; v++)
    for (uint32_t e = s->off[v]; e < s->off[v + 1]; e++) c->radj[fill[s->adj[e]]++] = v;
  free(fill);
  c->mark = xcalloc(n, sizeof *c->mark);
  c->visit = xcalloc(n, sizeof *c->visit);
  c->queue = xmalloc(n * sizeof *c->queue);
  c->shape = xmalloc(n * sizeof *c->shape);
  c->runs = xmalloc(n * sizeof *c->runs);
}

/* A new stamp; the arrays are cleared when the counter wraps. */
static uint32_t next_stamp(uint32_t *stamp, uint32_t *arr, uint32_t n)
{
  if (++*stamp == 0) {
    memset(arr, 0, (size_t)n * sizeof *arr);
    *stamp = 1;
  }
  return *stamp;
}

typedef struct {
  hd_ctx *c;
  hd_result *r;
  u64map step_of;               /* (prev + 1, text) -> step */
  u64map text_of;               /* namer's key -> text */
  const hd_namer *namer;
} shaper;

static uint32_t step(shaper *sh, uint32_t prev, uint32_t text)
{
  uint64_t key = (uint64_t)(prev + 1) << 32 | text;
  uint32_t *i = u64map_get(&sh->step_of, key);
  if (i) return *i;
  hd_result *r = sh->r;
  grow_array((void **)&r->steps, &r->steps_cap, r->nsteps + 1, sizeof *r->steps);
  r->steps[r->nsteps] = (hd_step){ prev, text, prev == UINT32_MAX ? 0 : r->steps[prev].depth + 1 };
  u64map_put(&sh->step_of, key, (uint32_t)r->nsteps);
  return (uint32_t)r->nsteps++;
}

uint32_t hd_text_id(strpool *texts, u64map *memo, uint64_t key,
                    void (*text)(void *u, uint32_t node, char *buf, size_t n),
                    void *u, uint32_t node, size_t max)
{
  uint32_t *known = key != HD_NO_KEY ? u64map_get(memo, key) : NULL;
  if (known) return *known;
  char buf[HD_TEXT_MAX];
  text(u, node, buf, max < sizeof buf ? max : sizeof buf);
  uint32_t id = strpool_intern(texts, buf, strlen(buf));
  if (key != HD_NO_KEY) u64map_put(memo, key, id);
  return id;
}

static uint32_t node_text_id(shaper *sh, uint32_t v)
{
  const hd_namer *nm = sh->namer;
  return hd_text_id(sh->r->texts, &sh->text_of,
                    nm->key ? nm->key(nm->u, v) : HD_NO_KEY, nm->text, nm->u,
                    v, HD_TEXT_MAX);
}

/* The path shape and run mask of node t reached from node v. */
static void extend(shaper *sh, uint32_t v, uint32_t t)
{
  hd_ctx *c = sh->c;
  uint32_t text = node_text_id(sh, t), last = c->shape[v];
  const hd_step *l = &sh->r->steps[last];
  c->runs[t] = c->runs[v];
  if (l->text == text) {
    c->shape[t] = last;
    c->runs[t] |= 1ull << (l->depth < 63 ? l->depth : 63);
  } else c->shape[t] = step(sh, last, text);
}

static int by_through(const void *x, const void *y)
{
  const hd_holder *a = x, *b = y;
  if (a->through != b->through) return a->through < b->through ? 1 : -1;
  return (a->root > b->root) - (a->root < b->root);
}

void hd_find(hd_ctx *c, const uint32_t *blocks, const double *weight, const uint32_t *class,
             size_t n, const hd_namer *namer, hd_result *r)
{
  const hg_snapshot *s = c->s;
  memset(r, 0, sizeof *r);
  r->texts = strpool_new();
  if (!c->owner) hd_owners(c);
  if (!c->roff) build_reverse(c);
  u64map want;                  /* node -> index in blocks */
  u64map_init(&want, n ? 2 * n : 16);
  double alone_total = 0;
  /* Reverse search from the blocks, stopping at roots. */
  uint32_t ms = next_stamp(&c->mark_stamp, c->mark, s->n);
  size_t qh = 0, qt = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t v = s->base + blocks[i] - 1;
    r->total += weight[i];
    if (is_root(s, c->owner[v])) alone_total += weight[i];
    if (!u64map_get(&want, v)) u64map_put(&want, v, (uint32_t)i);
    if (c->mark[v] != ms) { c->mark[v] = ms; c->queue[qt++] = v; }
  }
  r->shared = r->total - alone_total;
  uint32_t *roots = NULL;
  size_t nroots = 0, roots_cap = 0;
  while (qh < qt) {
    uint32_t v = c->queue[qh++];
    if (is_root(s, v)) {
      grow_array((void **)&roots, &roots_cap, nroots + 1, sizeof *roots);
      roots[nroots++] = v;
      continue;
    }
    for (uint64_t e = c->roff[v]; e < c->roff[v + 1]; e++) {
      uint32_t p = c->radj[e];
      if (p >= 1 + HG_KINDS || p == 1 + HG_KIND_WEAK) {   /* not the super root or a kind */
        if (c->mark[p] != ms) { c->mark[p] = ms; c->queue[qt++] = p; }
      }
    }
  }
  r->roots = nroots;
  r->examined = nroots < HD_MAX_ROOTS ? nroots : HD_MAX_ROOTS;
  /* One forward search per root, through the marked nodes only. */
  shaper sh = { c, r, { 0 }, { 0 }, namer };
  u64map_init(&sh.step_of, 256);
  u64map_init(&sh.text_of, 256);
  u64map group;                 /* shape << 32 | class -> holder (a shape
                                   starts at its root) */
  u64map_init(&group, 64);
  /* A root's search costs up to the part of the graph above the blocks,
     which may be most of the heap (an environment that every frame
     reaches): after HD_WORK_PASSES graphs' worth, the remaining roots are
     only counted. */
  uint64_t work = 0, budget = HD_WORK_PASSES * ((uint64_t)s->n + s->nadj);
  for (size_t k = 0; k < r->examined; k++) {
    uint32_t h = roots[k];
    if (work > budget) { r->examined = k; break; }
    uint32_t vs = next_stamp(&c->visit_stamp, c->visit, s->n);
    c->visit[h] = vs;
    c->shape[h] = step(&sh, UINT32_MAX, node_text_id(&sh, h));
    c->runs[h] = 0;
    qh = qt = 0;
    c->queue[qt++] = h;
    while (qh < qt) {
      uint32_t v = c->queue[qh++];
      uint32_t *i = u64map_get(&want, v);
      if (i) {
        uint64_t key = (uint64_t)c->shape[v] << 32 | class[*i];
        uint32_t *g = u64map_get(&group, key);
        if (!g) {
          grow_array((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v);
          r->v[r->n] = (hd_holder){ h, c->shape[v], class[*i], 0, 0, 0, 0 };
          u64map_put(&group, key, (uint32_t)r->n++);
          g = u64map_get(&group, key);
        }
        hd_holder *d = &r->v[*g];
        d->blocks++;
        d->repeated |= c->runs[v];
        d->through += weight[*i];
        if (c->owner[v] == h) d->alone += weight[*i];
      }
      work += 1 + (s->off[v + 1] - s->off[v]);
      for (uint64_t e = s->off[v]; e < s->off[v + 1]; e++) {
        uint32_t t = s->adj[e];
        if (c->mark[t] != ms || c->visit[t] == vs) continue;
        c->visit[t] = vs;
        extend(&sh, v, t);
        c->queue[qt++] = t;
      }
    }
  }
  if (r->n) qsort(r->v, r->n, sizeof *r->v, by_through);
  u64map_free(&group);
  u64map_free(&sh.step_of);
  u64map_free(&sh.text_of);
  u64map_free(&want);
  free(roots);
}

void hd_result_free(hd_result *r)
{
  free(r->v); free(r->steps);
  if (r->texts) strpool_free(r->texts);
  memset(r, 0, sizeof *r);
}

size_t hd_shape_steps(const hd_result *r, uint32_t shape, uint32_t *out, size_t max)
{
  size_t len = 0;
  for (uint32_t x = shape; x != UINT32_MAX; x = r->steps[x].prev) len++;
  size_t skip = len > max ? len - max : 0, i = len - skip;
  /* Fill from the end (the block); too long a path keeps its root end. */
  for (uint32_t x = shape; x != UINT32_MAX; x = r->steps[x].prev) {
    if (skip) { skip--; continue; }
    out[--i] = x;
  }
  return len > max ? max : len;
}
