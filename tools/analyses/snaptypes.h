/* snaptypes.h: the OCaml types of a heap snapshot's blocks and the names
   of the fields that hold them (retainers --by type, typed retainer paths
   and dominator tree).

   What is typed to start with: the module globals.  A native snapshot's
   global roots name their module and the field of its global block; the
   helper ocaml-memprof-types (request "global", see
   tools/types/ocaml_memprof_types.ml) maps each field to the value it
   holds and its type from the module's .cmt and .cmi, and describes every
   type met from there: the block layouts it may have (tag, size, per
   field an edge name and a type), or string, float, array of T, closure...
   A sampled block that no typed field reaches gets the type of its
   allocation site (request "site", as top --by type types it).
   Types then flow down the edges of the snapshot's breadth-first tree
   (the one retainer paths follow, so that a path's steps are named by the
   fields that lead to them).  A snapshot omits a block's immediate and
   static fields, so its k-th edge is not its k-th field: the edges are
   matched to the fields that may hold a heap block, in order, each edge
   to a field whose type the target block fits (tag and size, and two
   levels of the target's own fields where that decides); an edge is
   named and typed when every such matching gives it the same field (or
   fields of the same type).  A block that fits no layout of its expected
   type, or whose edges no matching explains, is "unknown": never a wrong
   type.

   Data: per graph node a type (0: unknown), the name of the edge that
   reaches it (an interned string, an array index aside), 12 bytes;
   the types' layouts as flat arrays indexed by the helper's type ids. */

#ifndef OCAML_MEMPROF_SNAPTYPES_H
#define OCAML_MEMPROF_SNAPTYPES_H

#include <stddef.h>
#include <stdint.h>

#include "heapgraph.h"

typedef struct snap_types snap_types;

/* The types of snapshot [s] of [r], whose root label l is named
   [label_text][l] (globals by module name) and retains
   [label_retained][l] of the [live] bytes (the standard library's modules
   are typed only when they retain 1 % of them or more); [cmt_paths]:
   directories to search first.  NULL when no module of the program (outside the
   standard library) has its types: then one hint line on stderr says
   what was missing, and the caller keeps today's names. */
snap_types *st_resolve(const hg_reader *r, const hg_snapshot *s, char *const *label_text,
                       const uint64_t *label_retained, uint64_t live,
                       const char *const *cmt_paths, size_t ncmt_paths, int verbose);
/* The type of graph node [v] (0: unknown) and its text. */
uint32_t st_type(const snap_types *t, uint32_t v);
const char *st_type_text(const snap_types *t, uint32_t type);
uint32_t st_type_count(const snap_types *t);
/* The name of the edge that first reaches node [v] ("Leak.state",
   ".tbl", "::", ".(17)") into [buf]: array elements by index when it is
   known and [with_index], else ".(_)".  0 when [v] has no name. */
int st_name_text(const snap_types *t, uint32_t v, int with_index, char *buf, size_t n);
/* Does [v]'s name with its index differ from its name without (an
   array element whose index is known)? */
int st_name_indexed(const snap_types *t, uint32_t v);
/* Per graph node, 1 + the id of its (type, field name without index)
   pair, 0 for a node with neither: the dominator tree's groups
   (domtree.h).  The caller frees it. */
uint32_t *st_groups(const snap_types *t, uint32_t n);
/* Sizes by type: per type (0: unknown) its blocks, their own bytes, and
   its retained bytes: the sum of the retained sizes of its blocks that
   no block of the same type dominates (a list's first cell, not each
   cell again), so that a type's retained size is what would be freed if
   all its values were gone.  Sorted by retained size, largest first. */
typedef struct { uint32_t type; uint64_t count, self, retained; } st_type_row;
size_t st_by_type(const snap_types *t, const hg_snapshot *s, const uint32_t *idom,
                  const uint64_t *retained, st_type_row **rows);
/* One line on stderr naming the stale .cmt files, and with [verbose]
   one naming the modules without a usable .cmt, when there are some. */
void st_print_hints(const snap_types *t, int verbose);
void st_free(snap_types *t);

#endif
