/* commands.h: entry points of the subcommands (cmd_*.c), dispatched by
   main.c.  Each takes the subcommand's own argv (argv[0] = its name),
   handles --help itself and returns the process exit status. */

#ifndef OCAML_MEMPROF_COMMANDS_H
#define OCAML_MEMPROF_COMMANDS_H

#include <stddef.h>
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

/* The last heap snapshot of [trace] analysed as `retainers --json -n top
   --paths npaths` prints it (one JSON object), for the HTML report, with
   strings written by [str] (the report escapes more than JSON needs).
   0 when written, 2 when the trace has no snapshot (nothing written, no
   message), 1 after a message on stderr. */
typedef void (*json_writer)(FILE *o, const char *s);
int retainers_json(FILE *o, const char *trace, size_t top, size_t npaths, json_writer str);

#endif
