/* snaptypes.c: types of a heap snapshot's blocks from its module globals
   (see snaptypes.h for the method, tools/types/ for the helper's answers:
   "field MODULE INDEX NAME TYPE", "site KEY TYPE", "tname ID TEXT", "shape ID KIND [ELEM]",
   "alt ID TAG SIZE (NAME TYPE)*", "nomodule MODULE REASON"). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snaptypes.h"
#include "types.h"
#include "util.h"

#define ST_NO_INDEX UINT32_MAX

enum { SH_UNKNOWN, SH_IMM, SH_STRING, SH_FLOAT, SH_CLOSURE, SH_CUSTOM, SH_OBJECT, SH_LAZY,
       SH_FLOATARRAY, SH_ARRAY, SH_BLOCKS };
static const char *const shape_names[] = { "unknown", "imm", "string", "float", "closure",
  "custom", "object", "lazy", "floatarray", "array", "blocks" };

typedef struct { uint32_t text, shape, elem, alt_first, nalts; } st_typeinfo;
/* A block layout: its size fields from field_first, of which those that
   may hold a block (not of an immediate type) are listed in pfields from
   pf_first (npf of them, set once every type is known). */
typedef struct { uint32_t tag, size, field_first, pf_first, npf; } st_alt;
typedef struct { uint32_t name, type; } st_field;

/* A block whose matching needs more than 2 * MATCH_MAX cells keeps its
   children unknown. */
#define MATCH_MAX 4096

struct snap_types {
  strpool *strs;                /* type texts, edge names, module names */
  st_typeinfo *types; size_t ntypes, types_cap;
  st_alt *alts; size_t nalts, alts_cap;
  st_field *fields; size_t nfields, fields_cap;
  uint32_t *pfields; size_t npfields, pfields_cap;   /* field indices */
  u64map global_field;          /* module string id << 32 | index -> field + 1 */
  st_field *globals; size_t nglobals, globals_cap;
  u64map missing, stale;        /* string id -> 1 */
  char *foreign;               /* the helper's OCaml version when not the trace's */
  uint32_t *site_of;            /* per allocation of the reader: site + 1 */
  uint32_t *site_type; size_t nsites, site_cap;   /* per site asked */
  uint32_t *type, *name, *index;   /* per graph node */
  uint32_t no_name, array_name;
};

static uint32_t intern(snap_types *t, const char *s) { return strpool_intern(t->strs, s, strlen(s)); }

static st_typeinfo *type_slot(snap_types *t, unsigned long id)
{
  if (id >= 1u << 24) return NULL;
  if (id >= t->ntypes) {
    grow_array((void **)&t->types, &t->types_cap, id + 1, sizeof *t->types);
    memset(t->types + t->ntypes, 0, (id + 1 - t->ntypes) * sizeof *t->types);
    t->ntypes = id + 1;
  }
  return &t->types[id];
}

/* The fields of a tab-separated line, in place; how many (at most max). */
static size_t split_tabs(char *line, char **f, size_t max)
{
  size_t n = 0;
  line[strcspn(line, "\n")] = 0;
  for (char *p = line; n < max; ) {
    f[n++] = p;
    char *tab = strchr(p, '\t');
    if (!tab) break;
    *tab = 0;
    p = tab + 1;
  }
  return n;
}

static int parse_u32(const char *s, uint32_t *out)
{
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (!*s || *end || v > UINT32_MAX) return 0;
  *out = (uint32_t)v;
  return 1;
}

/* One line of the helper's answer; a malformed one is ignored (its type
   stays unknown). */
