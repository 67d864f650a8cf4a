/* cli.c: usage errors, safe printing of trace strings, and the expansion
   and selection of input traces (see cli.h). */

#include "cli.h"

#include <dirent.h>
#include <glob.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "trace_input.h"
#include "util.h"

static void prefix(void)
{
  fprintf(stderr, "ocaml-memprof%s%s: ", msg_cmd[0] ? " " : "", msg_cmd);
}

int cli_usage_error(const char *fmt, ...)
{
  va_list ap;
  prefix();
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see 'ocaml-memprof %s --help')\n", msg_cmd);
  return 2;
}

/* The options a help text documents: on its "usage:" line and on the
   lines that start with an option, every word that starts with "-" and a
   letter, up to a character that cannot be in an option's name. */
static void add_documented_options(const char *text, const char ***names, size_t *n, size_t *cap)
{
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n'), *p = line + strspn(line, " ");
    if (!end) end = line + strlen(line);
    if (*p == '-' || !strncmp(p, "usage:", 6))
      for (; p < end; p++) {
        int word_start = p == line || strchr(" [|,", p[-1]);
        const char *name = p + (p[1] == '-' ? 2 : 1);
        if (!word_start || *p != '-' || name >= end ||
            !((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z')))
          continue;
        size_t len = strspn(p, "-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
        if (p + len > end) len = (size_t)(end - p);
        char *copy = xmalloc(len + 1);
        memcpy(copy, p, len);
        copy[len] = '\0';
        grow_array((void **)names, cap, *n + 1, sizeof **names);
        (*names)[(*n)++] = copy;
        p += len - 1;
      }
    line = *end ? end + 1 : end;
  }
}

int cli_unknown_option(const char *opt, const char *usage, int filters)
{
  const char **names = NULL;
  size_t n = 0, cap = 0, close[3], nclose;
  add_documented_options(usage, &names, &n, &cap);
  add_documented_options(cli_inputs_help, &names, &n, &cap);
  if (filters) add_documented_options(an_filter_help, &names, &n, &cap);
  add_documented_options("  --help", &names, &n, &cap);
  /* Duplicates (an option on the usage line and on its own line) would be
     suggested twice. */
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    while (k < kept && strcmp(names[k], names[i])) k++;
    if (k < kept) free((char *)names[i]);
    else names[kept++] = names[i];
  }
  nclose = cli_closest(opt, names, kept, close, 3);
  prefix();
  fputs("unknown option '", stderr);
  cli_put_safe(stderr, opt);
  fputc('\'', stderr);
  for (size_t i = 0; i < nclose; i++)
    fprintf(stderr, "%s%s", i == 0 ? "; did you mean " : i + 1 < nclose ? ", " : " or ",
            names[close[i]]);
  fprintf(stderr, "%s (see 'ocaml-memprof %s --help')\n", nclose ? "?" : "", msg_cmd);
  for (size_t i = 0; i < kept; i++) free((char *)names[i]);
  free(names);
  return 2;
}

int cli_bad_value(const char *opt, const char *val, const char *expected)
{
  prefix();
  fputs("bad value '", stderr);
  cli_put_safe(stderr, val);
  fprintf(stderr, "' for %s: expected %s\n", opt, expected);
  return 2;
}

const char *cli_value(int argc, char **argv, int *i)
{
  if (*i + 1 >= argc) {
    cli_usage_error("option %s needs a value", argv[*i]);
    return NULL;
  }
  return argv[++*i];
}

int cli_bins_option(long *bins, long lo, long hi, int argc, char **argv, int *i)
{
  const char *o = argv[*i], *v;
  if (strcmp(o, "--bins")) return 0;
  if (!(v = cli_value(argc, argv, i))) return -1;
  char *e, expected[64];
  *bins = strtol(v, &e, 10);
  if (e == v || *e || *bins < lo || *bins > hi) {
    snprintf(expected, sizeof expected, "a number of bins from %ld to %ld", lo, hi);
    return cli_bad_value(o, v, expected), -1;
  }
  return 1;
}

int cli_regex_option(regex_t *re, const char *opt, const char *pat)
{
  char err[400];
  if (an_regex_compile(re, opt, pat, err, sizeof err) == 0) return 0;
  prefix();
  cli_put_safe(stderr, err);
  fputc('\n', stderr);
  return 2;
}

/* Optimal string alignment distance between [a] and [b] (each edit, a
   swap of adjacent characters included, costs 1): "tpo" is 1 from "top",
   as "--grup" from "--group". */
static size_t edit_distance(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b);
  size_t *rows = xmalloc(3 * (lb + 1) * sizeof *rows);
  size_t *before = rows, *prev = rows + lb + 1, *cur = rows + 2 * (lb + 1);
  for (size_t j = 0; j <= lb; j++) prev[j] = j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t d = prev[j - 1] + (a[i - 1] != b[j - 1]);
      if (prev[j] + 1 < d) d = prev[j] + 1;
      if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && before[j - 2] + 1 < d)
        d = before[j - 2] + 1;
      cur[j] = d;
    }
    size_t *t = before; before = prev; prev = cur; cur = t;
  }
  size_t d = prev[lb];
  free(rows);
  return d;
}

