/* analysis.c: event stream -> call tree + completed, filtered samples.

   Data structures
   - Call tree: nodes (parent, loc, depth, flags) interned through a u64map
     keyed by (parent << 32 | loc).  A stack is turned into a node by
     walking from the outermost frame.  Consecutive allocations share most
     of their stack, so we keep the previous stack and the node reached
     after each of its frames: only the part below the common suffix
     (common outer frames) is looked up.  This keeps the per-allocation
     cost at one integer compare per shared frame.
   - Per-location cache: match flags for --hide/--focus/--ignore (computed
     once per location, on first use) and interned key strings.
   - Live table: livetab.h, block id -> a compact 20-byte record; a
     collection completes the sample and frees the record; samples still
     live at the end are completed with t_collect = AN_NEVER.
   Filters are evaluated on completed samples (see analysis.h).
   Traces are read one after the other (an_run), or, when followed while
   they are written (an_follow_*), each keeps its reader, location map,
   live table and latest time in a `followed` record, swapped into the
   context's fields while it is read; a refresh completes the samples
   still live provisionally, saving and restoring the statistics. */

#include "analysis.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "livetab.h"
#include "presets.h"
#include "snapdeath.h"
#include "util.h"

#define LF_DONE 1
#define LF_HIDE 2
#define LF_FOCUS 4
#define LF_IGNORE 8
#define LF_ABSORB 16   /* an_hide_class's AN_ABSORBED */
#define LF_KEPT 32     /* an_hide_class's AN_KEPT */

typedef struct {
  mpt_location l;
  mpt_loc_entry *e;
  const char *callback_name;   /* a callback frame's name (see
                                  drop_redundant_callbacks), else NULL */
} gloc;

/* A trace followed while it is written: what is kept between reads. */
typedef struct {
  char *path;
  ti_trace *t;                 /* NULL until its header could be read */
  uint32_t *lmap;
  size_t lmap_cap;
  livetab live;
  snapdeath snap;
  uint64_t end_time;
  int done;                    /* read to its end, or dropped */
  int visited;                 /* read in this refresh (an_follow_rest) */
  int change_noted;            /* its path's change said (note_file_change) */
} followed;

struct an_ctx {
  const char *const *paths;    /* the traces, read one after the other */
  size_t npaths, cur;
  ti_trace *t;                 /* the one being read (or the first) */
  const an_filter *f;
  const ti_header *h;          /* = &hdr */
  ti_header hdr;               /* the first trace's, strings interned */
  an_stats st;
  uint64_t traces_read, traces_truncated, traces_skipped, traces_ended;

  /* Locations of all traces, interned by content: global ids 1..nglocs;
     lmap maps the current trace's ids to them. */
  gloc *glocs;
  size_t nglocs, glocs_cap;
  strpool *lockeys;
  uint32_t *lmap;
  size_t lmap_cap;
  uint32_t *gstack;
  size_t gstack_cap;
  const mpt_location **gstack_locs;  /* a stack with callback frames */
  size_t gstack_locs_cap;
  double bytes_per_sample;     /* word_bytes / lambda, 0 without sampling */
  int have_header;             /* set_header done */

  an_node *nodes;
  size_t nnodes, nodes_cap;
  /* Children: a list per node (first child, next sibling), and for the
     few nodes with many children a map from (parent, loc). */
  struct { uint32_t first, next; } *links;
  u64map children;

  uint8_t *locflags;
  size_t locflags_cap;
  an_layer_cache layers;       /* for hiding and callback frames' holders */
  const char **keys[3];
  size_t keys_cap[3];
  strpool *strs;

  uint32_t *prev, *path;       /* previous stack and its nodes */
  size_t prev_len, prev_cap;

  livetab live;
  snapdeath snap;              /* samples the trace's heap snapshots prove dead */
  const char *cur_path;        /* the trace being read, for messages */
  uint64_t events_read;

  /* an_follow_open: every followed trace's reader and state, swapped into
     the fields above (t, lmap, live, st.end_time) while it is read. */
  followed *fl;
  size_t nfl, fl_cap;
  uint64_t bytes_done;         /* read from followed traces now closed */
};

/* ---------------- filters and option parsing ---------------- */

const char an_filter_help[] =
  "Filters (shared by all analyses; times are seconds from the trace start,\n"
  "or with a unit: 250ms, 10us, 2m; windows are A,B with either side optional):\n"
  "  --allocated A,B     blocks allocated in [A,B]\n"
  "  --live A,B          blocks live at some point of [A,B]\n"
  "  --collected A,B     blocks collected in [A,B] (so never live at the end)\n"
  "  --domain N          blocks allocated by domain/stream N (repeatable)\n"
  "  --source S          minor, major, external or marshal (repeatable)\n"
  "  --min-size B, --max-size B    block size in bytes (k, M, G decimal; Ki, Mi, Gi binary)\n"
  "  --min-lifetime T, --max-lifetime T   time from allocation to collection\n"
  "                      (or to the end of the trace for blocks still live)\n"
  "  --focus RE          keep samples with a frame matching RE (function or\n"
  "                      file name; POSIX extended regex; repeatable = any)\n"
  "  --ignore RE         drop samples with a frame matching RE\n"
  "  --hide RE           remove matching frames from stacks, with the library\n"
  "                      code they call (the allocation site becomes the\n"
  "                      innermost frame left)\n"
  "  --preset NAME[,NAME...]   hide the frames of a named preset (repeatable):\n"
  "                      lwt, async, eio (the schedulers' code), stdlib,\n"
  "                      runtime, or one defined in the presets file\n"
  "  --presets-file F    user presets, one 'name = regex' per line (default:\n"
  "                      $XDG_CONFIG_HOME/ocaml-memprof/presets, else\n"
  "                      ~/.config/ocaml-memprof/presets)\n";

void an_filter_init(an_filter *f)
{
  memset(f, 0, sizeof *f);
  f->max_size = UINT64_MAX;
  f->max_life = UINT64_MAX;
}

void an_filter_free(an_filter *f)
{
  for (int i = 0; i < f->nfocus; i++) regfree(&f->focus[i]);
  for (int i = 0; i < f->nignore; i++) regfree(&f->ignore[i]);
  for (int i = 0; i < f->nhide; i++) {
    regfree(&f->hide[i]);
    if (f->has_keep[i]) regfree(&f->keep[i]);
    f->has_keep[i] = 0;
  }
  f->nfocus = f->nignore = f->nhide = 0;
}

int parse_time(const char *s, uint64_t *ns)
{
  char *e;
  double v = strtod(s, &e);
  if (e == s || !(v >= 0) || !isfinite(v)) return -1;
  double mult = 1e9;
  if (*e == 0 || strcmp(e, "s") == 0) mult = 1e9;
  else if (strcmp(e, "ms") == 0) mult = 1e6;
  else if (strcmp(e, "us") == 0) mult = 1e3;
  else if (strcmp(e, "ns") == 0) mult = 1;
  else if (strcmp(e, "m") == 0 || strcmp(e, "min") == 0) mult = 60e9;
  else return -1;
  double r = v * mult;
  if (r >= 1.8e19) return -1;
  *ns = (uint64_t)llround(r);
  return 0;
}