static void answer_line(void *arg, char *line)
{
  snap_types *t = arg;
  char *f[2 + 2 * 4100];
  size_t n = split_tabs(line, f, sizeof f / sizeof *f);
  uint32_t id, a, b, c;
  st_typeinfo *ti;
  if (n == 3 && !strcmp(f[0], "tname") && parse_u32(f[1], &id) && (ti = type_slot(t, id))) {
    ti->text = intern(t, f[2]);
  } else if (n >= 3 && !strcmp(f[0], "shape") && parse_u32(f[1], &id) && (ti = type_slot(t, id))) {
    for (uint32_t k = 0; k < sizeof shape_names / sizeof *shape_names; k++)
      if (!strcmp(f[2], shape_names[k])) ti->shape = k;
    if (ti->shape == SH_ARRAY && !(n == 4 && parse_u32(f[3], &ti->elem))) ti->shape = SH_UNKNOWN;
  } else if (n >= 4 && n % 2 == 0 && !strcmp(f[0], "alt") && parse_u32(f[1], &id)
             && parse_u32(f[2], &a) && parse_u32(f[3], &b) && b == (n - 4) / 2
             && (ti = type_slot(t, id))) {
    if (!ti->nalts) ti->alt_first = (uint32_t)t->nalts;
    else if (ti->alt_first + ti->nalts != t->nalts) return;   /* alts of a type together */
    grow_array((void **)&t->alts, &t->alts_cap, t->nalts + 1, sizeof *t->alts);
    t->alts[t->nalts++] = (st_alt){ a, b, (uint32_t)t->nfields, 0, 0 };
    ti->nalts++;
    for (size_t k = 4; k + 1 < n; k += 2) {
      if (!parse_u32(f[k + 1], &c)) c = 0;
      grow_array((void **)&t->fields, &t->fields_cap, t->nfields + 1, sizeof *t->fields);
      t->fields[t->nfields++] = (st_field){ intern(t, f[k]), c };
    }
  } else if (n == 5 && !strcmp(f[0], "field") && parse_u32(f[2], &a) && parse_u32(f[4], &c)) {
    char full[1024];
    snprintf(full, sizeof full, "%s.%s", f[1], f[3]);
    grow_array((void **)&t->globals, &t->globals_cap, t->nglobals + 1, sizeof *t->globals);
    t->globals[t->nglobals++] = (st_field){ intern(t, full), c };
    uint32_t old;
    u64map_replace(&t->global_field, (uint64_t)intern(t, f[1]) << 32 | a,
                   (uint32_t)t->nglobals, &old);
  } else if (n == 3 && !strcmp(f[0], "site") && parse_u32(f[1], &a) && parse_u32(f[2], &c)) {
    if (a < t->nsites) t->site_type[a] = c;
  } else if (n == 3 && !strcmp(f[0], "nomodule")) {
    uint32_t old;
    u64map_replace(&t->missing, intern(t, f[1]), 1, &old);
  } else if (n == 2 && !strcmp(f[0], "stale")) {
    uint32_t old;
    u64map_replace(&t->stale, intern(t, f[1]), 1, &old);
  } else if (n == 2 && !strcmp(f[0], "foreign")) {
    free(t->foreign);
    t->foreign = xstrdup(f[1]);
  }
}

/* The standard library's modules: their .cmt files come with the
   compiler, so they say nothing of whether the program's were found. */
static int is_stdlib_module(const char *m)
{
  return !strncmp(m, "Stdlib", 6) || !strncmp(m, "Camlinternal", 12) || !strcmp(m, "Std_exit");
}

/* ---- sampled blocks: the type of their allocation site ---- */

/* The helper's frames of allocation [al]'s stack, innermost first, at
   most TYPES_FRAMES (as `top --by type` asks them), into [buf]; 0 when
   its allocation has no source location or a name cannot be sent. */
static int site_frames(const hg_reader *r, const hg_alloc *al, char *buf, size_t len)
{
  size_t pos = 0, nframes = 0;
  buf[0] = 0;
  for (uint32_t k = 0; k < al->stack_len && nframes < TYPES_FRAMES; k++) {
    const mpt_location *l = ti_location(r->t, r->stacks[al->stack_off + k]);
    if (!l || !l->n) {
      if (!nframes) return 0;
      continue;
    }
    for (uint32_t i = 0; i < l->n && nframes < TYPES_FRAMES; i++) {
      const mpt_loc_entry *e = &l->entries[i];
      const char *fn = e->function ? e->function : "";
      if (!e->file || !e->file[0] || strpbrk(e->file, "\t\n\r") || strpbrk(fn, "\t\n\r"))
        return nframes > 0;
      int w = snprintf(buf + pos, len - pos, "\t%s\t%u\t%u\t%u\t%s", e->file, e->line,
                       e->start_char, e->end_char, fn);
      if (w < 0 || (size_t)w >= len - pos) { buf[pos] = 0; return nframes > 0; }
      pos += (size_t)w;
      nframes++;
    }
  }
  return nframes > 0;
}

