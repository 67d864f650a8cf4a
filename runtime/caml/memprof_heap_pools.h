/* memprof_heap_pools.h: the major heap's pools and large allocations, for
   the heap snapshot's sweep (memprof_heap_snapshot.c).

   The pools and large allocations of a heap are private to shared_heap.c,
   whose structures no other file sees.  This header is included twice:
   by memprof_heap_snapshot.c for the declarations, and once at the end of
   shared_heap.c (the only hunk there), with
   CAML_MEMPROF_HEAP_POOLS_DEFINE, for the definitions, which only read
   the lists.

   Contract: called with every domain stopped (the snapshot's STW
   section, or a forked child's copy of it), after sweeping has finished
   (the lists to sweep are then empty, and read all the same).  A pool is
   given as its first slot's header, its end and its slots' size in
   words, with the header of every slot (0: free); a large allocation as
   its block's header. */

#ifndef CAML_MEMPROF_HEAP_POOLS_H
#define CAML_MEMPROF_HEAP_POOLS_H

#ifdef CAML_INTERNALS

typedef void (*caml_memprof_pool_fn)(void *data, header_t *first,
                                     header_t *end, mlsize_t slot_wsize);
typedef void (*caml_memprof_large_fn)(void *data, header_t *hp);

/* The pools and large allocations of [heap], or, where [heap] is NULL,
   those that terminated domains left (the orphaned ones). */
void caml_memprof_heap_pools(struct caml_heap_state *heap,
                             caml_memprof_pool_fn pool_fn,
                             caml_memprof_large_fn large_fn, void *data);

#ifdef CAML_MEMPROF_HEAP_POOLS_DEFINE
static void memprof_pool_list(pool *a, caml_memprof_pool_fn pool_fn,
                              void *data)
{
  for (; a != NULL; a = a->next)
    pool_fn(data, POOL_FIRST_BLOCK(a, a->sz), POOL_END(a),
            wsize_sizeclass[a->sz]);
}

static void memprof_large_list(large_alloc *a, caml_memprof_large_fn large_fn,
                               void *data)
{
  for (; a != NULL; a = a->next)
    large_fn(data, (header_t *)((char *)a + LARGE_ALLOC_HEADER_SZ));
}

void caml_memprof_heap_pools(struct caml_heap_state *heap,
                             caml_memprof_pool_fn pool_fn,
                             caml_memprof_large_fn large_fn, void *data)
{
  for (sizeclass sz = 1; sz < NUM_SIZECLASSES; sz++) {
    if (heap == NULL) {
      memprof_pool_list(atomic_load_relaxed(&pool_freelist.global_avail_pools[sz]),
                        pool_fn, data);
      memprof_pool_list(atomic_load_relaxed(&pool_freelist.global_full_pools[sz]),
                        pool_fn, data);
      continue;
    }
    memprof_pool_list(heap->avail_pools[sz], pool_fn, data);
    memprof_pool_list(heap->full_pools[sz], pool_fn, data);
    memprof_pool_list(heap->unswept_avail_pools[sz], pool_fn, data);
    memprof_pool_list(heap->unswept_full_pools[sz], pool_fn, data);
  }
  if (heap == NULL) {
    memprof_large_list(pool_freelist.global_large, large_fn, data);
  } else {
    memprof_large_list(heap->swept_large, large_fn, data);
    memprof_large_list(heap->unswept_large, large_fn, data);
  }
}
#endif /* CAML_MEMPROF_HEAP_POOLS_DEFINE */

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_HEAP_POOLS_H */
