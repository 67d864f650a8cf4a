/* fuzz_header.c: libFuzzer harness for what the tools take from the
   strings of a trace's header: the executable's path (whose symbol table
   retainers and report read to name module roots: elf_symbols.c), the
   host name, OCaml version and command line (printed by info, exported by
   pprof, ctf and report).  Mutating whole traces rarely keeps a header
   valid while changing its strings; here the strings are the input.

   Input: byte 0 chooses how the executable is named (below); then the
   executable's path, the host name, the OCaml version, the command line
   and the label of a second global root, each ended by a NUL byte (a
   missing one ends the input's strings); what follows is the content of
   the file named as executable in mode 1.  Bit 7 of byte 0: sampling rate
   0.01 (else 0: snapshots only).  Modes (bits 0-6 modulo 7):
     0  the path as given: any path of this machine (only a regular file
        is ever opened, and only read)
     1  a file holding the rest of the input: the ELF reader on any bytes
        (fuzz/corpus/header-*-elf.bin are small valid symbol tables)
     2  a FIFO   3  /dev/zero   4  a directory   5  a missing file
     6  /proc/self/mem (a regular file whose reads fail)
   The trace written from these has a heap snapshot whose caml_globals is
   at 0x2000 and two global roots, labelled 0x1000 and the input's label,
   each holding a block; info (--json), retainers (plain, --json), report,
   pprof and ctf read it in process.

   What counts as a bug: any sanitizer report, crash, hang (libFuzzer's
   -timeout: a FIFO opened for reading waits for a writer), runaway
   allocation, an exit status other than 0 or 1, and any call to exit(). */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "memprof_trace_codec.h"
#include "util.h"

#define CHUNK (64 * 1024)

static char dir_path[64], trace_path[96], exe_path[96], fifo_path[96], missing_path[96],
  out_path[96];

static void cleanup(void)
{
  unlink(trace_path);
  unlink(exe_path);
  unlink(fifo_path);
  unlink(out_path);
  rmdir(dir_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc; (void)argv;
  snprintf(dir_path, sizeof dir_path, "/tmp/fuzz-header-%ld.d", (long)getpid());
  if (mkdir(dir_path, 0700) != 0 && errno != EEXIST) abort();
  snprintf(trace_path, sizeof trace_path, "%s/in.trace", dir_path);
  snprintf(exe_path, sizeof exe_path, "%s/exe", dir_path);
  snprintf(fifo_path, sizeof fifo_path, "%s/fifo", dir_path);
  snprintf(missing_path, sizeof missing_path, "%s/missing", dir_path);
  snprintf(out_path, sizeof out_path, "%s/out", dir_path);
  if (mkfifo(fifo_path, 0600) != 0 && errno != EEXIST) abort();
  atexit(cleanup);
  int null = open("/dev/null", O_WRONLY);
  if (null < 0 || dup2(null, 1) < 0) abort();
  close(null);
  return 0;
}

/* The next NUL-ended string of [data] from *pos, at most MPT_MAX_STRING
   bytes, in a new buffer ("" past the end). */
static char *next_string(const uint8_t *data, size_t size, size_t *pos)
{
  size_t start = *pos, end = start;
  while (end < size && data[end]) end++;
  *pos = end < size ? end + 1 : size;
  size_t len = end - start > MPT_MAX_STRING ? MPT_MAX_STRING : end - start;
  char *s = malloc(len + 1);
  if (!s) abort();
  memcpy(s, data + start, len);
  s[len] = 0;
  return s;
}

static uint8_t chunk[CHUNK + 64 * 1024];

/* Write the encoder's bytes as one chunk of [type]. */
static void flush(FILE *f, mpt_encoder *enc, enum mpt_chunk_type type)
{
  size_t used = mpt_enc_used(enc);
  if (used) {
    uint8_t hdr[MPT_CHUNK_HEADER_BYTES];
    mpt_chunk_header(hdr, type, 0, (uint32_t)used);
    fwrite(hdr, 1, sizeof hdr, f);
    fwrite(chunk, 1, used, f);
  }
  mpt_enc_reset_buffer(enc, chunk, CHUNK);
}

static void write_trace(const mpt_trace_info *info, const char *label)
{
  FILE *f = fopen(trace_path, "wb");
  if (!f) abort();
  static uint8_t h[MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES + 128 + 4 * (MPT_MAX_STRING + 10)];
  size_t n = mpt_write_header_chunk(h, sizeof h, info);
  if (!n) abort();
  fwrite(h, 1, n, f);
  static uint32_t stack[16];
  mpt_encoder enc;
  mpt_enc_init(&enc, chunk, CHUNK, stack, 16);
  mpt_snap_encoder s;
  mpt_enc_snap_begin(&enc, &s, 20, 1, 0x2000, 1);
  mpt_enc_snap_string(&enc, 1, "0x1000", 6);
  mpt_enc_snap_string(&enc, 2, label, strlen(label));
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, 1, 0, 1);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, 2, 0, 2);
  mpt_enc_snap_block(&enc, &s, 0, 2, NULL, 0, UINT64_MAX);
  mpt_enc_snap_block(&enc, &s, 0, 3, NULL, 0, UINT64_MAX);
  mpt_enc_snap_end(&enc, &s, 30, 1000, 0, 0);
  flush(f, &enc, MPT_CHUNK_SNAPSHOT);
  uint8_t e[64];
  n = mpt_write_end_chunk(e, sizeof e, 1000000, 0, 0);
  fwrite(e, 1, n, f);
  if (fclose(f)) abort();
}