/* A "site" request per distinct stack of the snapshot's sampled blocks. */
static void ask_sites(snap_types *t, const hg_reader *r, const hg_snapshot *s, FILE *input)
{
  static char frames[TYPES_FRAMES * 700];
  strpool *keys = strpool_new();
  t->site_of = xcalloc(r->nallocs ? r->nallocs : 1, sizeof *t->site_of);
  for (uint32_t b = 1; b <= s->nblocks; b++) {
    uint32_t al = s->alloc[b - 1];
    if (!al || t->site_of[al - 1] || !site_frames(r, &r->allocs[al - 1], frames, sizeof frames))
      continue;
    uint32_t before = strpool_count(keys), k = strpool_intern(keys, frames, strlen(frames));
    t->site_of[al - 1] = k + 1;
    if (k < before) continue;
    grow_array((void **)&t->site_type, &t->site_cap, (size_t)k + 1, sizeof *t->site_type);
    t->site_type[k] = 0;
    t->nsites = (size_t)k + 1;
    fprintf(input, "site\t%u%s\n", k, frames);
  }
  strpool_free(keys);
}

/* A module of the standard library is typed when it retains at least
   1/STDLIB_SHARE of the live bytes. */
#define STDLIB_SHARE 100

/* ---- the layouts ---- */

static const st_typeinfo *info(const snap_types *t, uint32_t type)
{
  return type && type < t->ntypes ? &t->types[type] : NULL;
}

/* The layout of [type] that block [b] (tag, wosize) has, or NULL. */
static const st_alt *alt_of(const snap_types *t, const st_typeinfo *ti, unsigned tag, uint64_t size)
{
  for (uint32_t k = 0; k < ti->nalts; k++) {
    const st_alt *a = &t->alts[ti->alt_first + k];
    if (a->tag == tag && a->size == size) return a;
  }
  return NULL;
}

/* Each layout's fields that may hold a block. */
static void list_pointer_fields(snap_types *t)
{
  for (size_t k = 0; k < t->nalts; k++) {
    st_alt *a = &t->alts[k];
    a->pf_first = (uint32_t)t->npfields;
    for (uint32_t j = 0; j < a->size; j++) {
      const st_typeinfo *f = info(t, t->fields[a->field_first + j].type);
      if (f && f->shape == SH_IMM) continue;
      grow_array((void **)&t->pfields, &t->pfields_cap, t->npfields + 1, sizeof *t->pfields);
      t->pfields[t->npfields++] = a->field_first + j;
      a->npf++;
    }
  }
}

/* Can a block of [tag] and [size] be a value of [type]? */
static int fits(const snap_types *t, uint32_t type, unsigned tag, uint64_t size)
{
  const st_typeinfo *ti = info(t, type);
  if (!ti) return 1;
  switch (ti->shape) {
  case SH_IMM: return 0;
  case SH_STRING: return tag == 252;
  case SH_FLOAT: return tag == 253;
  case SH_CLOSURE: return tag == 247 || tag == 249;
  case SH_CUSTOM: return tag == 255;
  case SH_OBJECT: return tag == 248;
  case SH_FLOATARRAY: return tag == 254 || (tag == 0 && size == 0);
  case SH_ARRAY: {
    const st_typeinfo *e = info(t, ti->elem);
    return tag == 0 || (tag == 254 && (!e || e->shape == SH_FLOAT || e->shape == SH_UNKNOWN));
  }
  case SH_BLOCKS: return alt_of(t, ti, tag, size) != NULL;
  default: return 1;            /* unknown; lazy (a forced one may be its value) */
  }
}

/* Deep checks look this many edges down, at blocks of at most
   DEEP_FIELDS fields that may hold a block. */
#define DEEP_LEVELS 2
#define DEEP_FIELDS 32

/* Can block [b] of [s] be a value of [type], its fields too, [depth]
   levels down?  A bucket {key : int; data : entry; next} whose next is
   empty has one edge, and entry is a record of three fields as the
   bucket is: only the fields of the target tell data from next.  Where
   it cannot tell (larger blocks) the answer is yes, which only makes a
   matching ambiguous, never a type wrong. */
