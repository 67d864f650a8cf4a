/* cli.h: command-line conventions shared by the subcommands.

   Usage errors (unknown option, missing or bad option value) print one
   line naming the subcommand, the option and the value, and make the
   subcommand return 2; errors on the traces themselves return 1.

   Inputs: every subcommand takes several TRACE arguments, each a file, a
   directory (its trace files, sorted by name; other files are skipped) or
   a glob pattern (expanded here too, for quoted patterns).  --pid N and
   --exe NAME select processes by the pid or executable in the trace
   headers; --group exe (where a subcommand supports it) runs it once per
   executable. */

#ifndef OCAML_MEMPROF_CLI_H
#define OCAML_MEMPROF_CLI_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OCAML_MEMPROF_VERSION "5.3.0+memprof"

/* Messages name the subcommand being run: msg_cmd (util.h), set by the
   dispatcher. */

/* "ocaml-memprof CMD: <message> (see 'ocaml-memprof CMD --help')"; 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Unknown option [opt]: 2.  [usage] is the subcommand's help text and
   [filters] says whether it takes the filters (as print_usage): the
   options they document are the candidates of a "did you mean" hint. */
int cli_unknown_option(const char *opt, const char *usage, int filters);
/* Bad value [val] for [opt], [expected] says what is accepted: 2. */
int cli_bad_value(const char *opt, const char *val, const char *expected);
/* The value of option argv[*i] (advancing *i), or NULL after a "needs a
   value" usage error. */
const char *cli_value(int argc, char **argv, int *i);
/* "--bins N" at argv[*i], lo <= N <= hi, into [*bins]: 1 (consumed),
   0 (another option), -1 (usage error given). */
int cli_bins_option(long *bins, long lo, long hi, int argc, char **argv, int *i);
/* Compile the value [pat] of stack option [opt] (an_regex_compile): 0,
   or 2 after a one-line usage error saying why the regex is invalid. */
int cli_regex_option(regex_t *re, const char *opt, const char *pat);
/* "Did you mean": the indices of at most [max] of the [n] [cands] that
   [word] was probably meant to be, into [out], best first: the candidates
   it is a prefix of, else the nearest by edit distance (insertions,
   deletions, substitutions and swaps of adjacent characters), within a
   third of its length (leading dashes left out; a single letter gets no
   such guess).  Returns how many (0: nothing close). */
size_t cli_closest(const char *word, const char *const *cands, size_t n, size_t *out, size_t max);
/* Output [out] (an -o value; NULL or "-": stdout) would go to a
   terminal: 2 after a usage error saying that [what] is written with -o
   FILE, else 0.  For the HTML pages, a screenful of which helps nobody;
   stdout to a pipe or a file stays allowed. */
int cli_refuse_terminal(const char *out, const char *what);
/* Does [path] start like a trace (LZ4 frame, OCMPTRCE, CTF magic)? */
int cli_looks_like_trace(const char *path);
/* Are [a] and [b] existing paths to the same file (device and inode)? */
int cli_same_file(const char *a, const char *b);
/* Is [a] --help or -h? */
int cli_is_help(const char *a);

/* Print [s] (from a trace: untrusted) for a person: control characters
   and bytes that are not valid UTF-8 are shown as \xNN escapes. */
void cli_put_safe(FILE *o, const char *s);
/* The last component of a path: an executable's name as --exe and
   --group exe match it. */
const char *cli_base_name(const char *p);

/* Consume argv[*i] when it is a filter option ([f] non-NULL) or an input
   selection option (--group when [group_ok]): 1; -1 after printing a usage
   error; 0 when it is something else. */
int cli_option(void *filter, void *inputs, int group_ok, int argc, char **argv, int *i);

/* ---- inputs ---- */

typedef struct {
  char *path;
  uint64_t pid, ppid;
  char *exe;                    /* basename of the executable */
  int named;                    /* given as such, not found in a
                                   directory or by a glob pattern */
  int ok;                       /* header readable */
  int selected;                 /* by --pid / --exe */
} cli_trace;

typedef struct {
  const char *name;             /* executable, or NULL for "all" */
  const char **paths;
  size_t n;
} cli_group;

typedef struct cli_inputs {
  char **args;                  /* as given */
  size_t nargs, args_cap;
  int have_pid;
  uint64_t pid;
  const char *exe;
  int group_exe;
  int headers;                  /* read the headers even for one trace */
  const struct cli_inputs *known; /* or NULL: a previous resolution whose
                                  headers are reused for the same paths
                                  (top --follow resolves every refresh) */
  /* after cli_inputs_resolve: */
  cli_trace *traces;
  size_t ntraces;
  const char **paths;           /* the selected traces' paths */
  size_t npaths;
  cli_group *groups;
  size_t ngroups;
} cli_inputs;

extern const char cli_inputs_help[];
void cli_inputs_init(cli_inputs *in);
void cli_inputs_free(cli_inputs *in);
/* Consume argv[*i] when it is --pid, --exe or (with [group_ok]) --group:
   1; -1 after a usage error; 0 when it is something else. */
int cli_inputs_option(cli_inputs *in, int group_ok, int argc, char **argv, int *i);
void cli_inputs_add(cli_inputs *in, const char *arg);
/* Expand directories and globs, read the headers when there are several
   traces or a selection, apply --pid/--exe and form the groups.  Returns
   0, or the exit status after printing the error (2: no TRACE given; 1:
   nothing to read). */
int cli_inputs_resolve(cli_inputs *in);

/* After parsing ([*rc] -1: go on; otherwise the exit status, 0 for
   --help): resolve [in] and open its traces with filter [f] (analysis.h).
   Returns the context, or NULL with *rc the exit status after freeing [f]
   and [in]. */
struct an_ctx;
struct an_ctx *cli_open(int *rc, void *filter, cli_inputs *in);
/* an_run on a context from cli_open; on success print the hints (notes on
   empty results) and return 0; on failure close the context, free
   [filter] and [in] and return the exit status. */
int cli_run(struct an_ctx *c, const void *callbacks, void *filter, cli_inputs *in);

#endif