size_t cli_closest(const char *word, const char *const *cands, size_t n, size_t *out, size_t max)
{
  size_t len = strlen(word), found = 0;
  /* The dashes of an option say little about what was meant. */
  size_t core = len - strspn(word, "-");
  if (core == 0 || max == 0) return 0;
  for (size_t i = 0; i < n && found < max; i++)
    if (strlen(cands[i]) > len && !strncmp(cands[i], word, len)) out[found++] = i;
  /* One letter is one edit from every other letter: no guess. */
  if (found || core < 2) return found;
  size_t limit = core / 3 ? core / 3 : 1;
  size_t *dist = xmalloc((n ? n : 1) * sizeof *dist);
  for (size_t i = 0; i < n; i++) {
    size_t lc = strlen(cands[i]);
    dist[i] = (lc > len ? lc - len : len - lc) > limit ? SIZE_MAX : edit_distance(word, cands[i]);
  }
  for (size_t d = 1; d <= limit && !found; d++)
    for (size_t i = 0; i < n && found < max; i++)
      if (dist[i] == d) out[found++] = i;
  free(dist);
  return found;
}

int cli_refuse_terminal(const char *out, const char *what)
{
  if ((out && strcmp(out, "-")) || !isatty(STDOUT_FILENO)) return 0;
  return cli_usage_error("standard output is a terminal: write %s with -o FILE.html "
                         "(or redirect it to a file or a pipe)", what);
}

int cli_is_help(const char *a)
{
  return !strcmp(a, "--help") || !strcmp(a, "-h");
}

void cli_put_safe(FILE *o, const char *str)
{
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  while (*s) {
    int n = utf8_seq_len(s);
    if (n == 0 || *s < 0x20 || *s == 0x7F) {
      fprintf(o, "\\x%02x", *s);
      s++;
    } else {
      fwrite(s, 1, (size_t)n, o);
      s += n;
    }
  }
}

int cli_option(void *filter, void *inputs, int group_ok, int argc, char **argv, int *i)
{
  if (filter) {
    char err[400];
    int k = an_filter_option(filter, argc, argv, i, err, sizeof err);
    if (k < 0) {
      prefix();
      cli_put_safe(stderr, err);
      fputc('\n', stderr);
      return -1;
    }
    if (k) return 1;
  }
  return inputs ? cli_inputs_option(inputs, group_ok, argc, argv, i) : 0;
}

/* ---- inputs ---- */

const char cli_inputs_help[] =
  "Traces: each TRACE is a file, a directory (its trace files) or a glob\n"
  "pattern; several traces are merged (times from each one's start).\n"
  "  --pid N           only the trace(s) of process N\n"
  "  --exe NAME        only the traces of executable NAME (basename)\n";

void cli_inputs_init(cli_inputs *in)
{
  memset(in, 0, sizeof *in);
}

void cli_inputs_free(cli_inputs *in)
{
  for (size_t i = 0; i < in->ntraces; i++) {
    free(in->traces[i].path);
    free(in->traces[i].exe);
  }
  free(in->traces);
  free(in->paths);
  for (size_t g = 0; g < in->ngroups; g++) free(in->groups[g].paths);
  free(in->groups);
  free(in->args);
  memset(in, 0, sizeof *in);
}