int parse_window(const char *s, an_window *w)
{
  const char *comma = strchr(s, ',');
  if (!comma) return -1;
  char lo[64], hi[64];
  size_t n = (size_t)(comma - s);
  if (n >= sizeof lo || strlen(comma + 1) >= sizeof hi) return -1;
  memcpy(lo, s, n);
  lo[n] = 0;
  strcpy(hi, comma + 1);
  w->lo = 0;
  w->hi = UINT64_MAX;
  if (lo[0] && parse_time(lo, &w->lo) < 0) return -1;
  if (hi[0] && parse_time(hi, &w->hi) < 0) return -1;
  if (w->lo > w->hi) return -1;
  w->on = 1;
  return 0;
}

int parse_size(const char *s, uint64_t *bytes)
{
  char *e;
  double v = strtod(s, &e);
  if (e == s || !(v >= 0)) return -1;
  /* k, M, G are decimal, as the sizes the tool prints (1 MB = 10^6 B);
     Ki, Mi, Gi binary (1 MiB = 2^20 B) */
  double m = 1;
  if (*e == 'k' || *e == 'K') m = 1e3, e++;
  else if (*e == 'M') m = 1e6, e++;
  else if (*e == 'G') m = 1e9, e++;
  if (m > 1 && *e == 'i') m = m == 1e3 ? 1024.0 : m == 1e6 ? 1024.0 * 1024 : 1024.0 * 1024 * 1024, e++;
  if (*e == 'B') e++;
  if (*e) return -1;
  if (v * m >= 1.8e19) return -1;
  *bytes = (uint64_t)(v * m);
  return 0;
}

int an_regex_compile(regex_t *re, const char *opt, const char *pat, char *err, size_t errlen)
{
  int rc = regcomp(re, pat, REG_EXTENDED | REG_NOSUB);
  if (rc) {
    char why[128];
    regerror(rc, re, why, sizeof why);
    snprintf(err, errlen, "bad value '%.200s' for %s: %s", pat, opt, why);
    return -1;
  }
  return 0;
}

static int add_regex(regex_t *arr, int *n, const char *opt, const char *pat,
                     char *err, size_t errlen)
{
  if (*n >= AN_MAX_PATTERNS) {
    snprintf(err, errlen, "too many %s patterns (at most %d)", opt, AN_MAX_PATTERNS);
    return -1;
  }
  if (an_regex_compile(&arr[*n], opt, pat, err, errlen) < 0) return -1;
  (*n)++;
  return 0;
}

/* --preset NAME[,NAME...]: each preset's regex becomes a --hide pattern.
   The presets file is the one --presets-file names anywhere on the
   command line, so that the two options may come in any order. */
static int add_presets(an_filter *f, int argc, char **argv, const char *names,
                       char *err, size_t errlen)
{
  preset_table t;
  if (presets_load(&t, presets_file_arg(argc, argv), err, errlen) < 0) {
    presets_free(&t);
    return -1;
  }
  char *list = xstrdup(names);
  int rc = 0, count = 0;
  for (char *save, *n = strtok_r(list, ",", &save); n && !rc; n = strtok_r(NULL, ",", &save)) {
    const preset *p = presets_find(&t, n);
    count++;
    if (!p) {
      char known[512];
      presets_names(&t, known, sizeof known);
      snprintf(err, errlen, "unknown preset '%.100s' for --preset: known presets are %s", n, known);
      rc = -1;
    } else if (add_regex(f->hide, &f->nhide, "--preset", p->regex, err, errlen) < 0) rc = -1;
    else if (p->keep) {
      if (an_regex_compile(&f->keep[f->nhide - 1], "--preset", p->keep, err, errlen) < 0) rc = -1;
      else f->has_keep[f->nhide - 1] = 1;
    }
  }
  if (!rc && !count) {
    snprintf(err, errlen, "bad value '%.200s' for --preset: expected preset names", names);
    rc = -1;
  }
  free(list);
  presets_free(&t);
  return rc;
}

int an_filter_option(an_filter *f, int argc, char **argv, int *i, char *err, size_t errlen)
{
  const char *o = argv[*i];
  if (!strcmp(o, "--preset") || !strcmp(o, "--presets-file")) {
    if (*i + 1 >= argc) {
      snprintf(err, errlen, "option %s needs a value", o);
      return -1;
    }
    const char *a = argv[++*i];
    f->presets_file = presets_file_arg(argc, argv);
    if (!strcmp(o, "--preset")) return add_presets(f, argc, argv, a, err, errlen) < 0 ? -1 : 1;
    /* Read now, so that a bad file is reported even without --preset. */
    preset_table t;
    int rc = presets_load(&t, a, err, errlen);
    presets_free(&t);
    return rc < 0 ? -1 : 1;
  }
  static const struct { const char *name, *expected; } opts[] = {
    { "--allocated", "a time window A,B (1s,2s; 250ms,; ,3m)" },
    { "--live", "a time window A,B (1s,2s; 250ms,; ,3m)" },
    { "--collected", "a time window A,B (1s,2s; 250ms,; ,3m)" },
    { "--domain", "a domain number" },
    { "--source", "minor, major, external or marshal" },
    { "--min-size", "a size in bytes (64, 4k, 1M, 2G)" },
    { "--max-size", "a size in bytes (64, 4k, 1M, 2G)" },
    { "--min-lifetime", "a duration (1.5, 300ms, 20us, 2m)" },
    { "--max-lifetime", "a duration (1.5, 300ms, 20us, 2m)" },
    { "--focus", "" }, { "--ignore", "" }, { "--hide", "" }, { NULL, NULL } };
  int known = -1;
  for (int k = 0; opts[k].name; k++) if (strcmp(o, opts[k].name) == 0) known = k;
  if (known < 0) return 0;
  if (*i + 1 >= argc) {
    snprintf(err, errlen, "option %s needs a value", o);
    return -1;
  }
  const char *a = argv[++*i];
  int bad = 0;
  if (!strcmp(o, "--allocated")) bad = parse_window(a, &f->alloc);
  else if (!strcmp(o, "--live")) bad = parse_window(a, &f->live);
  else if (!strcmp(o, "--collected")) bad = parse_window(a, &f->collected);
  else if (!strcmp(o, "--domain")) {
    char *e;
    unsigned long d = strtoul(a, &e, 10);
    if (*e || e == a || a[0] == '-' || d > UINT32_MAX) bad = -1;
    else if (f->ndomains >= AN_MAX_DOMAINS) {
      snprintf(err, errlen, "too many --domain options (at most %d)", AN_MAX_DOMAINS);
      return -1;
    } else f->domains[f->ndomains++] = (uint32_t)d;
  } else if (!strcmp(o, "--source")) {
    static const char *const names[] = { "minor", "major", "external", "marshal" };
    bad = -1;
    for (int s = 0; s < MPT_SRC_COUNT; s++)
      if (!strcmp(a, names[s])) { f->sources |= 1u << s; bad = 0; }
  } else if (!strcmp(o, "--min-size")) bad = parse_size(a, &f->min_size);
  else if (!strcmp(o, "--max-size")) bad = parse_size(a, &f->max_size);
  else if (!strcmp(o, "--min-lifetime")) bad = parse_time(a, &f->min_life);
  else if (!strcmp(o, "--max-lifetime")) bad = parse_time(a, &f->max_life);
  else if (!strcmp(o, "--focus")) return add_regex(f->focus, &f->nfocus, o, a, err, errlen) < 0 ? -1 : 1;
  else if (!strcmp(o, "--ignore")) return add_regex(f->ignore, &f->nignore, o, a, err, errlen) < 0 ? -1 : 1;
  else if (!strcmp(o, "--hide")) return add_regex(f->hide, &f->nhide, o, a, err, errlen) < 0 ? -1 : 1;
  if (bad) {
    snprintf(err, errlen, "bad value '%.200s' for %s: expected %s", a, o, opts[known].expected);
    return -1;
  }
  return 1;
}

