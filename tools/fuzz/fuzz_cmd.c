/* fuzz_cmd.c: libFuzzer harness running one ocaml-memprof subcommand in
   process on the input, as `ocaml-memprof CMD [OPTIONS] FILE`.

   Built once per subcommand (FUZZ_CMD = its entry point, FUZZ_NAME = its
   name; see the Makefile's FUZZ_CMDS).  The input is written to a
   temporary file and the subcommand runs on it twice: with no options,
   then with one of the option sets below, chosen by the input's size so
   that mutations reach every set.  Outputs go to a temporary file or to
   /dev/null (stdout is redirected once at start-up).

   What counts as a bug: any sanitizer report, crash, hang or runaway
   allocation, an exit status other than 0 or 1 (a usage error, 2, means
   the option sets below are wrong), and any call to exit(), which
   libFuzzer reports as a "fuzz target exited". */

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "util.h"

#ifndef FUZZ_CMD
#error "build with -DFUZZ_CMD=cmd_xxx -DFUZZ_NAME=\"xxx\""
#endif

#define MAXARGS 24
/* Option sets; IN stands for the input file, IN2 for a copy of it (a
   trace named twice is refused: merging two traces takes two files), OUT
   for the output file.  Each set ends with NULL. */
#define IN "\001in"
#define IN2 "\001in2"
#define OUT "\001out"
#define DIR "\001dir"
typedef const char *optset[MAXARGS];

static const optset sets_info[] = {
  { IN, NULL },
  { "--json", IN, NULL },
  { IN, IN2, NULL },                          /* the process tree */
  { "--top", "3", DIR, NULL },
  { "--json", "--min-lifetime", "1us", "--ignore", "List", IN, NULL },
  { "--source", "minor", IN, IN2, NULL },
};
static const optset sets_top[] = {
  { IN, NULL },
  { "--json", "-n", "0", "--by", "location", IN, NULL },
  { "--csv", "--by", "module", "--sort", "live", "-o", OUT, IN, NULL },
  { "--callers", ".", "--sort", "promoted", IN, NULL },
  { "--callees", "^[A-Z]", "--sort", "samples", IN, NULL },
  { "--live-at", "peak", "--json", IN, NULL },
  { "--focus", ".", "--hide", "Stdlib", "--allocated", "0,1ms", "--source", "minor",
    "--min-size", "16", "--max-lifetime", "1s", IN, NULL },
  { "--domain", "1", "--live", "0,", "--collected", ",", "--ignore", "List", IN, NULL },
  { "--group", "exe", "--json", IN, IN2, NULL },  /* two traces merged */
  { "--exe", "x", DIR, NULL },
};
static const optset sets_leaks[] = {
  { IN, NULL },
  { "--json", "--window", "0,1ms", IN, NULL },
  { "--csv", "--by", "location", "-n", "0", "--min-score", "0", IN, NULL },
};
static const optset sets_timeline[] = {
  { "-o", OUT, IN, NULL },
  { "--csv", "--bins", "3", "-o", OUT, IN, NULL },
  { "--bins", "1000", "--source", "major", "-o", OUT, IN, NULL },
  { "--json", "--bins", "5", "-o", OUT, IN, NULL },
};
static const optset sets_flamegraph[] = {
  { "-o", OUT, IN, NULL },
  { "--value", "live", "--bins", "8", "-o", OUT, IN, NULL },
  { "--value", "samples", "--hide", ".", "-o", OUT, IN, NULL },
};
static const optset sets_report[] = {
  { "-o", OUT, IN, NULL },
  { "--bins", "4", "--min-lifetime", "1us", "-o", OUT, IN, NULL },
};
static const optset sets_diff[] = {
  { IN, IN, NULL },
  { "--json", "--sort", "live", "-n", "0", IN, IN, NULL },
  { "--csv", "--by", "location", "--focus", ".", IN, IN, NULL },
};
static const optset sets_pprof[] = {
  { "-o", OUT, IN, NULL },
  { "--focus", ".", "--live-at", "peak", "-o", OUT, IN, NULL },
};
static const optset sets_folded[] = {
  { IN, NULL },
  { DIR, IN, NULL },
  { "--value", "objects", "--lines", IN, NULL },
  { "--value", "live", "--live-at", "end", "--min-lifetime", "1us", IN, NULL },
};
static const optset sets_ctf[] = {
  { "-o", OUT, IN, NULL },
  { "--format-version", "3", "-o", OUT, IN, NULL },
  { "--min-size", "16", "--hide", "^Stdlib", "--live", "1us,", "-o", OUT, IN, NULL },
  { "--format-version", "3", "--focus", ".", "--collected", ",1s", "-o", OUT, IN, NULL },
};
static const optset sets_retainers[] = {
  { IN, NULL },
  { "--site", "a", "--paths", "3", "-n", "2", IN, NULL },
  { "--evolution", IN, NULL },
  { "--diff", IN, IN, NULL },
  { "--snapshot", "1", "--heapsnapshot", OUT, IN, NULL },
  { "--json", "--site", "a", "-n", "3", IN, NULL },
  { "--tree", "--nodes", "40", "--width", "3", "--depth", "5", IN, NULL },
};
static const optset sets_lwt[] = {
  { IN, NULL },
  { "--json", "-n", "0", "--hide", "^Stdlib", IN, NULL },
};

