/* fuzz_memprof.c: libFuzzer harness for the 5.3.0+memprof decoder (the
   shared codec, runtime/memprof_trace_codec.c), as the tools use it.

   Reads every event and resolves every stack entry and location string;
   the codec's contract is that malformed or cut input yields MPT_ERR or a
   truncated end, never undefined behaviour. */

#include <stdint.h>
#include <string.h>

#include "memprof_trace_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char err[256];
  mpt_reader *r = mpt_reader_open_mem(data, size, err, sizeof err);
  if (!r) return 0;
  mpt_event ev;
  size_t sink = 0;
  while (mpt_reader_next(r, &ev) == MPT_OK) {
    for (uint32_t i = 0; i < ev.stack_len; i++) {
      const mpt_location *l = mpt_reader_location(r, ev.stack[i]);
      if (!l) __builtin_trap();
      for (uint32_t k = 0; k < l->n; k++)
        sink += strlen(l->entries[k].file ? l->entries[k].file : "") +
                strlen(l->entries[k].function ? l->entries[k].function : "");
    }
  }
  (void)sink;
  mpt_reader_close(r);
  return 0;
}
