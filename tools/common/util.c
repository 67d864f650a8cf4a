/* util.c: checked allocation, the u64 hash map, the index of increasing
   ids and the string interner.

   The map uses linear probing on power-of-two tables kept at most half
   full; deletion shifts later entries of the probe run back (Knuth's
   algorithm R) so there are no tombstones.  Home slots come from
   u64map_home (util.h): 8-key groups placed at random.  The interner stores strings in
   chunks of an arena that is never moved (new chunk when full), and
   indexes them by an FNV-1a hash in an open-addressing table of ids. */

#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

const char *msg_cmd = "";

void msg(const char *fmt, ...)
{
  va_list ap;
  fprintf(stderr, "ocaml-memprof%s%s: ", msg_cmd[0] ? " " : "", msg_cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

static void oom(void)
{
  msg("out of memory\n");
  exit(2);
}

void *xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  if (!p) oom();
  return p;
}

void *xcalloc(size_t n, size_t size)
{
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) oom();
  return p;
}

void *xrealloc(void *p, size_t n)
{
  p = realloc(p, n ? n : 1);
  if (!p) oom();
  return p;
}

void id_index_init(id_index *x, const uint32_t *ids, size_t n)
{
  x->ids = ids; x->n = n; x->tab = NULL;
  x->ntab = n ? (size_t)ids[n - 1] + 1 : 0;
  if (x->ntab > 4 * n + 1024) return;
  x->tab = xcalloc(x->ntab, sizeof *x->tab);
  for (size_t i = 0; i < n; i++) x->tab[ids[i]] = (uint32_t)i + 1;
}

uint32_t id_index_find(const id_index *x, uint64_t id)
{
  if (x->tab) return id < x->ntab ? x->tab[id] : 0;
  size_t lo = 0, hi = x->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (x->ids[mid] < id) lo = mid + 1; else hi = mid;
  }
  return lo < x->n && x->ids[lo] == id ? (uint32_t)lo + 1 : 0;
}

void id_index_free(id_index *x)
{
  free(x->tab);
  x->tab = NULL;
}

char *xstrdup(const char *s)
{
  size_t n = strlen(s) + 1;
  char *d = xmalloc(n);
  memcpy(d, s, n);
  return d;
}

void grow_array(void **p, size_t *cap, size_t need, size_t size)
{
  if (need <= *cap) return;
  size_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  *p = xrealloc(*p, c * size);
  *cap = c;
}

/* ---- u64map ---- */

void u64map_init(u64map *m, size_t initial)
{
  size_t c = 16;
  while (c < initial * 2) c *= 2;
  m->e = xmalloc(c * sizeof *m->e);
  for (size_t i = 0; i < c; i++) m->e[i].key = UINT64_MAX;
  m->mask = c - 1;
  m->count = 0;
  m->has_max = 0;
}

void u64map_free(u64map *m)
{
  free(m->e);
  m->e = NULL;
}

uint32_t *u64map_get(const u64map *m, uint64_t key)
{
  if (key == UINT64_MAX) return m->has_max ? (uint32_t *)&m->max_val : NULL;
  size_t i = u64map_home(m, key);
  for (;;) {
    uint64_t k = m->e[i].key;
    if (k == key) return &m->e[i].val;
    if (k == UINT64_MAX) return NULL;
    i = (i + 1) & m->mask;
  }
}

static void u64map_resize(u64map *m)
{
  u64map n;
  u64map_init(&n, (m->mask + 1));
  for (size_t i = 0; i <= m->mask; i++)
    if (m->e[i].key != UINT64_MAX) u64map_put(&n, m->e[i].key, m->e[i].val);
  n.has_max = m->has_max;
  n.max_val = m->max_val;
  u64map_free(m);
  *m = n;
}

int u64map_replace(u64map *m, uint64_t key, uint32_t val, uint32_t *old)
{
  if (key == UINT64_MAX) {
    int had = m->has_max;
    if (had && old) *old = m->max_val;
    m->has_max = 1;
    m->max_val = val;
    return had;
  }
  if ((m->count + 1) * 2 > m->mask + 1) u64map_resize(m);
  size_t i = u64map_home(m, key);
  for (;;) {
    uint64_t k = m->e[i].key;
    if (k == key) {
      if (old) *old = m->e[i].val;
      m->e[i].val = val;
      return 1;
    }
    if (k == UINT64_MAX) {
      m->e[i].key = key;
      m->e[i].val = val;
      m->count++;
      return 0;
    }
    i = (i + 1) & m->mask;
  }
}

void u64map_put(u64map *m, uint64_t key, uint32_t val)
{
  u64map_replace(m, key, val, NULL);
}