static int fits_deep(const snap_types *t, const hg_snapshot *s, uint32_t type, uint32_t b,
                     int depth)
{
  unsigned tag = s->tag[b - 1];
  if (!fits(t, type, tag, hg_wosize(s, b))) return 0;
  const st_typeinfo *ti = info(t, type);
  if (!depth || !ti || ti->shape != SH_BLOCKS) return 1;
  const st_alt *alt = alt_of(t, ti, tag, hg_wosize(s, b));
  uint32_t v = s->base + b - 1, m = (uint32_t)(s->off[v + 1] - s->off[v]);
  const uint32_t *adj = s->adj + s->off[v];
  const uint32_t *pf = t->pfields + alt->pf_first, np = alt->npf;
  if (m > np) return 0;
  if (np > DEEP_FIELDS) return 1;
  /* pre[j]: the edges so far fit in fields < j (one row at a time). */
  uint8_t pre[DEEP_FIELDS + 1], cur[DEEP_FIELDS + 1];
  for (uint32_t j = 0; j <= np; j++) pre[j] = 1;
  for (uint32_t i = 0; i < m; i++) {
    cur[0] = 0;
    for (uint32_t j = 1; j <= np; j++)
      cur[j] = cur[j - 1]
               || (pre[j - 1] && fits_deep(t, s, t->fields[pf[j - 1]].type, adj[i] - s->base + 1,
                                           depth - 1));
    memcpy(pre, cur, np + 1);
  }
  return pre[np];
}

/* The type block [b] of [s] gets as a value of [type]: [type] when it
   fits, else 0; a lazy value is typed only while it is a lazy block. */
static uint32_t type_as(const snap_types *t, const hg_snapshot *s, uint32_t b, uint32_t type)
{
  const st_typeinfo *ti = info(t, type);
  if (!ti || ti->shape == SH_UNKNOWN) return 0;
  unsigned tag = s->tag[b - 1];
  if (ti->shape == SH_LAZY && tag != 246 && tag != 250) return 0;
  return fits(t, type, tag, hg_wosize(s, b)) ? type : 0;
}

/* ---- typing the breadth-first tree ---- */

/* Node [w] reached by a field named [name] of [type]; [fitted]: its
   block is known to fit [type] (only the lazy and unknown cases left). */
static void set_child(snap_types *t, const hg_snapshot *s, uint32_t w, uint32_t type,
                      uint32_t name, uint32_t index, int fitted)
{
  const st_typeinfo *ti = info(t, type);
  unsigned tag = s->tag[w - s->base];
  if (!fitted) t->type[w] = type ? type_as(t, s, w - s->base + 1, type) : 0;
  else t->type[w] = !ti || ti->shape == SH_UNKNOWN
                    || (ti->shape == SH_LAZY && tag != 246 && tag != 250) ? 0 : type;
  t->name[w] = name;
  t->index[w] = index;
}

/* The matchings of [m] edges to [np] fields in order, edge i only to a
   field j with fit[i * np + j]: pre[i * (np + 1) + j] whether edges < i
   match fields < j, suf[...] whether edges >= i match fields >= j.  0 when
   there is none; *ambiguous when an edge may take several fields. */
static int match(uint32_t m, uint32_t np, const uint8_t *fit, uint8_t *pre, uint8_t *suf,
                 int *ambiguous)
{
  size_t w = np + 1;
  for (uint32_t j = 0; j <= np; j++) pre[j] = 1;
  for (uint32_t i = 1; i <= m; i++) {
    pre[i * w] = 0;
    for (uint32_t j = 1; j <= np; j++)
      pre[i * w + j] = pre[i * w + j - 1] || (pre[(i - 1) * w + j - 1] && fit[(i - 1) * np + j - 1]);
  }
  if (!pre[m * w + np]) return 0;
  for (uint32_t j = 0; j <= np; j++) suf[m * w + j] = 1;
  for (uint32_t i = m; i-- > 0;) {
    suf[i * w + np] = 0;
    for (uint32_t j = np; j-- > 0;)
      suf[i * w + j] = suf[i * w + j + 1] || (fit[i * np + j] && suf[(i + 1) * w + j + 1]);
  }
  *ambiguous = 0;
  for (uint32_t i = 0; i < m && !*ambiguous; i++) {
    uint32_t count = 0;
    for (uint32_t j = 0; j < np; j++)
      count += pre[i * w + j] && fit[i * np + j] && suf[(i + 1) * w + j + 1];
    *ambiguous = count > 1;
  }
  return 1;
}