/* ---------------- context ---------------- */

/* Strings from traces are interned once, with control characters and
   bytes that are not UTF-8 (corrupt or hostile input) replaced by \xNN
   escapes, so no report, terminal or JSON consumer sees raw input bytes. */
static const char *intern(an_ctx *c, const char *s)
{
  if (!s) s = "";
  size_t n = strlen(s), bad = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    int k = utf8_seq_len(p);
    if (k == 0 || *p < 0x20 || *p == 0x7F) { bad++; p++; } else p += k;
  }
  if (!bad) return strpool_get(c->strs, strpool_intern(c->strs, s, n));
  char *e = xmalloc(n + 3 * bad + 1), *q = e;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    int k = utf8_seq_len(p);
    if (k == 0 || *p < 0x20 || *p == 0x7F) { q += sprintf(q, "\\x%02x", *p); p++; }
    else { memcpy(q, p, (size_t)k); q += k; p += k; }
  }
  const char *r = strpool_get(c->strs, strpool_intern(c->strs, e, (size_t)(q - e)));
  free(e);
  return r;
}

static an_ctx *ctx_new(const an_filter *f);
static void set_header(an_ctx *c, ti_trace *t);

an_ctx *an_open(const char *const *paths, size_t npaths, const an_filter *f)
{
  char err[512];
  if (npaths == 0) {
    msg("no trace to read\n");
    return NULL;
  }
  ti_trace *t = ti_open(paths[0], err, sizeof err);
  if (!t) {
    msg("%s\n", err);
    return NULL;
  }
  an_ctx *c = ctx_new(f);
  c->paths = paths;
  c->npaths = npaths;
  c->cur_path = paths[0];
  set_header(c, t);
  return c;
}

static an_ctx *ctx_new(const an_filter *f)
{
  an_ctx *c = xcalloc(1, sizeof *c);
  c->f = f;
  c->layers.f = f;
  c->strs = strpool_new();
  c->lockeys = strpool_new();
  c->h = &c->hdr;
  c->nodes_cap = 1024;
  c->nodes = xmalloc(c->nodes_cap * sizeof *c->nodes);
  c->links = xcalloc(c->nodes_cap, sizeof *c->links);
  c->nodes[0] = (an_node){ 0, 0, 0, 0 };
  c->nnodes = 1;
  u64map_init(&c->children, 16);
  livetab_init(&c->live);
  sd_init(&c->snap);
  return c;
}

/* The first trace [t] becomes current and gives the header. */
static void set_header(an_ctx *c, ti_trace *t)
{
  c->t = t;
  c->hdr = *ti_get_header(t);
  c->hdr.executable = intern(c, c->hdr.executable);
  c->hdr.hostname = intern(c, c->hdr.hostname);
  c->hdr.ocaml_version = intern(c, c->hdr.ocaml_version);
  c->hdr.command_line = intern(c, c->hdr.command_line);
  c->hdr.runtime_params = intern(c, c->hdr.runtime_params);
  c->hdr.context = intern(c, c->hdr.context);
  c->bytes_per_sample = an_per_rate(c, c->h->word_bytes);
  c->have_header = 1;
}

void an_close(an_ctx *c)
{
  if (!c) return;
  ti_close(c->t);
  free(c->nodes);
  free(c->links);
  u64map_free(&c->children);
  livetab_free(&c->live);
  sd_free(&c->snap);
  free(c->locflags);
  an_layer_cache_free(&c->layers);
  for (int k = 0; k < 3; k++) free(c->keys[k]);
  for (size_t i = 0; i < c->nglocs; i++) free(c->glocs[i].e);
  free(c->glocs);
  free(c->lmap);
  free(c->gstack);
  free(c->gstack_locs);
  strpool_free(c->lockeys);
  strpool_free(c->strs);
  free(c->prev);
  free(c->path);
  for (size_t i = 0; i < c->nfl; i++) {
    followed *t = &c->fl[i];
    ti_close(t->t);
    free(t->lmap);
    livetab_free(&t->live);
    sd_free(&t->snap);
    free(t->path);
  }
  free(c->fl);
  free(c);
}

const ti_header *an_header(const an_ctx *c) { return c->h; }
const an_stats *an_get_stats(const an_ctx *c) { return &c->st; }
ti_trace *an_trace(an_ctx *c) { return c->t; }
int an_truncated(const an_ctx *c) { return c->traces_truncated > 0; }
uint64_t an_traces_read(const an_ctx *c) { return c->traces_read; }
uint64_t an_traces_ended(const an_ctx *c) { return c->traces_ended; }
int an_quiet_truncation;
uint32_t an_node_count(const an_ctx *c) { return (uint32_t)c->nnodes; }
const an_node *an_nodes(const an_ctx *c) { return c->nodes; }
uint32_t an_location_count(const an_ctx *c) { return (uint32_t)c->nglocs; }
const mpt_location *an_location(const an_ctx *c, uint32_t loc)
{ return loc >= 1 && loc <= c->nglocs ? &c->glocs[loc - 1].l : NULL; }

/* Global id of the current trace's location [loc]: locations with the same
   entries (function, file, line, characters) are one location, whichever
   trace they come from; one without entries is known by its address. */
static uint32_t global_loc(an_ctx *c, uint32_t loc)
{
  if (loc < c->lmap_cap && c->lmap[loc]) return c->lmap[loc];
  if (loc >= c->lmap_cap) {
    size_t old = c->lmap_cap;
    grow_array((void **)&c->lmap, &c->lmap_cap, (size_t)loc + 1, sizeof *c->lmap);
    memset(c->lmap + old, 0, (c->lmap_cap - old) * sizeof *c->lmap);
  }
  const mpt_location *l = ti_location(c->t, loc);
  uint32_t n = l ? l->n : 0;
  char *key = NULL;
  size_t klen = 0, kcap = 0;
  char num[64];
  int k = snprintf(num, sizeof num, "%u|%llx", n,
                   (unsigned long long)(n || !l ? 0 : l->address));
  grow_array((void **)&key, &kcap, (size_t)k + 1, 1);
  memcpy(key, num, (size_t)k);
  klen = (size_t)k;
  for (uint32_t i = 0; i < n; i++) {
    const mpt_loc_entry *e = &l->entries[i];
    const char *fn = e->function ? e->function : "", *file = e->file ? e->file : "";
    k = snprintf(num, sizeof num, "\x1f%u:%u:%u\x1f", e->line, e->start_char, e->end_char);
    size_t add = strlen(fn) + strlen(file) + (size_t)k + 2;
    grow_array((void **)&key, &kcap, klen + add, 1);
    klen += (size_t)sprintf(key + klen, "%s%s%s", fn, num, file);
  }
  uint32_t id = strpool_intern(c->lockeys, key ? key : "", klen);
  free(key);
  if (id >= c->nglocs) {               /* new: copy it */
    grow_array((void **)&c->glocs, &c->glocs_cap, (size_t)id + 1, sizeof *c->glocs);
    gloc *g = &c->glocs[id];
    g->e = n ? xmalloc(n * sizeof *g->e) : NULL;
    for (uint32_t i = 0; i < n; i++) {
      g->e[i] = l->entries[i];
      g->e[i].function = intern(c, l->entries[i].function);
      g->e[i].file = intern(c, l->entries[i].file);
    }
    g->l.address = l ? l->address : 0;
    g->l.n = n;
    g->l.entries = g->e;
    g->callback_name = NULL;
    if (an_is_callback_location(&g->l)) {
      const char *fn = g->e[0].function ? g->e[0].function : "?";
      char *name = xmalloc(strlen(fn) + sizeof "callback ");
      sprintf(name, "callback %s", fn);
      g->callback_name = intern(c, name);
      free(name);
    }
    c->nglocs = (size_t)id + 1;
  }
  c->lmap[loc] = id + 1;
  return id + 1;
}

