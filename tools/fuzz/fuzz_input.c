/* fuzz_input.c: libFuzzer harness for trace_input (format detection and
   dispatch), i.e. the path every ocaml-memprof command takes: whatever the
   first bytes say, opening and iterating must fail cleanly or succeed. */

#include <stdint.h>

#include "trace_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char err[256];
  ti_trace *t = ti_open_mem(data, size, err, sizeof err);
  if (!t) return 0;
  mpt_event ev;
  while (ti_next(t, &ev) == TI_OK) {
    for (uint32_t i = 0; i < ev.stack_len; i++)
      if (!ti_location(t, ev.stack[i])) __builtin_trap();
  }
  (void)ti_truncated(t);
  ti_close(t);
  return 0;
}
