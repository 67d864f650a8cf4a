/* presets.c: built-in and user-defined presets of frames to hide, and the
   hint that suggests a scheduler's preset (presets.h). */

#include "presets.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "util.h"

/* Module names, as native and bytecode frames spell them: "Lwt.bind",
   "Lwt_io.read_line.loop.(fun)", "Stdlib__Hashtbl.add", or the file
   names of their sources ("src/unix/lwt_io.ml").  Lwt 5.x: Lwt and its
   Lwt_* modules (Lwt_unix, Lwt_io, Lwt_stream, Lwt_mvar, Lwt_switch,
   Lwt_sequence, Lwt_pool, Lwt_condition, Lwt_mutex, Lwt_engine,
   Lwt_main, Lwt_seq, Lwt_result, Lwt_list, Lwt_bytes, Lwt_preemptive,
   Lwt_process, Lwt_timeout, Lwt_react...).  Async: Async, Async_kernel,
   Async_unix and the like, with Core's Deferred and Ivar under them.
   Eio: Eio, Eio_main, Eio_linux, Eio_posix, Eio_unix.  The runtime's own
   frames: C functions (caml_*, when a trace has them) and frames without
   debug information, which the tools name <unknown>. */
static const struct { const char *name, *regex, *keep, *scheduler; } builtins[] = {
  { "lwt", "^Lwt(_[a-z0-9_]+)?(\\.|__|$)|(^|/)lwt(_[a-z0-9_]+)?\\.ml$", "^Lwt_main\\.run(\\.|$)", "Lwt" },
  { "async", "^Async(_[a-z0-9_]+)?(\\.|__|$)", NULL, "Async" },
  { "eio", "^Eio(_[a-z0-9_]+)?(\\.|__|$)", NULL, "Eio" },
  { "stdlib", "^(Stdlib|Camlinternal[A-Za-z]*|Std_exit)(\\.|__|$)", NULL, NULL },
  { "runtime", "^caml_|^<unknown>$", NULL, NULL },
};
#define NBUILTIN (sizeof builtins / sizeof builtins[0])

static void add(preset_table *t, const char *name, const char *regex, const char *keep,
                int builtin, const char *scheduler)
{
  for (size_t i = 0; i < t->n; i++)
    if (!strcmp(t->v[i].name, name)) {   /* the user's definition wins */
      free(t->v[i].regex);
      t->v[i].regex = xstrdup(regex);
      t->v[i].keep = keep;
      t->v[i].builtin = builtin;
      t->v[i].scheduler = scheduler;
      return;
    }
  grow_array((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v);
  t->v[t->n++] = (preset){ xstrdup(name), xstrdup(regex), keep, builtin, scheduler };
}

static const char *default_file(char *buf, size_t n)
{
  const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
  if (x && x[0] == '/') snprintf(buf, n, "%s/ocaml-memprof/presets", x);
  else if (h && h[0]) snprintf(buf, n, "%s/.config/ocaml-memprof/presets", h);
  else return NULL;
  return buf;
}

static char *trim(char *s)
{
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
  return s;
}

/* Lines "name = regex"; blank lines and lines starting with # are
   skipped.  Names are letters, digits, '-' and '_'. */
static int load_file(preset_table *t, FILE *f, const char *path, char *err, size_t errlen)
{
  char line[4096];
  for (unsigned no = 1; fgets(line, sizeof line, f); no++) {
    size_t len = strlen(line);
    if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
      snprintf(err, errlen, "%.300s:%u: line longer than %zu bytes", path, no, sizeof line - 2);
      return -1;
    }
    char *s = trim(line);
    if (!*s || *s == '#') continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      snprintf(err, errlen, "%.300s:%u: expected 'name = regex'", path, no);
      return -1;
    }
    *eq = 0;
    char *name = trim(s), *re = trim(eq + 1);
    int ok = *name != 0;
    for (char *p = name; *p; p++)
      if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_') ok = 0;
    if (!ok) {
      snprintf(err, errlen, "%.300s:%u: bad preset name '%.100s' (letters, digits, - and _)",
               path, no, name);
      return -1;
    }
    if (!*re) {
      snprintf(err, errlen, "%.300s:%u: preset '%.100s' has an empty regex", path, no, name);
      return -1;
    }
    regex_t r;
    int rc = regcomp(&r, re, REG_EXTENDED | REG_NOSUB);
    if (rc) {
      char m[128];
      regerror(rc, &r, m, sizeof m);
      snprintf(err, errlen, "%.300s:%u: bad regex for preset '%.100s': %s", path, no, name, m);
      return -1;
    }
    regfree(&r);
    add(t, name, re, NULL, 0, NULL);
  }
  return 0;
}

