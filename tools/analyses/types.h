/* types.h: the OCaml type of each allocation site (`--by type` of top,
   leaks and timeline, the report's types, pprof's type label).

   The types come from the .cmt files of the traced program's build, read
   by the OCaml helper ocaml-memprof-types (tools/types/).  A site is
   named by the innermost frames of a sample's stack (TYPES_FRAMES of
   them, inlined frames counted), since a generic allocation ('a array in
   Array.make) takes its type from a caller.  A node's type is asked for
   when a command first needs it, even while the trace is being read (so
   that leaks and timeline sum per type as they go): it is looked up in
   the answers cached per executable (size and modification time),
   helper and search path in $XDG_CACHE_HOME/ocaml-memprof/types-HASH.tsv
   (or ~/.cache/...); only a stack the cache lacks starts the helper (once
   per command), which then answers stack by stack through a socket.  The
   cache is read once when the map is opened and the new answers are
   appended when it is closed, so that a second run on a trace of the same
   build starts no helper and reads no .cmt. */

#ifndef OCAML_MEMPROF_TYPES_H
#define OCAML_MEMPROF_TYPES_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "analysis.h"

#define TYPES_FRAMES 8

typedef struct types_map types_map;

/* The types of the nodes of [c] (a context open on the traces: its
   header names the executable and its OCaml version); [cmt_paths]:
   directories given with --cmt-path, searched first (they must outlive
   the map).  Reads the cache; starts nothing. */
types_map *types_open(an_ctx *c, const char *const *cmt_paths, size_t ncmt_paths);
/* The type of node [node]'s allocation as a string interned in the map
   (one pointer per distinct type, valid until types_free), or "unknown
   (REASON)".  Memoised per node. */
const char *types_of_node(types_map *m, uint32_t node);
/* Whether the helper could not be run or failed (said once on stderr):
   the command then exits with status 1. */
int types_failed(const types_map *m);
/* End the helper, when one was started, and append its answers to the
   cache.  0, or 1 when the helper failed (said on stderr). */
int types_close(types_map *m);
/* One line on stderr each: the source files without a .cmt, the .cmt
   files that were stale or another compiler's, a helper of another OCaml
   version than the trace's. */
void types_print_hints(const types_map *m);
void types_free(types_map *m);

/* The helper's requests of other kinds (snaptypes.h): the "dir" lines of
   the directories to search for the trace's executable [exe], and the
   "version" line of its OCaml [version] ("" or NULL: unknown), into
   [input]; then the helper run once on [input] (a file, read from its
   start; nothing cached), each line of its answer given to [line].  0,
   or -1 after a one-line error ([quiet]: none when the helper is not
   installed). */
void types_write_dirs(FILE *input, const char *exe, const char *version, const char *const *cmt_paths,
                      size_t n);
int types_run_helper(FILE *input, void (*line)(void *arg, char *line), void *arg, int quiet);

#endif
