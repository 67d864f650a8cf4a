/* commands.h: entry points of the subcommands (cmd_*.c), dispatched by
   main.c.  Each takes the subcommand's own argv (argv[0] = its name),
   handles --help itself and returns the process exit status. */

#ifndef OCAML_MEMPROF_COMMANDS_H
#define OCAML_MEMPROF_COMMANDS_H

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

#endif