int presets_load(preset_table *t, const char *file, char *err, size_t errlen)
{
  memset(t, 0, sizeof *t);
  for (size_t i = 0; i < NBUILTIN; i++)
    add(t, builtins[i].name, builtins[i].regex, builtins[i].keep, 1, builtins[i].scheduler);
  char buf[1024];
  const char *path = file ? file : default_file(buf, sizeof buf);
  if (!path) return 0;
  FILE *f = fopen(path, "r");
  if (!f) {
    if (!file && errno == ENOENT) return 0;      /* no user presets */
    snprintf(err, errlen, "cannot read presets file %.300s: %s", path, strerror(errno));
    return -1;
  }
  int rc = load_file(t, f, path, err, errlen);
  fclose(f);
  return rc;
}

void presets_free(preset_table *t)
{
  for (size_t i = 0; i < t->n; i++) { free(t->v[i].name); free(t->v[i].regex); }
  free(t->v);
  memset(t, 0, sizeof *t);
}

const preset *presets_find(const preset_table *t, const char *name)
{
  for (size_t i = 0; i < t->n; i++) if (!strcmp(t->v[i].name, name)) return &t->v[i];
  return NULL;
}

void presets_names(const preset_table *t, char *buf, size_t n)
{
  size_t k = 0;
  buf[0] = 0;
  for (size_t i = 0; i < t->n && k < n; i++) {
    int w = snprintf(buf + k, n - k, "%s%s", i ? ", " : "", t->v[i].name);
    if (w < 0) break;
    k += (size_t)w;
  }
}

const char *presets_file_arg(int argc, char **argv)
{
  const char *file = NULL;
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--presets-file")) file = argv[++i];
  return file;
}

/* "Most of the top sites": at least half of the rows looked at, and at
   least 3, so that a table of two rows says nothing. */
#define HINT_MIN_ROWS 3

void presets_hint(an_ctx *c, const an_filter *f, const uint32_t *locs, size_t n)
{
  if (n < HINT_MIN_ROWS || f->nhide) return;
  for (size_t p = 0; p < NBUILTIN; p++) {
    if (!builtins[p].scheduler) continue;
    regex_t re;
    if (regcomp(&re, builtins[p].regex, REG_EXTENDED | REG_NOSUB)) continue;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += locs[i] && an_loc_matches(c, locs[i], &re);
    regfree(&re);
    if (2 * k >= n && k >= HINT_MIN_ROWS) {
      fprintf(stderr, "hint: %zu of the top %zu sites are in %s's code; try --preset %s\n",
              k, n, builtins[p].scheduler, builtins[p].name);
      return;
    }
  }
}

typedef struct { const char *key; uint32_t loc; double v; } ranked_site;

static int by_value(const void *x, const void *y)
{
  const ranked_site *a = x, *b = y;
  return a->v < b->v ? 1 : a->v > b->v ? -1 : strcmp(a->key, b->key);
}

void presets_hint_by_location(an_ctx *c, const an_filter *f, const double *value)
{
  if (f->nhide) return;
  uint32_t nloc = an_location_count(c);
  ranked_site *v = xmalloc(((size_t)nloc + 1) * sizeof *v);
  size_t n = 0;
  u64map idx;                   /* function key -> index in v */
  u64map_init(&idx, 256);
  for (uint32_t l = 1; l <= nloc; l++) {
    if (!(value[l] > 0)) continue;
    const char *key = an_loc_key(c, l, AN_BY_FUNCTION);
    uint32_t *k = u64map_get(&idx, (uint64_t)(uintptr_t)key);
    if (k) { v[*k].v += value[l]; continue; }
    u64map_put(&idx, (uint64_t)(uintptr_t)key, (uint32_t)n);
    v[n++] = (ranked_site){ key, l, value[l] };
  }
  if (n) qsort(v, n, sizeof *v, by_value);
  uint32_t locs[HINT_ROWS];
  size_t k = 0;
  for (; k < n && k < HINT_ROWS; k++) locs[k] = v[k].loc;
  presets_hint(c, f, locs, k);
  u64map_free(&idx);
  free(v);
}