/* The children of typed block node [v] (of [fresh] the ones it reaches
   first: fresh[k] for its k-th edge) get their fields' names and types. */
static void type_children(snap_types *t, const hg_snapshot *s, uint32_t v, const uint8_t *fresh,
                          uint8_t *pre, uint8_t *suf)
{
  uint32_t b = v - s->base + 1, m = (uint32_t)(s->off[v + 1] - s->off[v]);
  const uint32_t *adj = s->adj + s->off[v];
  const st_typeinfo *ti = info(t, t->type[v]);
  if (!ti) return;
  if (ti->shape == SH_ARRAY) {
    /* Every field is an element: the k-th edge is element k when no
       element was left out. */
    int exact = m == hg_wosize(s, b);
    for (uint32_t k = 0; k < m; k++)
      if (fresh[k]) set_child(t, s, adj[k], ti->elem, t->array_name, exact ? k : ST_NO_INDEX, 0);
    return;
  }
  if (ti->shape != SH_BLOCKS) return;
  const st_alt *alt = alt_of(t, ti, s->tag[b - 1], hg_wosize(s, b));
  if (!alt) return;
  /* The fields that may hold a block, and the matching of the edges to
     them (pre[i][j]: edges < i fit in fields < j; suf: from i, j on). */
  const uint32_t *pf = t->pfields + alt->pf_first, np = alt->npf;
  if (m > np || (uint64_t)(m + 1) * (np + 1) * 2 > MATCH_MAX * 4) {
    if (m > np) t->type[v] = 0;  /* more pointers than its type has room for */
    return;
  }
  if (m == np) {
    /* No field left out: edge k is field k (the usual case, no search). */
    for (uint32_t k = 0; k < m; k++)
      if (!fits(t, t->fields[pf[k]].type, s->tag[adj[k] - s->base], hg_wosize(s, adj[k] - s->base + 1))) {
        t->type[v] = 0;
        return;
      }
    for (uint32_t k = 0; k < m; k++)
      if (fresh[k])
        set_child(t, s, adj[k], t->fields[pf[k]].type, t->fields[pf[k]].name, ST_NO_INDEX, 1);
    return;
  }
  /* fit[i * np + j]: edge i's target fits field j; shallow first, deep
     only when that leaves an edge ambiguous (m = np is the identity). */
  uint8_t *fit = pre + (size_t)(m + 1) * (np + 1);
  for (uint32_t i = 0; i < m; i++)
    for (uint32_t j = 0; j < np; j++)
      fit[i * np + j] = fits(t, t->fields[pf[j]].type, s->tag[adj[i] - s->base],
                             hg_wosize(s, adj[i] - s->base + 1));
  int ambiguous;
  if (!match(m, np, fit, pre, suf, &ambiguous)) { t->type[v] = 0; return; }
  if (ambiguous) {
    for (uint32_t i = 0; i < m; i++)
      for (uint32_t j = 0; j < np; j++)
        if (fit[i * np + j])
          fit[i * np + j] = fits_deep(t, s, t->fields[pf[j]].type, adj[i] - s->base + 1,
                                      DEEP_LEVELS);
    if (!match(m, np, fit, pre, suf, &ambiguous)) { t->type[v] = 0; return; }
  }
  size_t w = np + 1;
  for (uint32_t i = 0; i < m; i++) {
    if (!fresh[i]) continue;
    uint32_t first = UINT32_MAX, count = 0, same_type = 1;
    for (uint32_t j = 0; j < np; j++) {
      if (!(pre[i * w + j] && fit[i * np + j] && suf[(i + 1) * w + j + 1])) continue;
      if (first == UINT32_MAX) first = pf[j];
      else same_type &= t->fields[pf[j]].type == t->fields[first].type;
      count++;
    }
    if (count == 1) {
      set_child(t, s, adj[i], t->fields[first].type, t->fields[first].name, ST_NO_INDEX, 1);
    } else if (count > 1 && same_type) {
      /* Fields of one type: typed, named by all of them ("a|b"). */
      char names[256];
      size_t len = 0;
      for (uint32_t j = 0; j < np && len < sizeof names; j++)
        if (pre[i * w + j] && fit[i * np + j] && suf[(i + 1) * w + j + 1])
          len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? "|" : "",
                                  strpool_get(t->strs, t->fields[pf[j]].name));
      if (len < sizeof names)
        set_child(t, s, adj[i], t->fields[first].type, intern(t, names), ST_NO_INDEX, 1);
    }
  }
}

