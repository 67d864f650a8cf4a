/* commands.h: entry points of the subcommands (cmd_*.c), dispatched by
   main.c.  Each takes the subcommand's own argv (argv[0] = its name),
   handles --help itself and returns the process exit status. */

#ifndef OCAML_MEMPROF_COMMANDS_H
#define OCAML_MEMPROF_COMMANDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int cmd_info(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_folded(int argc, char **argv);
int cmd_ctf(int argc, char **argv);
int cmd_pprof(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_retainers(int argc, char **argv);
int cmd_lwt(int argc, char **argv);

/* The heap snapshots of [trace] for the HTML report: one JSON object
   {"trace", "count", "evolution": {"kinds", "rows": [[seq, time_ns, live,
   retained per kind...]...]}, "list": [...]}, the list holding the last
   [max_snapshots] snapshots each as `retainers --json -n top --paths
   npaths --nodes tree_nodes --width tree_width --depth tree_depth` prints
   it; strings written by [str] (the report escapes more than JSON needs).
   0 when written, 2 when the trace has no snapshot (nothing written, no
   message), 1 after a message on stderr. */
typedef void (*json_writer)(FILE *o, const char *s);
typedef struct {
  size_t top, npaths, max_snapshots;
  uint32_t tree_nodes, tree_width, tree_depth;
  const struct an_filter *hide; /* its --hide patterns name the sites, or NULL */
  int stacks;                   /* add each snapshot's "stacks" (the page's
                                   own hidden frames regroup them) */
  /* Blocks named by OCaml type and field (as retainers does) in the
     snapshots that may be kept: the last max_snapshots of
     [snapshots_hint] (a count of the trace's snapshots, or more), with
     these --cmt-path directories. */
  int types;
  uint64_t snapshots_hint;
  const char *const *cmt_paths;
  size_t ncmt_paths;
} retainers_opts;
int retainers_json(FILE *o, const char *trace, const retainers_opts *opt, json_writer str);

/* The Lwt promises of [trace] for the report's Lwt view (cmd_lwt.c):
   one JSON object {"trace", "created": [[stack, samples, estimate,
   standard error]...] (only with [created]: when the report's own hidden
   frames left no constructor in its call tree), "snapshots":
   [{"seq", "time_ns", "pending", "callbacks", "pending_sampled", "rows":
   [[stack, samples, callback samples, callback samples squared]...]}...],
   "stacks": [[location, innermost first]...], "locs": [[[function, file,
   line]...]...]}: the stacks (their first 64 locations, none hidden) of
   the sampled blocks of pending promises (and of the promises created),
   which the page names by the first location its hidden frames and the
   lwt preset leave.  Return codes as retainers_json's (2: no snapshot,
   and [created] not asked). */
int lwt_report_json(FILE *o, const char *trace, int created, json_writer str);

#endif
