/* writer_test: the trace writer (runtime/memprof_trace_writer.c) on its
   own, under AddressSanitizer/UBSan when the compiler has them.

   - path templates: %p %t %e %% expand exactly; twenty %e of a 255-byte
     executable name (a 5 KB path) is refused by open(2) with one stderr
     line, never written past a buffer;
   - names: a second trace of this process under one name gets NAME.2;
   - exclusivity: a file another writer holds (flock) is left untouched
     and the trace goes to NAME.PID;
   - time follows CLOCK_MONOTONIC, through the TSC once calibrated, and
     restarts at 0 with the next trace;
   - a header that cannot be written (RLIMIT_FSIZE 0) leaves no file.
   Runs in the directory given as argv[1].  Prints "N passed, N failed". */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define CAML_INTERNALS
#include "caml/memprof_trace_writer.h"

static int passed, failed;
static void check(int ok, const char *what)
{
  if (ok) passed++; else { failed++; printf("FAIL: %s\n", what); }
}

static mpt_trace_info info(const char *exe)
{
  mpt_trace_info i = { .format_version = MPT_FORMAT_VERSION, .word_size = 64,
    .flags = MPT_FLAG_COMPRESSED, .sampling_rate = 1e-3, .max_frames = 16,
    .time_unit_ns = 1000, .pid = (uint64_t)getpid(),
    .executable = exe, .hostname = "h", .ocaml_version = "v", .command_line = "c" };
  return i;
}

/* A complete trace (header and END) that the reader accepts. */
static int decodes(const char *path)
{
  char err[256];
  mpt_reader *r = mpt_reader_open(path, err, sizeof err);
  if (!r) return 0;
  mpt_event ev;
  while (mpt_reader_next(r, &ev) == MPT_OK) {}
  uint64_t t, n, l;
  int ended = mpt_reader_end_info(r, &t, &n, &l);
  mpt_reader_close(r);
  return ended;
}

static int exists(const char *p) { struct stat st; return stat(p, &st) == 0; }

static uint64_t mono_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

/* The trace, opened between [before] and [after], reads a time between
   CLOCK_MONOTONIC's since [after] and since [before] (read around it, so
   that a preemption anywhere widens the interval instead of failing), to
   0.1 % + 2 ms. */
static int clock_agrees(uint64_t before, uint64_t after)
{
  uint64_t lo = mono_us() - after, t = caml_trace_writer_now(), hi = mono_us() - before;
  return t + lo / 1000 + 2000 >= lo && t <= hi + hi / 1000 + 2000;
}

int main(int argc, char **argv)
{
  if (argc != 2 || chdir(argv[1]) != 0) { fprintf(stderr, "usage: writer_test DIR\n"); return 2; }
  char exe[300], name[6000], want[6000];
  memset(exe, 'x', 255); exe[255] = 0;

  /* expansion */
  mpt_trace_info i = info("/some/dir/prog");
  long before = (long)time(NULL);
  check(caml_trace_writer_open("e-%e-p%p-%%-t%t.trace", &i) == 0, "open with every directive");
  caml_trace_writer_close(0, 0);
  int found = 0;
  for (long t = before; t <= (long)time(NULL); t++) {
    snprintf(want, sizeof want, "e-prog-p%ld-%%-t%ld.trace", (long)getpid(), t);
    found |= exists(want) && decodes(want);
  }
  check(found, "%e %p %% %t expand to the basename, pid, % and time");

  i = info(exe);
  name[0] = 0;
  for (int k = 0; k < 20; k++) strcat(name, "%e");
  check(caml_trace_writer_open(name, &i) < 0, "20 x %e of a 255-byte name: refused");
  check(!caml_trace_writer_is_open(), "20 x %e: nothing open");

  /* one process, one name: the second trace is NAME.2, the third NAME.3 */
  i = info("prog");
  for (int k = 0; k < 3; k++) {
    check(caml_trace_writer_open("again.trace", &i) == 0, "open again.trace");
    caml_trace_writer_close(0, 0);
  }
  check(decodes("again.trace") && decodes("again.trace.2") && decodes("again.trace.3"),
        "three traces of one process under one name: three files");

  /* a file another writer holds */
  int fd = open("busy.trace", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  check(fd >= 0 && write(fd, "keep", 4) == 4 && flock(fd, LOCK_EX | LOCK_NB) == 0,
        "hold busy.trace");
  check(caml_trace_writer_open("busy.trace", &i) == 0, "open busy.trace");
  caml_trace_writer_close(0, 0);
  snprintf(want, sizeof want, "busy.trace.%ld", (long)getpid());
  struct stat st;
  check(stat("busy.trace", &st) == 0 && st.st_size == 4, "the held file is untouched");
  check(decodes(want), "the trace went to busy.trace.PID");
  close(fd);

  /* time: the trace's clock is CLOCK_MONOTONIC's since the open, also
     after the switch to the TSC (5 to 100 ms into the first trace, where the
     kernel's clock source is the TSC); it never goes back by more than
     the unit the switch may cost, and the next trace starts at 0 */
  uint64_t opened = mono_us();
  check(caml_trace_writer_open("time.trace", &i) == 0, "open time.trace");
  uint64_t after = mono_us(), last = 0, t;
  int back = 0;
  while (mono_us() - after < 400000) {
    t = caml_trace_writer_now();
    if (t + 1 < last) back++;
    if (t > last) last = t;
  }
  check(back == 0, "time: never back by more than one unit in 400 ms of readings");
  check(clock_agrees(opened, after), "time: after 400 ms, CLOCK_MONOTONIC's within 0.1 % + 2 ms");
  FILE *cs = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  char src[16] = "";
  if (cs) { if (!fgets(src, sizeof src, cs)) src[0] = 0; fclose(cs); }
#if defined(__x86_64__)
  if (strcmp(src, "tsc\n") == 0)
    check(caml_trace_writer_uses_tsc(), "time: read through the TSC after 400 ms (clock source tsc)");
#endif
  caml_trace_writer_close(0, 0);
  opened = mono_us();
  check(caml_trace_writer_open("time2.trace", &i) == 0, "open time2.trace");
  after = mono_us();
  check(caml_trace_writer_now() <= mono_us() - opened + 2000, "time: a new trace starts at 0");
  usleep(300000);
  check(clock_agrees(opened, after), "time: a sleep of 300 ms in the new trace, CLOCK_MONOTONIC's");
  caml_trace_writer_close(0, 0);

  /* a header that cannot be written */
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit rl = { 0, 0 }, old;
  getrlimit(RLIMIT_FSIZE, &old);
  rl.rlim_max = old.rlim_max;
  setrlimit(RLIMIT_FSIZE, &rl);
  check(caml_trace_writer_open("nohdr.trace", &i) < 0, "header not writable: refused");
  setrlimit(RLIMIT_FSIZE, &old);
  check(!exists("nohdr.trace"), "header not writable: no file left");

  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