int u64map_del(u64map *m, uint64_t key, uint32_t *old)
{
  if (key == UINT64_MAX) {
    if (!m->has_max) return 0;
    if (old) *old = m->max_val;
    m->has_max = 0;
    return 1;
  }
  size_t i = u64map_home(m, key);
  for (;;) {
    uint64_t k = m->e[i].key;
    if (k == UINT64_MAX) return 0;
    if (k == key) break;
    i = (i + 1) & m->mask;
  }
  if (old) *old = m->e[i].val;
  /* Backward-shift: move later members of the run into the hole when
     their home slot does not lie cyclically in (hole, j]. */
  size_t hole = i, j = i;
  for (;;) {
    j = (j + 1) & m->mask;
    uint64_t k = m->e[j].key;
    if (k == UINT64_MAX) break;
    size_t home = u64map_home(m, k);
    int in_range = (hole <= j) ? (hole < home && home <= j)
                               : (hole < home || home <= j);
    if (!in_range) {
      m->e[hole] = m->e[j];
      hole = j;
    }
  }
  m->e[hole].key = UINT64_MAX;
  m->count--;
  return 1;
}

/* ---- idtab ---- */

void idtab_init(idtab *t)
{
  t->ring = xcalloc(IDTAB_WINDOW, sizeof *t->ring);
  t->bits = xcalloc(IDTAB_WINDOW / 64, sizeof *t->bits);
  t->base = 0;
  t->ring_count = 0;
  u64map_init(&t->old, 1024);
}

void idtab_free(idtab *t)
{
  free(t->ring);
  free(t->bits);
  u64map_free(&t->old);
}

static inline int in_window(const idtab *t, uint64_t id)
{
  return id >= t->base && id - t->base < IDTAB_WINDOW;
}

/* Slide the window so that [id] sits in its middle: ring entries whose
   ids fall below the new base move to the map.  Moving by at least half a
   window at a time makes the bitmap scan cost at most 2/64 word tests per
   id in a sequential stream. */
size_t ring_evict(uint64_t *bits, size_t window, uint64_t base, uint64_t nbase,
                  void (*f)(void *u, size_t slot, uint64_t id), void *u)
{
  /* In id order: from base's slot round the ring; base's word is visited
     twice, its upper bits first and its lower bits (the highest ids) last. */
  size_t n = 0, words = window / 64, start = (size_t)(base & (window - 1));
  unsigned s0 = (unsigned)(start % 64);
  for (size_t i = 0; i <= words; i++) {
    size_t w = (start / 64 + i) % words;
    uint64_t mask = i == 0 ? ~0ULL << s0 : i == words ? ~(~0ULL << s0) : ~0ULL;
    uint64_t b = bits[w] & mask;
    while (b) {
      unsigned k = (unsigned)__builtin_ctzll(b);
      b &= b - 1;
      size_t slot = w * 64 + k;
      /* The id held in a slot is the one congruent to it in the window. */
      uint64_t held = base + ((slot - base) & (window - 1));
      if (held < nbase) {
        f(u, slot, held);
        bits[w] &= ~(1ULL << k);
        n++;
      }
    }
  }
  return n;
}

static void idtab_evict(void *u, size_t slot, uint64_t id)
{
  idtab *t = u;
  u64map_put(&t->old, id, t->ring[slot] - 1);
  t->ring[slot] = 0;
}

/* Slide the window so that [id] sits in its middle: ring entries whose
   ids fall below the new base move to the map.  Moving by at least half a
   window at a time makes the bitmap scan cost at most 2/64 word tests per
   id in a sequential stream. */
static void idtab_advance(idtab *t, uint64_t id)
{
  uint64_t nbase = id - IDTAB_WINDOW / 2;
  if (t->ring_count)
    t->ring_count -= ring_evict(t->bits, IDTAB_WINDOW, t->base, nbase, idtab_evict, t);
  t->base = nbase;
}

int idtab_get(idtab *t, uint64_t id, uint32_t *val)
{
  if (in_window(t, id)) {
    uint32_t v = t->ring[id & (IDTAB_WINDOW - 1)];
    if (!v) return 0;
    *val = v - 1;
    return 1;
  }
  uint32_t *p = u64map_get(&t->old, id);
  if (!p) return 0;
  *val = *p;
  return 1;
}

int idtab_replace(idtab *t, uint64_t id, uint32_t val, uint32_t *old)
{
  if (id > t->base && id - t->base >= IDTAB_WINDOW) idtab_advance(t, id);
  if (!in_window(t, id)) return u64map_replace(&t->old, id, val, old);
  size_t slot = id & (IDTAB_WINDOW - 1);
  int had = t->ring[slot] != 0;
  if (had && old) *old = t->ring[slot] - 1;
  if (!had) {
    t->bits[slot / 64] |= 1ULL << (slot % 64);
    t->ring_count++;
  }
  t->ring[slot] = val + 1;
  return had;
}