double an_per_rate(const an_ctx *c, double x)
{ return c->h->sampling_rate > 0 ? x / c->h->sampling_rate : 0; }

double an_bytes(const an_ctx *c, double nsamples)
{ return nsamples * c->bytes_per_sample; }

double an_objects(const an_ctx *c, double nsamples, uint64_t wosize)
{ return an_per_rate(c, nsamples / (double)(wosize + 1)); }

/* ---------------- location matching and naming ---------------- */

int an_loc_matches(an_ctx *c, uint32_t loc, const regex_t *re)
{
  return an_location_matches(an_location(c, loc), re);
}

int an_filter_active(const an_filter *f)
{
  return f->alloc.on || f->live.on || f->collected.on || f->ndomains || f->sources ||
         f->min_size || f->max_size != UINT64_MAX || f->min_life ||
         f->max_life != UINT64_MAX || f->nfocus || f->nignore || f->nhide;
}

/* Whether a function of location [l] (itself or inlined) matches [re]. */
static int loc_function_matches(const mpt_location *l, const regex_t *re)
{
  for (uint32_t i = 0; l && i < l->n; i++)
    if (l->entries[i].function && regexec(re, l->entries[i].function, 0, NULL, 0) == 0) return 1;
  return 0;
}

/* Whether hide pattern [i] of [f] hides location [l]: it matches, and
   its preset does not keep the location. */
static int hide_pattern_hides(const an_filter *f, int i, const mpt_location *l)
{
  return an_location_matches(l, &f->hide[i]) && !(f->has_keep[i] && loc_function_matches(l, &f->keep[i]));
}

int an_filter_hides(const an_filter *f, const mpt_location *l)
{
  for (int i = 0; i < f->nhide; i++) if (hide_pattern_hides(f, i, l)) return 1;
  return 0;
}

int an_location_matches(const mpt_location *l, const regex_t *re)
{
  if (!l) return 0;
  /* A location without debug information is matched by the name every
     command shows for it (so --hide '^<unknown>$' and the runtime preset
     can hide it). */
  if (l->n == 0) return regexec(re, "<unknown>", 0, NULL, 0) == 0;
  for (uint32_t i = 0; i < l->n; i++) {
    const mpt_loc_entry *e = &l->entries[i];
    if ((e->function && regexec(re, e->function, 0, NULL, 0) == 0) ||
        (e->file && regexec(re, e->file, 0, NULL, 0) == 0))
      return 1;
  }
  return 0;
}

static uint8_t loc_flags(an_ctx *c, uint32_t loc)
{
  if (loc >= c->locflags_cap) {
    size_t old = c->locflags_cap;
    grow_array((void **)&c->locflags, &c->locflags_cap, (size_t)loc + 1, 1);
    memset(c->locflags + old, 0, c->locflags_cap - old);
  }
  uint8_t fl = c->locflags[loc];
  if (fl & LF_DONE) return fl;
  fl = LF_DONE;
  const an_filter *f = c->f;
  if (f->nhide) {
    int cls = an_cached_hide_class(&c->layers, loc, an_location(c, loc));
    fl |= (cls & AN_HIDDEN ? LF_HIDE : 0) | (cls & AN_ABSORBED ? LF_ABSORB : 0) | (cls & AN_KEPT ? LF_KEPT : 0);
  }
  for (int i = 0; i < f->nfocus; i++) if (an_loc_matches(c, loc, &f->focus[i])) fl |= LF_FOCUS;
  for (int i = 0; i < f->nignore; i++) if (an_loc_matches(c, loc, &f->ignore[i])) fl |= LF_IGNORE;
  c->locflags[loc] = fl;
  return fl;
}

const char *an_loc_function(an_ctx *c, uint32_t loc)
{
  if (loc >= 1 && loc <= c->nglocs && c->glocs[loc - 1].callback_name)
    return c->glocs[loc - 1].callback_name;
  const mpt_location *l = an_location(c, loc);
  if (!l || l->n == 0 || !l->entries[0].function || !l->entries[0].function[0])
    return "<unknown>";
  return l->entries[0].function;
}

void an_loc_fileline(an_ctx *c, uint32_t loc, const char **file, uint32_t *line)
{
  const mpt_location *l = an_location(c, loc);
  if (!l || l->n == 0) { *file = ""; *line = 0; return; }
  *file = l->entries[0].file ? l->entries[0].file : "";
  *line = l->entries[0].line;
}

static const char *module_of(const mpt_loc_entry *e, char *buf, size_t n)
{
  const char *fn = e->function ? e->function : "";
  const char *dot = strchr(fn, '.');
  if (dot && dot != fn && strcmp(fn, "??") != 0) {
    size_t k = (size_t)(dot - fn);
    if (k >= n) k = n - 1;
    memcpy(buf, fn, k);
    buf[k] = 0;
    return buf;
  }
  /* No qualified name: derive the module from the file name. */
  const char *file = e->file ? e->file : "";
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  size_t k = strcspn(base, ".");
  if (k == 0) return "<unknown>";
  if (k >= n) k = n - 1;
  memcpy(buf, base, k);
  buf[k] = 0;
  buf[0] = (char)toupper((unsigned char)buf[0]);
  return buf;
}

const char *an_loc_key(an_ctx *c, uint32_t loc, an_keykind k)
{
  if ((size_t)loc >= c->keys_cap[k]) {
    size_t old = c->keys_cap[k];
    grow_array((void **)&c->keys[k], &c->keys_cap[k], (size_t)loc + 1, sizeof(char *));
    memset(c->keys[k] + old, 0, (c->keys_cap[k] - old) * sizeof(char *));
  }
  if (c->keys[k][loc]) return c->keys[k][loc];
  const mpt_location *l = an_location(c, loc);
  char buf[1024];
  const char *s;
  if (!l || l->n == 0) {
    if (k == AN_BY_LOCATION && l)
      snprintf(buf, sizeof buf, "<unknown> (0x%llx)", (unsigned long long)l->address);
    else
      snprintf(buf, sizeof buf, "<unknown>");
    s = buf;
  } else {
    const mpt_loc_entry *e = &l->entries[0];
    const char *fn = e->function && e->function[0] ? e->function : "??";
    /* a callback frame is not its function's own frame */
    if (c->glocs[loc - 1].callback_name) fn = c->glocs[loc - 1].callback_name;
    if (k == AN_BY_FUNCTION) s = fn;
    else if (k == AN_BY_MODULE) s = module_of(e, buf, sizeof buf);
    else {
      snprintf(buf, sizeof buf, "%s (%s:%u:%u-%u)", fn, e->file ? e->file : "",
               e->line, e->start_char, e->end_char);
      s = buf;
    }
  }
  const char *r = strpool_get(c->strs, strpool_intern(c->strs, s, strlen(s)));
  c->keys[k][loc] = r;
  return r;
}

