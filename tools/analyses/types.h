/* types.h: the OCaml type of each allocation site (`top --by type`).

   The types come from the .cmt files of the traced program's build, read
   by the OCaml helper ocaml-memprof-types (tools/types/), run once per
   command with every distinct stack to resolve: the innermost frames of a
   sample's stack (TYPES_FRAMES of them, inlined frames counted), since a
   generic allocation ('a array in Array.make) takes its type from a
   caller.  Answers are cached per executable (size and modification time)
   and search path in $XDG_CACHE_HOME/ocaml-memprof/types-HASH.tsv (or
   ~/.cache/...), so that a second run on a trace of the same build does
   not read a .cmt again. */

#ifndef OCAML_MEMPROF_TYPES_H
#define OCAML_MEMPROF_TYPES_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "analysis.h"

#define TYPES_FRAMES 8

typedef struct types_map types_map;

/* The types of the allocations at call-tree nodes [nodes] of [c] (the
   nodes that have samples); [cmt_paths]: directories given with
   --cmt-path, searched first.  NULL after a one-line error (the helper
   missing or failing). */
types_map *types_resolve(an_ctx *c, const uint32_t *nodes, size_t nnodes,
                         const char *const *cmt_paths, size_t ncmt_paths);
/* The type of node [node]'s allocation as a string interned in the map
   (one pointer per distinct type), or "unknown (REASON)". */
const char *types_of_node(const types_map *m, uint32_t node);
/* One line on stderr each: the source files without a .cmt and the .cmt
   files that were stale or another compiler's, when there are some. */
void types_print_hints(const types_map *m);
void types_free(types_map *m);

/* The helper's requests of other kinds (snaptypes.h): the "dir" lines of
   the directories to search for the trace's executable [exe] into
   [input]; then the helper run on [input], each line of its answer given
   to [line].  0, or -1 after a one-line error ([quiet]: none when the
   helper is not installed). */
void types_write_dirs(FILE *input, const char *exe, const char *const *cmt_paths, size_t n);
int types_run_helper(FILE *input, void (*line)(void *arg, char *line), void *arg, int quiet);

#endif
