/* holders.h: every root that holds some of a set of blocks of a snapshot
   graph (heapgraph.h), by root and path shape, with its share.

   The shortest retainer path (from the super root) names one holder: a
   list held both by a module global and by a local of a running function
   shows only the stack frame, though the global keeps the list once the
   function returns.  Here every root label (and the weak kind node, for
   blocks reachable only through weak references) that reaches some of
   the blocks is a holder, in as many groups as the shapes of its paths
   and the classes of the blocks (the caller's: their allocation sites):
   a shape is the shortest path from that root to a block, as step texts
   (the caller's; a block's says what it is, not where it was allocated,
   or the sampled cells of a list would split it), a run of identical
   steps written once, so that the cells of a list of any length make one
   shape; a step is marked repeated when it stood for a run in some
   block's path of the group.

   Shares, for blocks weighted by the caller (estimated bytes):
     through  the weight of the blocks the group's root reaches with that
              shape; several roots reaching the same block each count it,
              so these overlap and may add up to more than the total;
     alone    of those, the blocks no other root reaches (the root
              dominates them): what clearing that root alone would free;
   and for the set, shared: the weight of the blocks several roots reach.
   The alone shares and shared add up to the total.

   Cost: a reverse breadth-first search from the blocks finds the roots
   that reach them (the reversed graph is built once per context, 4 bytes
   per edge); then one forward search per root, confined to the nodes that
   reach some block, for at most HD_MAX_ROOTS roots (the nearest first),
   and no more once the searches have done HD_WORK_PASSES times the work
   of a pass over the graph; the others are counted, and their alone
   shares are still exact.  So a query costs at most a few passes over the
   graph, usually the part above its blocks a few times. */

#ifndef OCAML_MEMPROF_HOLDERS_H
#define OCAML_MEMPROF_HOLDERS_H

#include <stdint.h>

#include "dominators.h"
#include "heapgraph.h"
#include "util.h"

#define HD_MAX_ROOTS 64
#define HD_WORK_PASSES 2

typedef struct {
  const hg_snapshot *s;
  const dom_tree *d;
  uint32_t *owner;              /* per node: the label node dominating it,
                                   else the kind node, else 0 (shared);
                                   built on first use */
  uint32_t *roff;               /* reversed graph, built on first use */
  uint32_t *radj;
  uint32_t *mark, *visit, *queue, *shape;   /* per node, for the searches */
  uint64_t *runs;               /* per node: bit k, step k of its shape
                                   stands for a run (steps past 63: bit 63) */
  uint32_t mark_stamp, visit_stamp;
} hd_ctx;

typedef struct {
  uint32_t root;                /* label node, or the weak kind node */
  uint32_t shape;               /* the path's last step, in hd_result */
  uint32_t class;               /* the caller's class of its blocks */
  uint64_t repeated;            /* bit k: step k is marked repeated */
  uint64_t blocks;
  double through, alone;
} hd_holder;

/* A shape step: the text of a node, a link to the previous step, its
   index in the shape (0: the root). */
typedef struct { uint32_t prev, text, depth; } hd_step;

typedef struct {
  hd_holder *v;
  size_t n, cap;
  hd_step *steps;               /* the shapes, as a tree of steps */
  size_t nsteps, steps_cap;
  strpool *texts;
  double total, shared;
  size_t roots, examined;       /* roots reaching some block; broken down */
} hd_result;

/* How the steps of paths are named: [text] writes a node's step text (a
   root label, the weak kind node or a block) into buf; [key], when not
   NULL, gives a key shared by nodes of the same text only, or HD_NO_KEY,
   so that a text is formatted once per key rather than once per node
   reached (most of a search's time on a big heap, in snprintf). */
#define HD_NO_KEY UINT64_MAX
typedef struct {
  void (*text)(void *u, uint32_t node, char *buf, size_t n);
  uint64_t (*key)(void *u, uint32_t node);
  void *u;
} hd_namer;

/* The id in [texts] of [node]'s step text, written by [text] in at most
   [max] <= HD_TEXT_MAX bytes, formatted once per [key] through [memo]
   (key -> id) and every time for HD_NO_KEY. */
#define HD_TEXT_MAX 1100
uint32_t hd_text_id(strpool *texts, u64map *memo, uint64_t key,
                    void (*text)(void *u, uint32_t node, char *buf, size_t n),
                    void *u, uint32_t node, size_t max);

void hd_init(hd_ctx *c, const hg_snapshot *s, const dom_tree *d);
void hd_free(hd_ctx *c);

void hd_owners(hd_ctx *c);

/* Is block [b] (1-based) reachable only through weak references?  Not
   when the weak kind node has no edge (no owners needed). */
static inline int hd_weak_only(hd_ctx *c, uint32_t b)
{
  const hg_snapshot *s = c->s;
  if (s->off[2 + HG_KIND_WEAK] == s->off[1 + HG_KIND_WEAK]) return 0;
  if (!c->owner) hd_owners(c);
  return c->owner[s->base + b - 1] == 1 + HG_KIND_WEAK;
}

/* The holders of blocks [blocks] (ids, 1-based) of weights [weight] and
   classes [class], largest share first, into *r (free with
   hd_result_free). */
void hd_find(hd_ctx *c, const uint32_t *blocks, const double *weight, const uint32_t *class,
             size_t n, const hd_namer *namer, hd_result *r);
void hd_result_free(hd_result *r);

/* The steps of [shape], root first, into [out] (at most [max]); how many. */
size_t hd_shape_steps(const hd_result *r, uint32_t shape, uint32_t *out, size_t max);

#endif
