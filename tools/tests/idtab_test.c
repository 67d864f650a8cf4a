/* idtab_test.c: idtab (util.h) against a plain u64map as the reference.

   Mixed workloads with a fixed seed: mostly sequential ids with young
   deaths and long-lived survivors (the normal trace shape), ids far below
   the window, far jumps ahead, and ids near 2^64; every operation's result
   is compared with the reference.  Then a hostile sequence (every id
   half a window past the previous) must finish quickly: it exercises the
   bound on window moves.  Prints "ok" or the first mismatch; exit 1. */

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "util.h"

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

int main(void)
{
  idtab t;
  u64map ref;
  idtab_init(&t);
  u64map_init(&ref, 16);
  uint64_t seq = 0;
  uint64_t *ids = malloc(sizeof *ids * 2000000);
  size_t nids = 0;
  for (long op = 0; op < 2000000; op++) {
    uint64_t r = next() % 100, id;
    if (r < 60) id = seq++;                              /* new, in sequence */
    else if (r < 85 && nids) id = ids[next() % nids];    /* a known id */
    else if (r < 90) id = next() % (seq + 1);            /* anywhere below */
    else if (r < 93) id = (seq += next() % (3 * IDTAB_WINDOW));  /* jump */
    else if (r < 94) id = UINT64_MAX - next() % 1000;           /* extreme */
    else id = next();
    if (nids < 2000000) ids[nids++] = id;
    uint32_t a = 0, b = 0, v = (uint32_t)op;
    int ka, kb;
    switch (next() % 3) {
    case 0:
      ka = idtab_replace(&t, id, v, &a);
      kb = u64map_replace(&ref, id, v, &b);
      break;
    case 1:
      ka = idtab_del(&t, id, &a);
      kb = u64map_del(&ref, id, &b);
      break;
    default:
      ka = idtab_get(&t, id, &a);
      { uint32_t *p = u64map_get(&ref, id); kb = p != NULL; if (p) b = *p; }
    }
    if (ka != kb || (ka && a != b)) {
      printf("mismatch at op %ld id %llu: %d/%u vs %d/%u\n", op,
             (unsigned long long)id, ka, a, kb, b);
      return 1;
    }
  }
  idtab_free(&t);
  /* Hostile: each id moves the window. */
  idtab_init(&t);
  clock_t c0 = clock();
  uint64_t id = 0;
  for (long k = 0; k < 200000; k++) {
    idtab_replace(&t, id, 1, NULL);
    if (k % 2) idtab_del(&t, id - (IDTAB_WINDOW / 2 + 1), NULL);
    id += IDTAB_WINDOW / 2 + 1;
  }
  double s = (double)(clock() - c0) / CLOCKS_PER_SEC;
  idtab_free(&t);
  u64map_free(&ref);
  free(ids);
  if (s > 5) { printf("hostile id sequence took %.1f s\n", s); return 1; }
  printf("ok (hostile sequence: %.2f s)\n", s);
  return 0;
}