#define SETS(n) { #n, sets_##n, sizeof sets_##n / sizeof sets_##n[0] }
static const struct { const char *name; const optset *sets; size_t n; } all_sets[] = {
  SETS(info), SETS(top), SETS(leaks), SETS(timeline), SETS(flamegraph), SETS(report),
  SETS(diff), SETS(pprof), SETS(folded), SETS(ctf), SETS(retainers), SETS(lwt),
};

static char dir_path[64], in_path[80], in2_path[80], out_path[64];
static const optset *sets;
static size_t nsets;

static void cleanup(void)
{
  unlink(in_path);
  unlink(in2_path);
  unlink(out_path);
  rmdir(dir_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc; (void)argv;
  for (size_t i = 0; i < sizeof all_sets / sizeof all_sets[0]; i++)
    if (!strcmp(all_sets[i].name, FUZZ_NAME)) { sets = all_sets[i].sets; nsets = all_sets[i].n; }
  if (!sets) { fprintf(stderr, "fuzz_cmd: no option sets for %s\n", FUZZ_NAME); abort(); }
  /* The input sits alone in a directory of its own, for the DIR sets. */
  snprintf(dir_path, sizeof dir_path, "/tmp/fuzz-%s-%ld.d", FUZZ_NAME, (long)getpid());
  if (mkdir(dir_path, 0700) != 0 && errno != EEXIST) abort();
  snprintf(in_path, sizeof in_path, "%s/in.trace", dir_path);
  snprintf(in2_path, sizeof in2_path, "/tmp/fuzz-%s-%ld.in2.trace", FUZZ_NAME, (long)getpid());
  snprintf(out_path, sizeof out_path, "/tmp/fuzz-%s-%ld.out", FUZZ_NAME, (long)getpid());
  atexit(cleanup);
  msg_cmd = FUZZ_NAME;
  int null = open("/dev/null", O_WRONLY);
  if (null < 0 || dup2(null, 1) < 0) abort();
  close(null);
  return 0;
}

static void run_set(const optset set)
{
  char *argv[MAXARGS + 1];
  int argc = 0;
  argv[argc++] = (char *)FUZZ_NAME;
  for (int i = 0; set[i] && argc < MAXARGS; i++) {
    const char *a = set[i];
    if (!strcmp(a, IN)) a = in_path;
    else if (!strcmp(a, IN2)) a = in2_path;
    else if (!strcmp(a, OUT)) a = out_path;
    else if (!strcmp(a, DIR)) a = dir_path;
    argv[argc++] = (char *)a;
  }
  argv[argc] = NULL;
  int rc = FUZZ_CMD(argc, argv);
  fflush(stdout);
  if (rc != 0 && rc != 1) {
    fprintf(stderr, "fuzz_cmd: %s exited with status %d\n", FUZZ_NAME, rc);
    abort();
  }
}

static void write_input(const char *path, const uint8_t *data, size_t size)
{
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  if (fclose(f)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  write_input(in_path, data, size);
  write_input(in2_path, data, size);
  run_set(sets[0]);
  if (nsets > 1) run_set(sets[1 + size % (nsets - 1)]);
  return 0;
}