int cli_inputs_option(cli_inputs *in, int group_ok, int argc, char **argv, int *i)
{
  const char *a = argv[*i], *v;
  if (!strcmp(a, "--pid")) {
    if (!(v = cli_value(argc, argv, i))) return -1;
    char *e;
    unsigned long long p = strtoull(v, &e, 10);
    if (e == v || *e || v[0] == '-') return cli_bad_value(a, v, "a process id"), -1;
    in->have_pid = 1;
    in->pid = p;
    return 1;
  }
  if (!strcmp(a, "--exe")) {
    if (!(v = cli_value(argc, argv, i))) return -1;
    in->exe = v;
    return 1;
  }
  if (group_ok && !strcmp(a, "--group")) {
    if (!(v = cli_value(argc, argv, i))) return -1;
    if (!strcmp(v, "exe")) in->group_exe = 1;
    else if (!strcmp(v, "none")) in->group_exe = 0;
    else return cli_bad_value(a, v, "exe or none"), -1;
    return 1;
  }
  return 0;
}

void cli_inputs_add(cli_inputs *in, const char *arg)
{
  grow_array((void **)&in->args, &in->args_cap, in->nargs + 1, sizeof *in->args);
  in->args[in->nargs++] = (char *)arg;
}

typedef struct {
  cli_trace *v;
  size_t n, cap;
} tlist;

static void push(tlist *l, const char *path)
{
  grow_array((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v);
  memset(&l->v[l->n], 0, sizeof l->v[l->n]);
  l->v[l->n++].path = xstrdup(path);
}

int cli_looks_like_trace(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  unsigned char m[8];
  size_t n = fread(m, 1, sizeof m, f);
  fclose(f);
  static const unsigned char lz4[4] = { 0x04, 0x22, 0x4D, 0x18 }, ctf[4] = { 0xC1, 0x1F, 0xFC, 0xC1 };
  return (n >= 4 && (!memcmp(m, lz4, 4) || !memcmp(m, ctf, 4))) ||
         (n == 8 && !memcmp(m, MPT_MAGIC, MPT_MAGIC_LEN));
}

int cli_same_file(const char *a, const char *b)
{
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The trace files of directory [dir], sorted; returns how many were
   skipped (not traces). */
static size_t expand_dir(tlist *l, const char *dir)
{
  DIR *d = opendir(dir);
  if (!d) return 0;
  char **names = NULL;
  size_t n = 0, cap = 0, skipped = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    size_t k = strlen(dir) + strlen(e->d_name) + 2;
    char *p = xmalloc(k);
    snprintf(p, k, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name);
    struct stat st;
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && cli_looks_like_trace(p)) {
      grow_array((void **)&names, &cap, n + 1, sizeof *names);
      names[n++] = p;
    } else {
      if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) skipped++;
      free(p);
    }
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) { push(l, names[i]); free(names[i]); }
  free(names);
  return skipped;
}

