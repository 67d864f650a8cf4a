/* report.h: output helpers shared by the subcommands.

   Tables are printed three ways: aligned text for people, CSV (RFC 4180
   quoting) and JSON (strings escaped per RFC 8259), chosen by the common
   --json / --csv flags.  Output goes to stdout or to the file named by -o,
   opened through out_open so every subcommand handles -o the same way.

   The option values several subcommands take (--by, -n) and the whole
   option set of the two stack exports (folded, flamegraph) are parsed
   here too, so they accept the same spellings and fail with the same
   messages. */

#ifndef OCAML_MEMPROF_REPORT_H
#define OCAML_MEMPROF_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "aggregate.h"
#include "cli.h"

typedef enum { OUT_TEXT, OUT_CSV, OUT_JSON } out_mode;

void json_str(FILE *o, const char *s);
void csv_str(FILE *o, const char *s);
/* Human-readable bytes: "1.23 MB" (decimal units, 3 significant digits):
   the one convention of the tool, its exports and the report's page
   (bytes() in tools/report/report.js prints the same string). */
const char *human_bytes(double b, char *buf, size_t n);
/* Open [path] for writing ("-" or NULL = stdout); NULL after printing a
   message on failure (the caller cleans up and returns 1). */
FILE *out_open(const char *path);
/* Close a file from out_open; reports a write error and returns 1. */
int out_close(FILE *f, const char *path);

/* Usage printing: each subcommand registers its text; `--help` prints it
   with the shared filter help when [filters] is set. */
void print_usage(FILE *o, const char *text, int filters);
/* --by: "function", "location" or "module".  Returns 0, or -1 (nothing
   printed) for anything else. */
int parse_keykind(const char *s, an_keykind *k);
/* -n: a row count, a decimal integer >= 0.  Returns 0, or
   -1 (nothing printed). */
int parse_count(const char *s, long *n);

/* The output options the table reports share: --json, --csv, --by, -n
   and -o, each accepted when its TABLE_* bit is in [which]; TABLE_TYPE:
   --by type (the OCaml type of the allocated value, types.h) and
   --cmt-path DIR (repeatable). */
typedef struct {
  out_mode mode;
  an_keykind by;
  long limit;
  const char *out;
  int by_type;
  const char *cmt_paths[AN_MAX_PATTERNS];
  size_t ncmt_paths;
} table_opts;
enum { TABLE_JSON = 1, TABLE_CSV = 2, TABLE_BY = 4, TABLE_N = 8, TABLE_O = 16, TABLE_TYPE = 32 };
/* Consume argv[*i] when it is one of those options: 1; 0 when it is not;
   -1 after a usage error. */
int table_option(table_opts *t, unsigned which, int argc, char **argv, int *i);

/* The option loop of a report: filters ([f]), trace selection ([in]),
   the [which] table options ([t]), --help (prints [usage]), then [own]
   for the command's own options (returns 1 when it consumed argv[*i], 0
   when it does not know it, -1 after a usage error), the rest being
   traces.  Returns -1 when the command goes on, else its exit status. */
int report_parse(int argc, char **argv, const char *usage, an_filter *f, cli_inputs *in,
                 table_opts *t, unsigned which,
                 int (*own)(void *u, int argc, char **argv, int *i), void *u);

/* --cmt-path without types: 2 after a usage error; else -1 (go on). */
int table_check_types(const table_opts *t);

/* --live-at: end, peak or a time.  0, or 2 after a usage error. */
int check_live_at(const char *v);

/* Options of the stack exports: filters, trace selection, --value,
   --live-at, --lines, -o and TRACE... */
typedef struct {
  const char *out, *live_arg;
  int lines;
  value_kind value;
} stack_opts;
/* Parse argv (usage text [usage]) into [o], [f] and [in] (initialised by
   the caller, and resolved here); --value objects is accepted only with
   [objects] set.  Returns -1 when the command goes on, otherwise its exit
   status after printing: 0 for --help, 2 for a usage error, 1 when no
   trace can be read. */
int stack_opts_parse(stack_opts *o, an_filter *f, cli_inputs *in, const char *usage,
                     int objects, int argc, char **argv);

#endif