/* ---------------- stacks -> nodes ---------------- */

#define NODE_HASHED 0x80            /* children also in c->children */
#define MAX_LIST_WALK 8

static uint32_t child(an_ctx *c, uint32_t parent, uint32_t loc, uint8_t lf)
{
  uint64_t key = ((uint64_t)parent << 32) | loc;
  if (c->nodes[parent].flags & NODE_HASHED) {
    uint32_t *v = u64map_get(&c->children, key);
    if (v) return *v;
  } else {
    int walked = 0;
    for (uint32_t k = c->links[parent].first; k; k = c->links[k].next, walked++)
      if (c->nodes[k].loc == loc) return k;
    if (walked > MAX_LIST_WALK) {   /* many children: index them */
      for (uint32_t k = c->links[parent].first; k; k = c->links[k].next)
        u64map_put(&c->children, ((uint64_t)parent << 32) | c->nodes[k].loc, k);
      c->nodes[parent].flags |= NODE_HASHED;
    }
  }
  if (c->nnodes == c->nodes_cap) {
    size_t old = c->nodes_cap;
    grow_array((void **)&c->nodes, &c->nodes_cap, c->nnodes + 1, sizeof *c->nodes);
    c->links = xrealloc(c->links, c->nodes_cap * sizeof *c->links);
    memset(c->links + old, 0, (c->nodes_cap - old) * sizeof *c->links);
  }
  uint32_t id = (uint32_t)c->nnodes++;
  an_node *p = &c->nodes[parent];
  uint8_t fl = p->flags & (AN_NODE_FOCUS | AN_NODE_IGNORE);
  if (lf & LF_FOCUS) fl |= AN_NODE_FOCUS;
  if (lf & LF_IGNORE) fl |= AN_NODE_IGNORE;
  c->nodes[id] = (an_node){ parent, loc, p->depth + 1, fl };
  c->links[id].next = c->links[parent].first;
  c->links[parent].first = id;
  if (c->nodes[parent].flags & NODE_HASHED) u64map_put(&c->children, key, id);
  return id;
}

int an_is_callback_location(const mpt_location *l)
{
  if (!l || l->n < 2) return 0;
  const mpt_loc_entry *m = &l->entries[l->n - 1];
  return m->function && strcmp(m->function, MPT_CALLBACK_MARKER) == 0
         && (!m->file || !m->file[0]);
}

/* Whether location [l] has an entry (itself or inlined) of function
   [fn]. */
static int loc_has_function(const mpt_location *l, const char *fn)
{
  for (uint32_t i = 0; l && i < l->n; i++)
    if (l->entries[i].function && strcmp(l->entries[i].function, fn) == 0) return 1;
  return 0;
}

/* Whether a function of location [l] (itself or inlined) lexically
   encloses function [fn] ("M.f" encloses "M.f.(fun)", "M.f.g"); a
   compilation unit's initialiser ("M", no dot) encloses nothing here:
   it runs the whole program. */
static int loc_encloses(const mpt_location *l, const char *fn)
{
  for (uint32_t i = 0; l && i < l->n; i++) {
    const char *g = l->entries[i].function;
    if (!g || !strchr(g, '.')) continue;
    size_t k = strlen(g);
    if (strncmp(fn, g, k) == 0 && fn[k] == '.') return 1;
  }
  return 0;
}

struct an_layers {
  regex_t *re;                 /* the presets' */
  size_t n;
  const an_filter *f;          /* its --hide patterns, or NULL */
};

an_layers *an_layers_new(const an_filter *f)
{
  an_layers *y = xcalloc(1, sizeof *y);
  preset_table t;
  char err[256];
  /* a presets file that does not load was reported when its option was
     read: the presets before its bad line are those there are */
  presets_load(&t, f ? f->presets_file : NULL, err, sizeof err);
  y->re = xcalloc(t.n + 1, sizeof *y->re);
  for (size_t i = 0; i < t.n; i++)
    if (regcomp(&y->re[y->n], t.v[i].regex, REG_EXTENDED | REG_NOSUB) == 0) y->n++;
  presets_free(&t);
  y->f = f;
  return y;
}

int an_layers_match(const an_layers *y, const mpt_location *l)
{
  for (size_t i = 0; i < y->n; i++) if (an_location_matches(l, &y->re[i])) return 1;
  return y->f && an_filter_hides(y->f, l);
}

int an_hide_class(const an_filter *f, const an_layers *y, const mpt_location *l)
{
  if (an_filter_hides(f, l)) return AN_HIDDEN;
  for (int i = 0; i < f->nhide; i++)
    if (f->has_keep[i] && loc_function_matches(l, &f->keep[i])) return AN_KEPT;
  return an_layers_match(y, l) ? AN_ABSORBED : 0;
}

void an_layers_free(an_layers *y)
{
  if (!y) return;
  for (size_t i = 0; i < y->n; i++) regfree(&y->re[i]);
  free(y->re);
  free(y);
}

/* The byte of [id] in a cache of [*cap] bytes at [*v], grown (zeroed)
   to hold it. */
static uint8_t *cache_byte(uint8_t **v, size_t *cap, uint32_t id)
{
  if (id >= *cap) {
    size_t old = *cap;
    grow_array((void **)v, cap, (size_t)id + 1, 1);
    memset(*v + old, 0, *cap - old);
  }
  return *v + id;
}

int an_cached_in_layer(an_layer_cache *k, uint32_t id, const mpt_location *l)
{
  uint8_t *b = cache_byte(&k->in_layer, &k->in_layer_cap, id);
  if (!*b) {
    if (!k->y) k->y = an_layers_new(k->f);
    *b = (uint8_t)(1 + an_layers_match(k->y, l));
  }
  return *b - 1;
}

int an_cached_hide_class(an_layer_cache *k, uint32_t id, const mpt_location *l)
{
  uint8_t *b = cache_byte(&k->hide_class, &k->hide_class_cap, id);
  if (!*b) {
    if (!k->y) k->y = an_layers_new(k->f);
    *b = (uint8_t)(1 + (k->f ? an_hide_class(k->f, k->y, l) : 0));
  }
  return *b - 1;
}

void an_layer_cache_free(an_layer_cache *k)
{
  an_layers_free(k->y);
  free(k->in_layer);
  free(k->hide_class);
  memset(k, 0, sizeof *k);
}

