/* main.c: `ocaml-memprof SUBCOMMAND ...` dispatcher.  The table below is
   the single list of subcommands, used both for dispatch and for the
   top-level help. */

#include <stdio.h>
#include <string.h>

#include "memprof_trace_codec.h"

#include "cli.h"
#include "commands.h"
#include "util.h"

typedef struct {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
} command;

static const command commands[] = {
  { "info", cmd_info, "header, event counts, estimated allocation volume" },
  { "top", cmd_top, "allocation sites ranked by bytes, samples, live, promoted" },
  { "ctf", cmd_ctf, "export as memtrace CTF v2 (memtrace_viewer)" },
  { "folded", cmd_folded, "folded stacks for flamegraph.pl, inferno, speedscope" },
  { "pprof", cmd_pprof, "gzip profile.proto for go tool pprof" },
  { "timeline", cmd_timeline, "live heap, allocation rate, GC heap size over time (SVG, CSV)" },
  { "leaks", cmd_leaks, "sites whose live volume grows steadily; survivors of a window" },
  { "lwt", cmd_lwt, "Lwt's promises by creation site: created, pending per heap snapshot" },
  { "retainers", cmd_retainers, "heap snapshots: what each root retains, retainer paths, .heapsnapshot" },
  { "flamegraph", cmd_flamegraph, "self-contained interactive HTML flame graph" },
  { "report", cmd_report, "one interactive HTML report: timeline, filters, sites, flame, call graph" },
  { "diff", cmd_diff, "sites whose allocation or live volume changed between A and B" },
  { NULL, NULL, NULL }
};

static void usage(FILE *o)
{
  fputs("usage: ocaml-memprof COMMAND [OPTIONS] TRACE...\n"
        "       ocaml-memprof --version\n"
        "Analyse memory traces of OCaml programs: 5.3.0+memprof traces\n"
        "(OCAMLRUNPARAM=memprof=PATH) and memtrace CTF files (versions 1-3).\n\n"
        "Commands:\n", o);
  for (const command *c = commands; c->name; c++)
    fprintf(o, "  %-11s %s\n", c->name, c->summary);
  fputs("\nA TRACE is a file, a directory of traces or a glob pattern; several\n"
        "are merged (select with --pid, --exe; `info` shows the processes).\n"
        "`ocaml-memprof COMMAND --help` describes a command and its options.\n"
        "Exit status: 0 success, 1 unreadable or malformed input, 2 usage error.\n", o);
}

int main(int argc, char **argv)
{
  if (argc < 2) { usage(stderr); return 2; }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
    printf("ocaml-memprof %s (reads 5.3.0+memprof traces version %d and memtrace CTF 1-3)\n",
           OCAML_MEMPROF_VERSION, MPT_FORMAT_VERSION);
    return 0;
  }
  for (const command *c = commands; c->name; c++)
    if (!strcmp(argv[1], c->name)) {
      msg_cmd = c->name;
      return c->run(argc - 1, argv + 1);
    }
  const char *names[sizeof commands / sizeof *commands];
  size_t n = 0, close[3], nclose;
  for (const command *c = commands; c->name; c++) names[n++] = c->name;
  nclose = cli_closest(argv[1], names, n, close, 3);
  fputs("ocaml-memprof: unknown command '", stderr);
  cli_put_safe(stderr, argv[1]);
  fputc('\'', stderr);
  for (size_t i = 0; i < nclose; i++)
    fprintf(stderr, "%s%s", i == 0 ? "; did you mean " : i + 1 < nclose ? ", " : " or ",
            names[close[i]]);
  fprintf(stderr, "%s (see 'ocaml-memprof --help')\n", nclose ? "?" : "");
  return 2;
}
