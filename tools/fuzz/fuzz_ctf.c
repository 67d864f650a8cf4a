/* fuzz_ctf.c: libFuzzer harness for the memtrace CTF reader.

   Opens the input as a CTF trace from memory, reads every event, and
   touches everything a consumer would: each stack entry must resolve to a
   location (ids 1..count), each location entry's strings are read.  Any
   crash, sanitizer report, hang or runaway allocation is a bug: the reader
   promises errors, never undefined behaviour. */

#include <stdint.h>
#include <string.h>

#include "ctf_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char err[256];
  ctf_reader *r = ctf_reader_open_mem(data, size, err, sizeof err);
  if (!r) return 0;
  mpt_event ev;
  size_t sink = 0;
  while (ctf_reader_next(r, &ev) == CTF_OK) {
    for (uint32_t i = 0; i < ev.stack_len; i++) {
      const mpt_location *l = ctf_reader_location(r, ev.stack[i]);
      if (!l) __builtin_trap();         /* contract: stack ids resolve */
      for (uint32_t k = 0; k < l->n; k++)
        sink += strlen(l->entries[k].file) + strlen(l->entries[k].function);
    }
  }
  (void)sink;
  ctf_reader_close(r);
  return 0;
}