uint32_t an_drop_redundant_callbacks(const mpt_location **l, uint32_t *ids, uint32_t len,
                                     int (*in_layer)(void *u, uint32_t id), void *u)
{
  uint32_t out = 0;
  for (uint32_t i = 0; i < len; i++) {
    if (!an_is_callback_location(l[i])) {
      l[out] = l[i]; ids[out++] = ids[i];
      continue;
    }
    const char *fn = l[i]->entries[0].function;
    int redundant = fn == NULL;
    for (uint32_t j = 0; j < out && !redundant; j++)
      redundant = loc_has_function(l[j], fn);
    /* the holder: the next frame out that is not a callback frame (none:
       nothing says who runs it) */
    uint32_t h = i + 1;
    while (h < len && an_is_callback_location(l[h])) h++;
    if (!redundant) redundant = h == len || !in_layer(u, ids[h]) || loc_has_function(l[h], fn);
    /* a closure defined in a function still running (out there) was
       made or registered by it (handle calling Lwt.bind with its own
       continuation): that function is the reason, not the callback */
    for (uint32_t j = i + 1; j < len && !redundant; j++)
      if (!an_is_callback_location(l[j])) redundant = loc_encloses(l[j], fn);
    if (!redundant) { l[out] = l[i]; ids[out++] = ids[i]; }
  }
  return out;
}

#define PATH_STATE_SHIFT 30          /* node ids stay below 2^30 */
#define PATH_NODE ((1u << PATH_STATE_SHIFT) - 1)

static uint32_t stack_node(an_ctx *c, const uint32_t *s, uint32_t len)
{
  size_t common = 0, plen = c->prev_len;
  while (common < len && common < plen &&
         s[len - 1 - common] == c->prev[plen - 1 - common])
    common++;
  if (len > c->prev_cap) {
    grow_array((void **)&c->prev, &c->prev_cap, len, sizeof *c->prev);
    c->path = xrealloc(c->path, c->prev_cap * sizeof *c->path);
  }
  /* path[k] = node after the k+1 outermost frames (indexed from the
     outer end, so the shared part stays valid when lengths differ), and
     that frame's an_hide_next state (the next one's depends on it) in
     its top two bits. */
  uint32_t node = common ? c->path[common - 1] & PATH_NODE : 0;
  int state = common ? (int)(c->path[common - 1] >> PATH_STATE_SHIFT) : AN_SHOWN;
  for (size_t k = common; k < len; k++) {
    uint32_t loc = s[len - 1 - k];
    uint8_t lf = loc_flags(c, loc);
    state = an_hide_next((lf & LF_HIDE ? AN_HIDDEN : 0) | (lf & LF_ABSORB ? AN_ABSORBED : 0) |
                         (lf & LF_KEPT ? AN_KEPT : 0), state);
    if (state != AN_GONE) node = child(c, node, loc, lf);
    c->path[k] = node | (uint32_t)state << PATH_STATE_SHIFT;
  }
  /* prev is stored outer-end-aligned like the stack itself. */
  if (len) memcpy(c->prev, s, len * sizeof *s);   /* both may be NULL */
  c->prev_len = len;
  return len ? c->path[len - 1] & PATH_NODE : 0;
}

/* ---------------- samples ---------------- */

static int keep_sample(an_ctx *c, const an_sample *s)
{
  const an_filter *f = c->f;
  if (f->alloc.on && (s->t_alloc < f->alloc.lo || s->t_alloc > f->alloc.hi)) return 0;
  if (f->live.on && (s->t_alloc > f->live.hi || s->t_collect < f->live.lo)) return 0;
  if (f->collected.on && (s->t_collect == AN_NEVER || s->t_collect < f->collected.lo ||
                          s->t_collect > f->collected.hi)) return 0;
  if (f->ndomains) {
    int ok = 0;
    for (int i = 0; i < f->ndomains; i++) if (f->domains[i] == s->domain) ok = 1;
    if (!ok) return 0;
  }
  if (f->sources && !(f->sources & (1u << s->source))) return 0;
  uint64_t size = s->wosize * c->h->word_bytes;
  if (size < f->min_size || size > f->max_size) return 0;
  if (f->min_life || f->max_life != UINT64_MAX) {
    uint64_t end = s->t_collect == AN_NEVER ? c->st.end_time : s->t_collect;
    uint64_t life = end >= s->t_alloc ? end - s->t_alloc : 0;
    if (life < f->min_life || life > f->max_life) return 0;
  }
  uint8_t nf = c->nodes[s->node].flags;
  if (f->nfocus && !(nf & AN_NODE_FOCUS)) return 0;
  if (nf & AN_NODE_IGNORE) return 0;
  return 1;
}

static void complete(an_ctx *c, const an_callbacks *cb, const an_sample *s)
{
  c->st.samples_total++;
  if (!keep_sample(c, s)) return;
  c->st.samples_kept++;
  if (s->node) {
    const mpt_location *l = an_location(c, c->nodes[s->node].loc);
    if (!l || l->n == 0) c->st.samples_no_location++;
  }
  if (cb->on_sample) cb->on_sample(cb->u, c, s);
}

/* The completed sample of a live record. */
static an_sample unpack(const an_live *r, uint64_t id, uint64_t t_collect)
{
  an_sample s;
  s.id = id;
  s.node = an_live_node(r);
  s.nsamples = r->nsamples;
  s.wosize = r->wosize;
  s.t_alloc = an_live_time(r);
  s.t_collect = t_collect;
  s.domain = an_live_domain(r);
  s.source = (uint8_t)an_live_source(r);
  s.promoted = (uint8_t)an_live_promoted(r);
  return s;
}

typedef struct {
  an_ctx *c;
  const an_callbacks *cb;
} end_walk;

static void complete_live(void *u, uint64_t id, const an_live *r)
{
  end_walk *w = u;
  an_sample s = unpack(r, id, AN_NEVER);
  complete(w->c, w->cb, &s);
}

/* A complete heap snapshot has ended: the samples allocated before it,
   still live and not among its blocks, are completed as dead at its time
   (snapdeath.h).  Their ids are gathered first: the live table cannot
   change under livetab_each. */
typedef struct { uint64_t id; uint32_t domain; } dead_id;
typedef struct { snapdeath *d; dead_id *ids; size_t n, cap; } dead_walk;

static void gather_dead(void *u, uint64_t id, const an_live *r)
{
  dead_walk *w = u;
  if (an_live_time(r) > w->d->time_ns || an_live_source(r) == MPT_SRC_CUSTOM
      || sd_in_snapshot(w->d, id))
    return;
  grow_array((void **)&w->ids, &w->cap, w->n + 1, sizeof *w->ids);
  w->ids[w->n++] = (dead_id){ id, an_live_domain(r) };
}