/* Breadth first from the super root, in the order of the retainer paths'
   tree: a node is named and typed by the edge that first reaches it. */
static void propagate(snap_types *t, const hg_snapshot *s, char *const *label_text)
{
  size_t n = s->n ? s->n : 1;
  uint8_t *seen = xcalloc(n, 1);
  uint32_t *queue = xmalloc(n * sizeof *queue);
  uint8_t *fresh = NULL, *pre = xmalloc((size_t)MATCH_MAX * 4), *suf = xmalloc((size_t)MATCH_MAX * 4);
  size_t fresh_cap = 0;
  /* The roots of each label, in the order of the label node's edges. */
  uint32_t *root_at = xmalloc((s->nroots ? s->nroots : 1) * sizeof *root_at);
  uint32_t *first = xcalloc((size_t)s->nlabels + 1, sizeof *first);
  for (size_t i = 0; i < s->nroots; i++) first[s->roots[i].label + 1]++;
  for (uint32_t l = 0; l < s->nlabels; l++) first[l + 1] += first[l];
  uint32_t *fill = xmalloc(((size_t)s->nlabels + 1) * sizeof *fill);
  memcpy(fill, first, ((size_t)s->nlabels + 1) * sizeof *fill);
  for (size_t i = 0; i < s->nroots; i++) root_at[fill[s->roots[i].label]++] = (uint32_t)i;
  free(fill);
  size_t qh = 0, qt = 0;
  if (s->n) { seen[0] = 1; queue[qt++] = 0; }
  while (qh < qt) {
    uint32_t v = queue[qh++];
    uint64_t m = s->off[v + 1] - s->off[v];
    grow_array((void **)&fresh, &fresh_cap, m + 1, 1);
    for (uint64_t k = 0; k < m; k++) {
      uint32_t w = s->adj[s->off[v] + k];
      fresh[k] = !seen[w];
      if (!seen[w]) { seen[w] = 1; queue[qt++] = w; }
    }
    if (v >= s->base) {
      /* A sampled block no typed field reaches: its site's type. */
      uint32_t b = v - s->base + 1, al = s->alloc[b - 1];
      if (!t->type[v] && al && t->site_of[al - 1])
        t->type[v] = type_as(t, s, b, t->site_type[t->site_of[al - 1] - 1]);
      if (t->type[v]) type_children(t, s, v, fresh, pre, suf);
    } else if (v > HG_KINDS) {
      uint32_t l = v - 1 - HG_KINDS;
      if (s->label_kind[l] != MPT_ROOT_GLOBAL || label_text[l][0] == '0') continue;
      uint32_t mod = intern(t, label_text[l]);
      for (uint64_t k = 0; k < m; k++) {
        if (!fresh[k]) continue;
        const hg_root *rt = &s->roots[root_at[first[l] + k]];
        uint32_t *g = rt->detail < UINT32_MAX
                      ? u64map_get(&t->global_field, (uint64_t)mod << 32 | rt->detail) : NULL;
        if (g) set_child(t, s, s->adj[s->off[v] + k], t->globals[*g - 1].type,
                         t->globals[*g - 1].name, ST_NO_INDEX, 0);
      }
    }
  }
  free(seen); free(queue); free(fresh); free(pre); free(suf); free(root_at); free(first);
}

/* ---- sizes by type ---- */

static int by_retained(const void *x, const void *y)
{
  const st_type_row *a = x, *b = y;
  if (a->retained != b->retained) return a->retained < b->retained ? 1 : -1;
  return (a->type > b->type) - (a->type < b->type);
}

