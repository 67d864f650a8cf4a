/* presets.h: named sets of frames to hide (--preset NAME).

   A preset is a name and a POSIX extended regex matched, like --hide's,
   against the function and file names of a frame.  Built-in presets name
   the frames of Lwt, Async, Eio, the standard library and the runtime;
   users add theirs, one "name = regex" per line, in
   $XDG_CONFIG_HOME/ocaml-memprof/presets (~/.config/ocaml-memprof/presets
   when XDG_CONFIG_HOME is not set) or in the file --presets-file names.
   A user preset with a built-in's name replaces it.

   A built-in preset may keep some of its frames: the lwt preset keeps
   Lwt_main.run, whose frame then stands for what Lwt's loop allocates on
   its own (for its own callbacks: Lwt_io's auto-flush, Lwt_unix's jobs
   and events), which no frame of the program registered and which went
   to the program's entry, the frame that calls Lwt_main.run.

   The scheduler presets (Lwt, Async, Eio) also drive the hint that
   top, leaks and flamegraph print when most of their top sites are a
   scheduler's own code (presets_hint). */

#ifndef OCAML_MEMPROF_PRESETS_H
#define OCAML_MEMPROF_PRESETS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  char *name, *regex;
  const char *keep;            /* functions the preset leaves visible (a
                                  regex, matched against the function of
                                  each frame of a location), or NULL */
  int builtin;                 /* not (re)defined by the user's file */
  const char *scheduler;       /* "Lwt", "Async", "Eio": whose code, or NULL */
} preset;

typedef struct {
  preset *v;
  size_t n, cap;
} preset_table;

/* The built-in presets, then those of [file] (NULL: the default file,
   which may be absent).  0, or -1 with a one-line message in [err]: an
   unreadable --presets-file, a malformed line ("FILE:LINE: ...") or a
   regex that does not compile; *t then holds the built-ins and the
   presets of the lines before the bad one.  Free *t in both cases. */
int presets_load(preset_table *t, const char *file, char *err, size_t errlen);
void presets_free(preset_table *t);
const preset *presets_find(const preset_table *t, const char *name);
/* "lwt, async, eio, stdlib, runtime, mine": the names, for messages. */
void presets_names(const preset_table *t, char *buf, size_t n);

/* The file --presets-file names in argv (the last one), or NULL. */
const char *presets_file_arg(int argc, char **argv);

/* Hint for a table whose first [n] sites have innermost locations [locs]
   (analysis.h ids; 0 for no site), when filter [f] hides nothing: if at
   least half of them, and 3 or more, are one scheduler's code, print on
   stderr "hint: K of the top N sites are in Lwt's code; try --preset
   lwt" (stderr, so that --json and --csv output stay as they are).  The
   scheduler presets are the built-in ones. */
#define HINT_ROWS 10            /* the top rows a hint looks at */
struct an_ctx;
struct an_filter;
void presets_hint(struct an_ctx *c, const struct an_filter *f, const uint32_t *locs, size_t n);
/* The same for a view without a table (flamegraph): [value] per location
   id (an_location_count + 1 entries), sites being functions as in top. */
void presets_hint_by_location(struct an_ctx *c, const struct an_filter *f, const double *value);

#endif
