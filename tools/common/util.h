/* util.h: small containers shared by the reader and the analyses.

   - u64 -> u32 open-addressing hash map with linear probing and
     backward-shift deletion (no tombstones, so a long run of inserts and
     deletes, as in the live-object table, never degrades).  Keys and values
     share one entry (one cache miss per look-up), and the hash keeps runs
     of 8 consecutive keys in 8 consecutive slots: block ids are allocated
     in sequence and mostly die young, so the live table's accesses stay in
     recently touched cache lines instead of missing on every event;
   - a string interner whose strings live in an append-only arena, so the
     `const char *` handed out stay valid for the interner's lifetime (the
     event model's mpt_loc_entry points at them);
   - checked allocation: out of memory is reported and exits, since no
     analysis can continue without memory. */

#ifndef OCAML_MEMPROF_UTIL_H
#define OCAML_MEMPROF_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* The subcommand being run ("top"; "" before dispatch), and a message on
   stderr prefixed "ocaml-memprof top: " ([fmt] ends with its newline). */
extern const char *msg_cmd;
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Grow *p (element size [size]) so that it holds at least [need] elements. */
void grow_array(void **p, size_t *cap, size_t need, size_t size);

/* ---- u64 -> u32 hash map (UINT64_MAX marks empty slots and is stored
   apart when used as a key) ---- */
typedef struct {
  uint64_t key;         /* UINT64_MAX: empty */
  uint32_t val;
} u64entry;

typedef struct {
  u64entry *e;
  size_t mask;          /* capacity - 1, capacity a power of two >= 16 */
  size_t count;         /* entries in e[] */
  int has_max;          /* key UINT64_MAX present, with value max_val */
  uint32_t max_val;
} u64map;

void u64map_init(u64map *m, size_t initial_capacity);
void u64map_free(u64map *m);
/* Returns a pointer to the value of [key] or NULL. */
uint32_t *u64map_get(const u64map *m, uint64_t key);
/* Inserts (or overwrites) [key]. */
void u64map_put(u64map *m, uint64_t key, uint32_t val);
/* Same, in one probe sequence: returns 1 and the replaced value in *old
   when [key] was present, 0 otherwise. */
int u64map_replace(u64map *m, uint64_t key, uint32_t val, uint32_t *old);
/* Removes [key]; returns 1 if it was present (its value in *old). */
int u64map_del(u64map *m, uint64_t key, uint32_t *old);

static inline uint64_t mix64(uint64_t x)
{
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/* Home slot: groups of 8 consecutive keys go to one random, 8-aligned
   place. */
static inline size_t u64map_home(const u64map *m, uint64_t key)
{
  return (size_t)((mix64(key >> 3) << 3) | (key & 7)) & m->mask;
}

/* ---- id table: u64 -> u32 for keys that arrive mostly in sequence ----
   Object ids are handed out in sequence and most objects die young.  Ids
   within a window of IDTAB_WINDOW ending at the largest id seen live in a
   direct-mapped ring (no hashing, sequential memory); an id that leaves
   the window while still present moves once into a u64map, as does any id
   that arrives below the window.  The window moves by at least half its
   size at a time, and a bitmap of occupied ring slots bounds each move to
   IDTAB_WINDOW/64 word tests, even when ids jump far (hostile files). */
#define IDTAB_WINDOW (1u << 16)

typedef struct {
  uint32_t *ring;       /* value + 1, 0 = empty; index id & (WINDOW-1) */
  uint64_t *bits;       /* occupied ring slots */
  uint64_t base;        /* window = [base, base + WINDOW) */
  size_t ring_count;
  u64map old;           /* everything outside the window */
} idtab;

/* For rings of [window] slots (a power of two, at least 64) holding the
   ids [base, base + window) at slot id % window, occupied slots marked in
   [bits]: call f(u, slot, id), in increasing id order, for every occupied
   slot whose id is below [nbase] and clear its bit.  Returns how many. */
size_t ring_evict(uint64_t *bits, size_t window, uint64_t base, uint64_t nbase,
                  void (*f)(void *u, size_t slot, uint64_t id), void *u);

void idtab_init(idtab *t);
void idtab_free(idtab *t);
/* Returns 1 and the value in *val when [id] is present. */
int idtab_get(idtab *t, uint64_t id, uint32_t *val);
/* Insert or replace; returns 1 and the previous value when present. */
int idtab_replace(idtab *t, uint64_t id, uint32_t val, uint32_t *old);
int idtab_del(idtab *t, uint64_t id, uint32_t *old);

/* ---- positions of increasing ids (a swept snapshot's blocks, whose
   ids have gaps): through a table by id where the ids are dense enough
   (at most 4 per position, and 1024), else a binary search, so that no
   memory is sized by the largest id alone (which a trace states) ---- */
typedef struct {
  const uint32_t *ids;          /* increasing, not owned */
  size_t n;
  uint32_t *tab;                /* by id: 1 + position, 0; or NULL */
  size_t ntab;
} id_index;
void id_index_init(id_index *x, const uint32_t *ids, size_t n);
/* 1 + the position of [id] in the ids, or 0 if it is not there. */
uint32_t id_index_find(const id_index *x, uint64_t id);
void id_index_free(id_index *x);

/* ---- string interner: equal strings get the same id and pointer ---- */
typedef struct strpool strpool;
strpool *strpool_new(void);
void strpool_free(strpool *p);
/* Intern [len] bytes; returns the id (0-based, dense). */
uint32_t strpool_intern(strpool *p, const char *s, size_t len);
const char *strpool_get(const strpool *p, uint32_t id);
/* The length of string [id] (interned bytes may hold NULs). */
size_t strpool_len(const strpool *p, uint32_t id);
uint32_t strpool_count(const strpool *p);

/* Length (1-4) of the valid UTF-8 sequence starting at [s], 0 when the
   bytes there are not valid UTF-8 (overlong, surrogate, cut short...). */
int utf8_seq_len(const unsigned char *s);

#endif