static void run(int (*cmd)(int, char **), const char *name, const char *opt)
{
  char *argv[6];
  int argc = 0;
  argv[argc++] = (char *)name;
  if (opt) argv[argc++] = (char *)opt;
  if (opt && !strcmp(opt, "-o")) argv[argc++] = out_path;
  argv[argc++] = trace_path;
  argv[argc] = NULL;
  msg_cmd = name;
  int rc = cmd(argc, argv);
  fflush(stdout);
  if (rc != 0 && rc != 1) {
    fprintf(stderr, "fuzz_header: %s exited with status %d\n", name, rc);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size == 0) return 0;
  size_t pos = 1;
  char *exe = next_string(data, size, &pos), *host = next_string(data, size, &pos);
  char *version = next_string(data, size, &pos), *command = next_string(data, size, &pos);
  char *label = next_string(data, size, &pos);
  const char *named = exe;
  switch ((data[0] & 0x7F) % 7) {
  case 1: {
    FILE *f = fopen(exe_path, "wb");
    if (!f) abort();
    if (size > pos && fwrite(data + pos, 1, size - pos, f) != size - pos) abort();
    if (fclose(f)) abort();
    named = exe_path;
    break;
  }
  case 2: named = fifo_path; break;
  case 3: named = "/dev/zero"; break;
  case 4: named = dir_path; break;
  case 5: named = missing_path; break;
  case 6: named = "/proc/self/mem"; break;
  }
  mpt_trace_info info = { .format_version = MPT_FORMAT_VERSION, .word_size = 64,
    .sampling_rate = data[0] & 0x80 ? 0.01 : 0, .max_frames = 16, .time_unit_ns = 1000, .pid = 1,
    .executable = named, .hostname = host, .ocaml_version = version, .command_line = command };
  write_trace(&info, label);
  run(cmd_info, "info", NULL);
  run(cmd_info, "info", "--json");
  run(cmd_retainers, "retainers", NULL);
  run(cmd_retainers, "retainers", "--json");
  run(cmd_report, "report", "-o");
  run(cmd_pprof, "pprof", "-o");
  run(cmd_ctf, "ctf", "-o");
  free(exe); free(host); free(version); free(command); free(label);
  return 0;
}
