/* lifecube_test.c: the cells' 32-bit counts stay exact past 2^32, through
   additions, a bin doubling that merges cells, and a table growth. */

#include <stdio.h>

#include "lifecube.h"

static int failed;

static void expect(const char *what, uint64_t got, uint64_t want)
{
  if (got != want) {
    printf("%s: %llu, expected %llu\n", what, (unsigned long long)got, (unsigned long long)want);
    failed = 1;
  }
}

int main(void)
{
  lifecube q;
  lifecube_init(&q, 4, 1000);
  /* Two cells of one stack, in bins 0 and 1: 3 x 3e9 samples each, all
     promoted; bin 1's block is allocated at 1000 ns. */
  an_sample s = { .node = 7, .nsamples = 3000000000u, .wosize = 1, .t_collect = AN_NEVER, .promoted = 1 };
  for (int bin = 0; bin < 2; bin++) {
    s.t_alloc = 1000u * (unsigned)bin;
    for (int k = 0; k < 3; k++) lifecube_add(&q, &s, 8, 0, 0);
  }
  expect("cells before the doubling", q.n, 2);
  expect("samples of bin 1", lifecube_count(&q, 1, LC_SAMPLES), 9000000000u);
  /* Time 4000 ns doubles the width: bins 0 and 1 merge into cell 0. */
  lifecube_cover(&q, 4000);
  expect("cells after the doubling", q.n, 1);
  expect("merged samples", lifecube_count(&q, 0, LC_SAMPLES), 18000000000u);
  expect("merged promoted", lifecube_count(&q, 0, LC_PROMOTED), 18000000000u);
  expect("merged blocks", lifecube_count(&q, 0, LC_BLOCKS), 6);
  /* Enough other stacks to regrow the table twice: the carries follow. */
  s.nsamples = 1;
  s.promoted = 0;
  for (uint32_t node = 100; node < 3000; node++) { s.node = node; lifecube_add(&q, &s, 8, 0, 0); }
  expect("cell 0's samples after table growth", lifecube_count(&q, 0, LC_SAMPLES), 18000000000u);
  expect("a small cell", lifecube_count(&q, 1, LC_SAMPLES), 1);
  lifecube_free(&q);
  printf(failed ? "failed\n" : "ok: counts exact past 2^32 through merges and table growth\n");
  return failed;
}