size_t st_by_type(const snap_types *t, const hg_snapshot *s, const uint32_t *idom,
                  const uint64_t *retained, st_type_row **out)
{
  uint32_t n = s->n, nt = (uint32_t)(t->ntypes ? t->ntypes : 1);
  st_type_row *rows = xcalloc(nt, sizeof *rows);
  for (uint32_t k = 0; k < nt; k++) rows[k].type = k;
  /* The dominator tree's children (CSR), walked depth first with the
     number of blocks of each type on the way down from the root. */
  uint32_t *off = xcalloc((size_t)n + 1, sizeof *off), *kids, *fill;
  for (uint32_t v = 0; v < n; v++) if (idom[v] != UINT32_MAX) off[idom[v] + 1]++;
  for (uint32_t v = 0; v < n; v++) off[v + 1] += off[v];
  kids = xmalloc(((size_t)off[n] + 1) * sizeof *kids);
  fill = xmalloc(((size_t)n + 1) * sizeof *fill);
  memcpy(fill, off, (size_t)n * sizeof *fill);
  for (uint32_t v = 0; v < n; v++) if (idom[v] != UINT32_MAX) kids[fill[idom[v]]++] = v;
  uint32_t *active = xcalloc(nt, sizeof *active);
  uint32_t *stack = fill, *next = xmalloc(((size_t)n + 1) * sizeof *next);
  size_t depth = 0;
  if (n) { stack[depth] = 0; next[depth++] = off[0]; }
  while (depth) {
    uint32_t v = stack[depth - 1];
    if (next[depth - 1] < off[v + 1]) {
      uint32_t w = kids[next[depth - 1]++];
      if (w >= s->base) {
        uint32_t ty = t->type[w];
        rows[ty].count++;
        rows[ty].self += hg_block_bytes(s, w - s->base + 1);
        if (!active[ty]++) rows[ty].retained += retained[w];
      }
      stack[depth] = w;
      next[depth++] = off[w];
    } else {
      if (v >= s->base) active[t->type[v]]--;
      depth--;
    }
  }
  free(off); free(kids); free(fill); free(active); free(next);
  size_t k = 0;
  for (uint32_t i = 0; i < nt; i++) if (rows[i].count) rows[k++] = rows[i];
  if (k) qsort(rows, k, sizeof *rows, by_retained);
  *out = rows;
  return k;
}

/* ---- interface ---- */

static void hint(const char *what, const snap_types *t, const u64map *set, const char *advice)
{
  size_t count = 0, pos = 0;
  char buf[512];
  buf[0] = 0;
  for (uint32_t id = 0, n = strpool_count(t->strs); id < n; id++) {
    if (!u64map_get(set, id)) continue;
    if (count < 4 && pos < sizeof buf)
      pos += (size_t)snprintf(buf + pos, sizeof buf - pos, "%s%s", count ? ", " : "",
                              strpool_get(t->strs, id));
    else if (count == 4 && pos < sizeof buf) pos += (size_t)snprintf(buf + pos, sizeof buf - pos, ", ...");
    count++;
  }
  if (count) msg("hint: %s %zu (%s): %s\n", what, count, buf, advice);
}

void st_print_hints(const snap_types *t, int verbose)
{
  if (t->foreign) {
    msg("hint: types: the .cmt reader is of OCaml %s, which cannot read the traced program's "
        "compiler's .cmt files: no type; use the ocaml-memprof installed with the program's "
        "compiler (or set OCAML_MEMPROF_TYPES to its ocaml-memprof-types)\n", t->foreign);
    return;
  }
  if (verbose)
    hint("types: modules without a usable .cmt (their globals untyped):", t, &t->missing,
         "compile with -bin-annot (dune: `dune build @check` writes executables' .cmt too) or give --cmt-path DIR");
  hint("types: stale or foreign .cmt files ignored:", t, &t->stale,
       "the source changed since, or another compiler wrote them; rebuild");
}