static void snapshot_deaths(an_ctx *c, const an_callbacks *cb)
{
  dead_walk w = { &c->snap, NULL, 0, 0 };
  livetab_each(&c->live, gather_dead, &w);
  for (size_t i = 0; i < w.n; i++) {
    an_live r;
    livetab_del(&c->live, w.ids[i].id, w.ids[i].domain, &r);
    an_sample s = unpack(&r, w.ids[i].id, c->snap.time_ns);
    complete(c, cb, &s);
    sd_mark_dead(&c->snap, w.ids[i].id);
  }
  free(w.ids);
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Progress on stderr when it is a terminal and the read takes long. */
typedef struct {
  int tty, shown;
  double t0, last;
  uint64_t n;
} progress;

static void progress_tick(an_ctx *c, progress *p)
{
  if (!p->tty || (++p->n & 0xFFFFF) != 0) return;
  double t = now_s();
  if (t - p->last < 0.5 || t - p->t0 < 2) return;
  uint64_t done, total;
  ti_progress(c->t, &done, &total);
  char where[64] = "";
  if (c->npaths > 1)
    snprintf(where, sizeof where, "trace %zu/%zu, ", c->cur + 1, c->npaths);
  if (total && done)
    fprintf(stderr, "\r%s%llu M events, %.0f%%  ", where, (unsigned long long)(p->n >> 20),
            100.0 * (double)done / (double)total);
  else
    fprintf(stderr, "\r%s%llu M events  ", where, (unsigned long long)(p->n >> 20));
  p->last = t;
  p->shown = 1;
}

/* an_drop_redundant_callbacks' question for global location [loc]. */
static int loc_in_layer(void *u, uint32_t loc)
{
  an_ctx *c = u;
  return an_cached_in_layer(&c->layers, loc, an_location(c, loc));
}

/* Read the current trace as far as it goes (its end, or for a followed
   trace what has been written so far).  0, or 1 after a malformed record
   (message printed). */
static int read_events(an_ctx *c, const an_callbacks *cb, progress *pg)
{
  mpt_event ev;
  int k;
  while ((k = ti_next(c->t, &ev)) == TI_OK) {
    c->events_read++;
    if (ev.kind >= 1 && ev.kind <= MPT_EV_LOST) c->st.events[ev.kind]++;
    if (ev.time_ns > c->st.end_time) c->st.end_time = ev.time_ns;
    if (cb->on_event) cb->on_event(cb->u, c, &ev);
    /* Without a sample consumer (info), lifetimes are not needed: skip the
       call tree and the live table, leaving a pure decode-and-count loop. */
    switch (cb->on_sample ? ev.kind : 0) {
    case MPT_EV_ALLOC: {
      grow_array((void **)&c->gstack, &c->gstack_cap, ev.stack_len, sizeof *c->gstack);
      uint32_t len = ev.stack_len, callbacks = 0;
      for (uint32_t i = 0; i < len; i++) {
        c->gstack[i] = global_loc(c, ev.stack[i]);
        callbacks += c->glocs[c->gstack[i] - 1].callback_name != NULL;
      }
      if (callbacks) {
        grow_array((void **)&c->gstack_locs, &c->gstack_locs_cap, len, sizeof *c->gstack_locs);
        for (uint32_t i = 0; i < len; i++) c->gstack_locs[i] = an_location(c, c->gstack[i]);
        len = an_drop_redundant_callbacks(c->gstack_locs, c->gstack, len, loc_in_layer, c);
      }
      uint32_t node = stack_node(c, c->gstack, len);
      int had;
      an_live *r = livetab_put(&c->live, ev.id, ev.stream, &had);
      /* Same id allocated twice: the first block's fate is unknown; count
         it and forget it rather than guessing. */
      if (had) c->st.duplicate_alloc++;
      an_live_pack(r, node, ev.nsamples, ev.wosize, ev.time_ns, ev.source, ev.stream);
      break;
    }
    case MPT_EV_PROMOTE: {
      an_live *r = livetab_get(&c->live, ev.id, ev.stream);
      if (!r) { c->st.unknown_promote++; break; }
      r->node |= 1u << 31;
      break;
    }
    case MPT_EV_COLLECT: {
      an_live r;
      if (!livetab_del(&c->live, ev.id, ev.stream, &r)) {
        if (!sd_collected(&c->snap, ev.id)) c->st.unknown_collect++;
        break;
      }
      an_sample s = unpack(&r, ev.id, ev.time_ns);
      complete(c, cb, &s);
      break;
    }
    case MPT_EV_SNAP_BEGIN: case MPT_EV_SNAP_IDS: case MPT_EV_SNAP_ROOT:
    case MPT_EV_SNAP_BLOCK: case MPT_EV_SNAP_EDGES: case MPT_EV_SNAP_END:
      if (sd_event(&c->snap, &ev)) snapshot_deaths(c, cb);
      break;
    default:
      break;
    }
    progress_tick(c, pg);
  }
  if (k == TI_ERR) {
    if (pg->shown) { fprintf(stderr, "\r%50s\r", ""); pg->shown = 0; }
    msg("%s%s: malformed trace: %s\n", c->npaths != 1 ? "warning: skipped " : "",
            c->cur_path, ti_error(c->t));
    return 1;
  }
  return 0;
}

/* The current trace has been read to its end: count it, and complete its
   samples still live. */
static void finish_trace(an_ctx *c, const an_callbacks *cb)
{
  c->traces_read++;
  if (ti_truncated(c->t)) {
    c->traces_truncated++;
    if (c->npaths == 1 && !an_quiet_truncation)
      msg("warning: trace is truncated; read up to its last complete record\n");
  }
  uint64_t end_ns, total, lost;
  if (ti_end_info(c->t, &end_ns, &total, &lost)) {
    c->traces_ended++;
    if (end_ns > c->st.end_time) c->st.end_time = end_ns;
  }
  /* Lifetimes of blocks live at the end run to this trace's end. */
  if (c->st.end_time > c->st.max_end_time) c->st.max_end_time = c->st.end_time;
  /* Blocks still live at the end, in memory order (ring, then the older
     ones in id order); the table is emptied as they go, since nothing
     reads it after. */
  end_walk w = { c, cb };
  livetab_drain(&c->live, complete_live, &w);
}

/* Make the next trace current; 0, or -1 when none is left.  With several
   traces, one that cannot be opened or that has another sampling rate or
   word size is skipped with a warning. */
static int next_trace(an_ctx *c)
{
  while (++c->cur < c->npaths) {
    char err[512];
    ti_trace *t = ti_open(c->paths[c->cur], err, sizeof err);
    if (!t) {
      msg("warning: skipped %s\n", err);
      c->traces_skipped++;
      continue;
    }
    const ti_header *h = ti_get_header(t);
    if (h->sampling_rate != c->h->sampling_rate || h->word_bytes != c->h->word_bytes) {
      msg("warning: skipped %s: sampling rate %g or word size %u"
              " differs from the first trace's (%g, %u)\n", c->paths[c->cur],
              h->sampling_rate, h->word_bytes * 8, c->h->sampling_rate, c->h->word_bytes * 8);
      ti_close(t);
      c->traces_skipped++;
      continue;
    }
    ti_close(c->t);
    c->t = t;
    c->cur_path = c->paths[c->cur];
    c->st.end_time = 0;
    /* Per-trace state: location map, previous stack, live table. */
    if (c->lmap) memset(c->lmap, 0, c->lmap_cap * sizeof *c->lmap);
    c->prev_len = 0;
    livetab_free(&c->live);
    livetab_init(&c->live);
    sd_free(&c->snap);
    sd_init(&c->snap);
    return 0;
  }
  return -1;
}

int an_run(an_ctx *c, const an_callbacks *cb)
{
  progress pg = { isatty(2), 0, 0, 0, 0 };
  if (pg.tty) pg.t0 = pg.last = now_s();
  int rc = 0;
  do {
    if (read_events(c, cb, &pg)) {
      if (c->npaths == 1) return 1;
      c->traces_skipped++;
    } else {
      finish_trace(c, cb);
    }
  } while (next_trace(c) == 0);
  if (pg.shown) fprintf(stderr, "\r%50s\r", "");
  if (c->npaths > 1 && c->traces_truncated && !an_quiet_truncation)
    msg("warning: %llu of %zu traces are truncated; read up to their"
            " last complete record\n", (unsigned long long)c->traces_truncated, c->npaths);
  if (c->npaths > 1 && c->traces_read == 0) {
    msg("none of the %zu traces could be read\n", c->npaths);
    rc = 1;
  }
  return rc;
}

/* ---------------- following traces while they are written ---------------- */

an_ctx *an_follow_open(const an_filter *f)
{
  an_ctx *c = ctx_new(f);
  livetab_free(&c->live);      /* each followed trace has its own */
  sd_free(&c->snap);
  return c;
}

static followed *find_followed(const an_ctx *c, const char *path)
{
  for (size_t i = 0; i < c->nfl; i++)
    if (!strcmp(c->fl[i].path, path)) return &c->fl[i];
  return NULL;
}

/* Make followed trace [t] current (its reader and state in the context's
   fields) or put it back. */
static void follow_load(an_ctx *c, followed *t)
{
  c->t = t->t;
  c->lmap = t->lmap;
  c->lmap_cap = t->lmap_cap;
  c->live = t->live;
  c->snap = t->snap;
  c->st.end_time = t->end_time;
  c->cur_path = t->path;
  c->prev_len = 0;
}

static void follow_store(an_ctx *c, followed *t)
{
  t->lmap = c->lmap;
  t->lmap_cap = c->lmap_cap;
  t->live = c->live;
  t->snap = c->snap;
  t->end_time = c->st.end_time;
  c->t = NULL;
  c->lmap = NULL;
  c->lmap_cap = 0;
  memset(&c->live, 0, sizeof c->live);
  memset(&c->snap, 0, sizeof c->snap);
}

/* Has the process writing [h] gone (checked by pid on this host)? */
static int writer_gone(const ti_header *h)
{
  if (h->pid == 0 || h->pid > INT32_MAX) return 1;
  return kill((pid_t)h->pid, 0) != 0 && errno != EPERM;
}

/* One line, once, when the followed file's path no longer leads to the
   bytes being read: they are still read from the file opened, until its
   writer has gone. */
static void note_file_change(followed *t)
{
  static const char *const what[] = {
    [TI_FILE_DELETED] = "was deleted",
    [TI_FILE_REPLACED] = "was replaced by another file",
    [TI_FILE_TRUNCATED] = "was truncated below what was read" };
  ti_file_change_kind k = ti_file_change(t->t);
  if (t->change_noted || k == TI_FILE_SAME) return;
  t->change_noted = 1;
  msg("note: %s %s; reading the file it was until its process (pid %llu) ends\n",
      t->path, what[k], (unsigned long long)ti_get_header(t->t)->pid);
}

/* Read what followed trace [t] gained (an_follow_read). */
static int follow_step(an_ctx *c, followed *t, const an_callbacks *cb)
{
  const char *path = t->path;
  t->visited = 1;
  if (t->done) return 0;
  if (!t->t) {                  /* not open yet: is its header written? */
    char err[512];
    ti_trace *tr = ti_open(path, err, sizeof err);
    if (!tr) return -1;
    const ti_header *h = ti_get_header(tr);
    if (!c->have_header) set_header(c, tr);
    else if (h->sampling_rate != c->h->sampling_rate || h->word_bytes != c->h->word_bytes) {
      msg("warning: skipped %s: sampling rate %g or word size %u differs from the"
          " first trace's (%g, %u)\n", path, h->sampling_rate, h->word_bytes * 8,
          c->h->sampling_rate, c->h->word_bytes * 8);
      ti_close(tr);
      c->traces_skipped++;
      t->done = 1;
      return 1;
    }
    t->t = tr;
    ti_follow(tr, 1);
  }
  note_file_change(t);
  /* Decided before reading, so that the last read gets everything. */
  int last = writer_gone(ti_get_header(t->t));
  if (last) ti_follow(t->t, 0);
  follow_load(c, t);
  progress pg = { 0, 0, 0, 0, 0 };
  uint64_t end_ns, total, lost;
  int rc = read_events(c, cb, &pg), finished = rc;
  if (rc) c->traces_skipped++;
  else if (last || ti_end_info(c->t, &end_ns, &total, &lost)) {
    finish_trace(c, cb);
    finished = 1;
  }
  follow_store(c, t);
  if (finished) {               /* free its state */
    c->bytes_done += ti_bytes_read(t->t);
    ti_close(t->t);
    t->t = NULL;
    free(t->lmap);
    t->lmap = NULL;
    t->lmap_cap = 0;
    livetab_free(&t->live);
    sd_free(&t->snap);
    t->done = 1;
  }
  return rc;
}

int an_follow_read(an_ctx *c, const char *path, const an_callbacks *cb)
{
  followed *t = find_followed(c, path);
  if (!t) {
    grow_array((void **)&c->fl, &c->fl_cap, c->nfl + 1, sizeof *c->fl);
    t = &c->fl[c->nfl++];
    memset(t, 0, sizeof *t);
    t->path = xstrdup(path);
    livetab_init(&t->live);
    sd_init(&t->snap);
  }
  return follow_step(c, t, cb);
}

size_t an_follow_rest(an_ctx *c, const an_callbacks *cb)
{
  size_t pending = 0;
  for (size_t i = 0; i < c->nfl; i++) {
    followed *t = &c->fl[i];
    if (!t->visited && !t->done) {
      if (t->t) follow_step(c, t, cb);
      else {                    /* not selected any more before its header was read */
        if (access(t->path, F_OK) != 0)
          msg("note: %s was deleted before its header was written\n", t->path);
        t->done = 1;
      }
    }
    t->visited = 0;
    pending += !t->done;
  }
  return pending;
}

int an_follow_done(const an_ctx *c, const char *path)
{
  const followed *t = find_followed(c, path);
  return t && t->done;
}

void an_follow_live(an_ctx *c, const an_callbacks *cb)
{
  an_stats saved = c->st;       /* provisional: counted in no statistic */
  end_walk w = { c, cb };
  for (size_t i = 0; i < c->nfl; i++) {
    followed *t = &c->fl[i];
    if (t->done || !t->t) continue;
    c->st.end_time = t->end_time;
    livetab_each(&t->live, complete_live, &w);
  }
  c->st = saved;
}

void an_follow_work(const an_ctx *c, uint64_t *bytes, uint64_t *events)
{
  *bytes = c->bytes_done;
  for (size_t i = 0; i < c->nfl; i++)
    if (c->fl[i].t) *bytes += ti_bytes_read(c->fl[i].t);
  *events = c->events_read;
}

void an_print_hints(const an_ctx *c)
{
  const an_stats *st = &c->st;
  if (c->h->sampling_rate == 0) {
    msg("note: %s heap snapshots only (memprof_rate=0), no allocation samples;"
        " `ocaml-memprof retainers` analyses the snapshots\n",
        c->npaths > 1 ? "these traces hold" : "this trace holds");
  } else if (st->samples_total == 0) {
    msg("note: no sampled block in %s; sample more (a larger"
            " memprof_rate) or trace a longer run\n", c->npaths > 1 ? "these traces" : "this trace");
  } else if (st->samples_kept == 0) {
    msg("note: none of the %llu sampled blocks passes the filters\n",
            (unsigned long long)st->samples_total);
  } else if (st->samples_no_location * 2 > st->samples_kept) {
    msg("note: %.0f%% of the sampled blocks have no source location"
            " (shown as <unknown>): build the program with -g (ocamlopt -g, ocamlc -g)\n",
            100.0 * (double)st->samples_no_location / (double)st->samples_kept);
  }
}