const char *cli_base_name(const char *p)
{
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* The readable trace of [known] at [path], searched from *from on (paths
   come in the same order from one resolution to the next). */
static const cli_trace *known_trace(const cli_inputs *known, const char *path, size_t *from)
{
  for (size_t n = 0; n < known->ntraces; n++) {
    size_t i = (*from + n) % known->ntraces;
    if (!strcmp(known->traces[i].path, path)) {
      *from = i + 1;
      return known->traces[i].ok ? &known->traces[i] : NULL;
    }
  }
  return NULL;
}

typedef struct { dev_t dev; ino_t ino; size_t index; } file_id;

static int cmp_file_id(const void *a, const void *b)
{
  const file_id *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* A file met twice among the traces would be merged with itself, every
   figure counted twice.  Named twice on the command line (the same path,
   or two paths to it): refused, since the command line does not say what
   was meant (a mistyped second trace is as likely as a repeated one) and
   a fixed-up run would hand a script figures of other inputs than it
   named.  Met again in a directory or through a glob (a "latest" symlink
   beside the trace it points to, a file given with its directory): the
   later one is skipped with a note, since listing a directory names no
   file twice.  Returns 2 after a usage error, else 0. */
static int drop_duplicates(cli_inputs *in)
{
  file_id *ids = xmalloc((in->ntraces ? in->ntraces : 1) * sizeof *ids);
  char *drop = xcalloc(in->ntraces ? in->ntraces : 1, 1);
  size_t n = 0;
  for (size_t i = 0; i < in->ntraces; i++) {
    struct stat st;
    if (stat(in->traces[i].path, &st) == 0 && S_ISREG(st.st_mode))
      ids[n++] = (file_id){ st.st_dev, st.st_ino, i };
  }
  if (n > 1) qsort(ids, n, sizeof *ids, cmp_file_id);
  /* A file named twice: in each run of ids of one file (in the order of
     the arguments), a named occurrence after a named one. */
  int rc = 0;
  size_t first = 0, named = SIZE_MAX;
  for (size_t k = 0; k < n && !rc; k++) {
    if (k && (ids[k].dev != ids[first].dev || ids[k].ino != ids[first].ino)) {
      first = k;
      named = SIZE_MAX;
    }
    if (!in->traces[ids[k].index].named) continue;
    if (named == SIZE_MAX) { named = k; continue; }
    const char *a = in->traces[ids[named].index].path, *b = in->traces[ids[k].index].path;
    prefix();
    cli_put_safe(stderr, a);
    if (strcmp(a, b)) { fputs(" and ", stderr); cli_put_safe(stderr, b); }
    fputs(strcmp(a, b) ? " are the same file" : " is given twice", stderr);
    fprintf(stderr, ": its figures would count twice; give it once "
            "(see 'ocaml-memprof %s --help')\n", msg_cmd);
    rc = 2;
  }
  /* No file named twice: drop every occurrence after the first. */
  for (size_t k = 1, run = 0; k < n && !rc; k++) {
    if (ids[k].dev != ids[run].dev || ids[k].ino != ids[run].ino) { run = k; continue; }
    const char *kept = in->traces[ids[run].index].path, *again = in->traces[ids[k].index].path;
    drop[ids[k].index] = 1;
    if (!strcmp(kept, again)) msg("note: %s is met twice among the traces: read once\n", kept);
    else msg("note: skipped %s, the same file as %s\n", again, kept);
  }
  size_t m = 0;
  for (size_t i = 0; i < in->ntraces; i++)
    if (drop[i]) free(in->traces[i].path);
    else in->traces[m++] = in->traces[i];
  in->ntraces = m;
  free(drop);
  free(ids);
  return rc;
}

int cli_inputs_resolve(cli_inputs *in)
{
  if (in->nargs == 0) return cli_usage_error("no TRACE given");
  tlist l = { NULL, 0, 0 };
  size_t skipped = 0;
  for (size_t i = 0; i < in->nargs; i++) {
    const char *a = in->args[i];
    struct stat st;
    if (stat(a, &st) == 0 && S_ISDIR(st.st_mode)) {
      size_t before = l.n;
      skipped += expand_dir(&l, a);
      if (l.n == before) {
        prefix();
        fputs("no trace files in directory ", stderr);
        cli_put_safe(stderr, a);
        fputc('\n', stderr);
        in->traces = l.v; in->ntraces = l.n;
        return 1;
      }
    } else if (stat(a, &st) != 0 && strpbrk(a, "*?[")) {
      glob_t g;
      if (glob(a, 0, NULL, &g) != 0 || g.gl_pathc == 0) {
        prefix();
        fputs("no file matches ", stderr);
        cli_put_safe(stderr, a);
        fputc('\n', stderr);
        in->traces = l.v; in->ntraces = l.n;
        return 1;
      }
      for (size_t k = 0; k < g.gl_pathc; k++) {
        if (stat(g.gl_pathv[k], &st) == 0 && S_ISDIR(st.st_mode)) skipped += expand_dir(&l, g.gl_pathv[k]);
        else push(&l, g.gl_pathv[k]);
      }
      globfree(&g);
    } else {
      push(&l, a);              /* errors are reported when it is read */
      l.v[l.n - 1].named = 1;
    }
  }
  in->traces = l.v;
  in->ntraces = l.n;
  /* top --follow resolves its arguments again at every refresh (with
     [known]): it is left alone, not to repeat the error forever. */
  if (!in->known && drop_duplicates(in)) return 2;
  if (skipped)
    msg("note: skipped %zu files that are not traces\n", skipped);
  /* Headers: needed to select or group, and to name processes. */
  int need = in->have_pid || in->exe || in->group_exe || in->headers || in->ntraces > 1;
  size_t from = 0;              /* in->known: where the last match was */
  for (size_t i = 0; need && i < in->ntraces; i++) {
    char err[512];
    cli_trace *t = &in->traces[i];
    const cli_trace *k = in->known ? known_trace(in->known, t->path, &from) : NULL;
    if (k) {
      t->ok = 1;
      t->pid = k->pid;
      t->ppid = k->ppid;
      t->exe = xstrdup(k->exe);
      continue;
    }
    ti_trace *tr = ti_open(t->path, err, sizeof err);
    if (!tr) { t->exe = xstrdup("?"); continue; }
    const ti_header *h = ti_get_header(tr);
    t->ok = 1;
    t->pid = h->pid;
    t->ppid = h->ppid;
    t->exe = xstrdup(cli_base_name(h->executable[0] ? h->executable : "?"));
    ti_close(tr);
  }
  in->paths = xcalloc(in->ntraces + 1, sizeof *in->paths);
  for (size_t i = 0; i < in->ntraces; i++) {
    cli_trace *t = &in->traces[i];
    if (in->have_pid && (!t->ok || t->pid != in->pid)) continue;
    if (in->exe && (!t->ok || (strcmp(t->exe, in->exe) && strcmp(t->exe, cli_base_name(in->exe)))))
      continue;
    t->selected = 1;
    in->paths[in->npaths++] = t->path;
  }
  if (in->npaths == 0) {
    prefix();
    fprintf(stderr, "no trace matches the selection (");
    if (in->have_pid) fprintf(stderr, "--pid %llu", (unsigned long long)in->pid);
    if (in->have_pid && in->exe) fputs(", ", stderr);
    if (in->exe) { fputs("--exe ", stderr); cli_put_safe(stderr, in->exe); }
    fprintf(stderr, "; `ocaml-memprof info` lists the processes)\n");
    return 1;
  }
  /* Groups: one per executable (in order of first appearance), or one. */
  if (!in->group_exe) {
    in->groups = xcalloc(1, sizeof *in->groups);
    in->groups[0].paths = xcalloc(in->npaths, sizeof(char *));
    memcpy(in->groups[0].paths, in->paths, in->npaths * sizeof(char *));
    in->groups[0].n = in->npaths;
    in->ngroups = 1;
    return 0;
  }
  for (size_t i = 0; i < in->ntraces; i++) {
    cli_trace *t = &in->traces[i];
    if (!t->selected) continue;
    size_t g = 0;
    while (g < in->ngroups && strcmp(in->groups[g].name, t->exe)) g++;
    if (g == in->ngroups) {
      in->groups = xrealloc(in->groups, (in->ngroups + 1) * sizeof *in->groups);
      in->groups[g] = (cli_group){ t->exe, xcalloc(in->npaths, sizeof(char *)), 0 };
      in->ngroups++;
    }
    in->groups[g].paths[in->groups[g].n++] = t->path;
  }
  return 0;
}

an_ctx *cli_open(int *rc, void *filter, cli_inputs *in)
{
  an_ctx *c = NULL;
  if (*rc < 0) {
    *rc = cli_inputs_resolve(in);
    if (*rc == 0 && !(c = an_open(in->paths, in->npaths, filter))) *rc = 1;
  }
  if (!c) {
    an_filter_free(filter);
    cli_inputs_free(in);
  }
  return c;
}

int cli_run(an_ctx *c, const void *callbacks, void *filter, cli_inputs *in)
{
  int rc = an_run(c, callbacks);
  if (rc) {
    an_close(c);
    an_filter_free(filter);
    cli_inputs_free(in);
    return rc;
  }
  an_print_hints(c);
  return 0;
}