int idtab_del(idtab *t, uint64_t id, uint32_t *old)
{
  if (!in_window(t, id)) return u64map_del(&t->old, id, old);
  size_t slot = id & (IDTAB_WINDOW - 1);
  if (!t->ring[slot]) return 0;
  if (old) *old = t->ring[slot] - 1;
  t->ring[slot] = 0;
  t->bits[slot / 64] &= ~(1ULL << (slot % 64));
  t->ring_count--;
  return 1;
}

/* ---- strpool ---- */

#define CHUNK_BYTES (64 * 1024)

struct strpool {
  char **chunks;
  size_t nchunks, chunks_cap;
  size_t used;                  /* bytes used in the last chunk */
  size_t last_size;             /* size of the last chunk       */
  const char **strs;            /* id -> string                 */
  uint32_t *lens;
  size_t count, strs_cap;
  uint32_t *table;              /* hash slot -> id + 1, 0 = empty */
  size_t mask;
};

strpool *strpool_new(void)
{
  strpool *p = xcalloc(1, sizeof *p);
  p->mask = 255;
  p->table = xcalloc(p->mask + 1, sizeof *p->table);
  return p;
}

void strpool_free(strpool *p)
{
  if (!p) return;
  for (size_t i = 0; i < p->nchunks; i++) free(p->chunks[i]);
  free(p->chunks);
  free(p->strs);
  free(p->lens);
  free(p->table);
  free(p);
}

static uint32_t fnv1a(const char *s, size_t len)
{
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) { h ^= (uint8_t)s[i]; h *= 16777619u; }
  return h;
}

static char *arena_alloc(strpool *p, size_t n)
{
  if (p->nchunks == 0 || p->used + n > p->last_size) {
    size_t sz = n > CHUNK_BYTES ? n : CHUNK_BYTES;
    grow_array((void **)&p->chunks, &p->chunks_cap, p->nchunks + 1,
               sizeof *p->chunks);
    p->chunks[p->nchunks++] = xmalloc(sz);
    p->last_size = sz;
    p->used = 0;
  }
  char *r = p->chunks[p->nchunks - 1] + p->used;
  p->used += n;
  return r;
}

uint32_t strpool_intern(strpool *p, const char *s, size_t len)
{
  uint32_t h = fnv1a(s, len);
  size_t i = h & p->mask;
  while (p->table[i]) {
    uint32_t id = p->table[i] - 1;
    if (p->lens[id] == len && memcmp(p->strs[id], s, len) == 0) return id;
    i = (i + 1) & p->mask;
  }
  char *d = arena_alloc(p, len + 1);
  memcpy(d, s, len);
  d[len] = 0;
  size_t cap = p->strs_cap;
  grow_array((void **)&p->strs, &p->strs_cap, p->count + 1, sizeof *p->strs);
  if (p->strs_cap != cap)
    p->lens = xrealloc(p->lens, p->strs_cap * sizeof *p->lens);
  uint32_t id = (uint32_t)p->count++;
  p->strs[id] = d;
  p->lens[id] = (uint32_t)len;
  p->table[i] = id + 1;
  if (p->count * 2 > p->mask + 1) {
    size_t nmask = p->mask * 2 + 1;
    uint32_t *nt = xcalloc(nmask + 1, sizeof *nt);
    for (uint32_t k = 0; k < p->count; k++) {
      size_t j = fnv1a(p->strs[k], p->lens[k]) & nmask;
      while (nt[j]) j = (j + 1) & nmask;
      nt[j] = k + 1;
    }
    free(p->table);
    p->table = nt;
    p->mask = nmask;
  }
  return id;
}

const char *strpool_get(const strpool *p, uint32_t id)
{
  return id < p->count ? p->strs[id] : "";
}

size_t strpool_len(const strpool *p, uint32_t id) { return id < p->count ? p->lens[id] : 0; }

uint32_t strpool_count(const strpool *p) { return (uint32_t)p->count; }

/* Length of the valid UTF-8 sequence at s (1-4), or 0. */
int utf8_seq_len(const unsigned char *s)
{
  unsigned c = s[0];
  int n;
  unsigned min;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) { n = 2; min = 0x80; }
  else if (c >= 0xE0 && c <= 0xEF) { n = 3; min = 0x800; }
  else if (c >= 0xF0 && c <= 0xF4) { n = 4; min = 0x10000; }
  else return 0;
  unsigned v = c & (0x3F >> (n - 1));
  for (int i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    v = v << 6 | (s[i] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  return n;
}
