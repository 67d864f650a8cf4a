#!/bin/bash
# testsuite/stress.sh PREFIX: run.sh's concurrency stress tests alone, with
# many runs (`make stress`): 30 keep-alive runs for each of 1, 2 and 4
# domains, 300 runs of domains terminating while the heap is compacted,
# 300 of each upstream Gc.Memprof program (untraced and traced), and 1,000
# exits with cleanup after a join (untraced and traced).  `make test` runs
# a bounded share of the same tests (2, 10, 30 and 300 runs).  Override
# with KEEP_RUNS=N ORPHAN_RUNS=N GCM_RUNS=N JOIN_RUNS=N.  Last line:
# "N passed, N failed".
export KEEP_RUNS=${KEEP_RUNS:-30} ORPHAN_RUNS=${ORPHAN_RUNS:-300} GCM_RUNS=${GCM_RUNS:-300} \
  JOIN_RUNS=${JOIN_RUNS:-1000} STRESS_ONLY=1
export TEST_WORKDIR=${TEST_WORKDIR:-$(cd "$(dirname "$0")/.." && pwd)/_build/stress}
exec "$(dirname "$0")/run.sh" "$@"