snap_types *st_resolve(const hg_reader *r, const hg_snapshot *s, char *const *label_text,
                       const uint64_t *label_retained, uint64_t live,
                       const char *const *cmt_paths, size_t ncmt_paths, int verbose)
{
  const char *exe = ti_get_header(r->t)->executable;
  FILE *input = tmpfile();
  if (!input) return NULL;
  types_write_dirs(input, exe, ti_get_header(r->t)->ocaml_version, cmt_paths, ncmt_paths);
  size_t nuser = 0;
  for (uint32_t l = 0; l < s->nlabels; l++) {
    const char *m = label_text[l];
    if (s->label_kind[l] != MPT_ROOT_GLOBAL || m[0] == '0' || strpbrk(m, "\t\n\r")) continue;
    nuser += !is_stdlib_module(m);
    /* The standard library's modules only when they hold much: their
       .cmt files are most of the helper's work (camlinternalFormat's is
       2 MB), for globals of a few hundred bytes each. */
    if (is_stdlib_module(m) && label_retained[l] < live / STDLIB_SHARE) continue;
    fprintf(input, "global\t%s\n", m);
  }
  if (!nuser) {
    fclose(input);
    if (verbose)
      msg("hint: types: no global of the program's modules is named in this snapshot "
          "(bytecode, or the executable's symbols are missing): blocks keep their tags\n");
    return NULL;
  }
  snap_types *t = xcalloc(1, sizeof *t);
  t->strs = strpool_new();
  u64map_init(&t->global_field, 256);
  u64map_init(&t->missing, 16);
  u64map_init(&t->stale, 16);
  ask_sites(t, r, s, input);
  int rc = types_run_helper(input, answer_line, t, !verbose);
  fclose(input);
  size_t typed_user = 0;
  for (uint32_t l = 0; l < s->nlabels; l++) {
    const char *m = label_text[l];
    if (s->label_kind[l] != MPT_ROOT_GLOBAL || m[0] == '0' || is_stdlib_module(m)) continue;
    uint32_t id = intern(t, m);
    typed_user += !u64map_get(&t->missing, id);
  }
  if (rc || !typed_user) {
    if (!rc) st_print_hints(t, verbose);
    st_free(t);
    return NULL;
  }
  size_t n = s->n ? s->n : 1;
  t->type = xcalloc(n, sizeof *t->type);
  t->name = xmalloc(n * sizeof *t->name);
  t->index = xmalloc(n * sizeof *t->index);
  t->no_name = intern(t, "");
  t->array_name = intern(t, ".(");
  for (size_t v = 0; v < n; v++) { t->name[v] = t->no_name; t->index[v] = ST_NO_INDEX; }
  list_pointer_fields(t);
  propagate(t, s, label_text);
  return t;
}

uint32_t st_type(const snap_types *t, uint32_t v) { return t->type[v]; }

const char *st_type_text(const snap_types *t, uint32_t type)
{
  const st_typeinfo *ti = info(t, type);
  return ti ? strpool_get(t->strs, ti->text) : "unknown";
}

uint32_t st_type_count(const snap_types *t) { return (uint32_t)t->ntypes; }

int st_name_text(const snap_types *t, uint32_t v, int with_index, char *buf, size_t n)
{
  if (t->name[v] == t->no_name) return 0;
  if (t->name[v] != t->array_name) snprintf(buf, n, "%s", strpool_get(t->strs, t->name[v]));
  else if (with_index && t->index[v] != ST_NO_INDEX) snprintf(buf, n, ".(%u)", t->index[v]);
  else snprintf(buf, n, ".(_)");
  return 1;
}

int st_name_indexed(const snap_types *t, uint32_t v)
{
  return t->name[v] == t->array_name && t->index[v] != ST_NO_INDEX;
}

uint32_t *st_groups(const snap_types *t, uint32_t n)
{
  uint32_t *g = xcalloc(n ? n : 1, sizeof *g), ngroups = 0;
  u64map ids;
  u64map_init(&ids, 256);
  for (uint32_t v = 0; v < n; v++) {
    if (!t->type[v] && t->name[v] == t->no_name) continue;
    uint64_t key = (uint64_t)t->type[v] << 32 | t->name[v];
    uint32_t *id = u64map_get(&ids, key);
    if (!id) { u64map_put(&ids, key, ++ngroups); id = u64map_get(&ids, key); }
    g[v] = *id;
  }
  u64map_free(&ids);
  return g;
}

void st_free(snap_types *t)
{
  if (!t) return;
  strpool_free(t->strs);
  free(t->types); free(t->alts); free(t->fields); free(t->pfields); free(t->globals);
  u64map_free(&t->global_field);
  u64map_free(&t->missing);
  u64map_free(&t->stale);
  free(t->foreign);
  free(t->site_of); free(t->site_type);
  free(t->type); free(t->name); free(t->index);
  free(t);
}
