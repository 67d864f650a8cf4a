/* domtree.h: the dominator tree of a heap snapshot, aggregated and pruned
   to its heavy part, for people (retainers --tree) and the HTML report.

   The dominator tree of a snapshot (dominators.h over heapgraph.h's
   graph) has one node per block: far too many to show.  dt_build groups
   it: the super root, under it the root kinds (and the blocks that no
   single kind retains), under a kind its root labels, under any node the
   blocks it immediately dominates grouped by (tag, or type and field name
   when known, size class, allocation site when the block is sampled); a group's children are the groups of
   the blocks its members immediately dominate.  A group's retained size
   is the sum of its members' (so self + children = retained), its count
   the number of members.

   Pruning: groups are expanded heaviest first (best-first on retained
   size) until [max_nodes] would be passed; an expansion keeps the
   [width] heaviest child groups and puts the rest into one "others" row
   (count = their members, retained = their sum); no group deeper than
   [max_depth] is expanded.  So the result has at most max_nodes nodes,
   each expanded node's children sum exactly to its retained size minus
   its own bytes, and the work is at most one visit of every block.

   Memory: 4 bytes per graph node (children of the dominator tree in CSR
   form) plus the member lists of the groups waiting to be expanded. */

#ifndef OCAML_MEMPROF_DOMTREE_H
#define OCAML_MEMPROF_DOMTREE_H

#include <stdint.h>

#include "dominators.h"
#include "heapgraph.h"

enum { DT_ROOT, DT_KIND, DT_LABEL, DT_BLOCKS, DT_OTHERS };

typedef struct {
  int32_t parent;               /* index in dt_tree.v; -1 for the super root */
  uint32_t first, nkids;        /* children: v[first .. first + nkids) */
  int type;                     /* DT_* */
  uint32_t example;             /* a member graph node (kind, label, block);
                                   DT_OTHERS: the number of groups in it */
  unsigned tag, size_class;     /* DT_BLOCKS: bytes in [2^c, 2^(c+1)) */
  uint32_t alloc;               /* DT_BLOCKS: hg_alloc index + 1, or 0 */
  uint64_t retained, self, count;
  int more;                     /* dominates nodes not shown below it */
} dt_node;

typedef struct { dt_node *v; uint32_t n; } dt_tree;

/* The tree of [s] analysed by [dom] with per-node [retained] bytes;
   allocation sites read from [r]: per hg_alloc index, the location
   [site_loc] names (0: no site), or with site_loc NULL the innermost
   frame of the stack; [group] (or NULL), per graph node, a group that
   replaces the block's tag in its key when not 0 (its type and field
   name, snaptypes.h).  v[0] is the super root. */
void dt_build(const hg_reader *r, const hg_snapshot *s, const dom_tree *dom,
              const uint64_t *retained, const uint32_t *site_loc, const uint32_t *group,
              uint32_t max_nodes,
              uint32_t width, uint32_t max_depth, dt_tree *t);
void dt_free(dt_tree *t);

#endif
