/* types.c: types of allocation sites, from the helper ocaml-memprof-types
   (see types.h and tools/types/ocaml_memprof_types.ml for its protocol). */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "types.h"
#include "util.h"

struct types_map {
  strpool *strs;               /* chains, types, file names */
  u64map chain_type;           /* chain string id -> type string id */
  u64map missing, stale;       /* file string id -> 1 */
  uint32_t *node_chain;        /* per node: chain string id + 1 (0: none) */
  const char **node_reason;    /* per node without a chain: why */
  size_t nnodes;
};

static int is_plain(const char *s)
{
  return !strpbrk(s, "\t\n\r");
}

/* The frames of [node]'s stack, innermost first, up to TYPES_FRAMES: as
   a key ("file:line:start-end;..." in [key]) and as the helper's fields
   (in [fields]).  0 when the allocation itself has no source location. */
static int node_frames(an_ctx *c, uint32_t node, char *key, size_t keylen, char *fields,
                       size_t flen)
{
  const an_node *nodes = an_nodes(c);
  size_t kpos = 0, fpos = 0, nframes = 0;
  key[0] = fields[0] = 0;
  for (uint32_t n = node; n && nframes < TYPES_FRAMES; n = nodes[n].parent) {
    const mpt_location *l = an_location(c, nodes[n].loc);
    if (!l || !l->n) {
      /* A frame without debug information: the helper skips it. */
      if (!nframes) break;
      int kw = snprintf(key + kpos, keylen - kpos, ";?");
      int fw = snprintf(fields + fpos, flen - fpos, "\t\t0\t0\t0\t");
      if (kw < 0 || fw < 0 || (size_t)kw >= keylen - kpos || (size_t)fw >= flen - fpos) {
        key[kpos] = fields[fpos] = 0;
        break;
      }
      kpos += (size_t)kw;
      fpos += (size_t)fw;
      nframes++;
      continue;
    }
    for (uint32_t k = 0; k < l->n && nframes < TYPES_FRAMES; k++) {
      const mpt_loc_entry *e = &l->entries[k];
      const char *fn = e->function ? e->function : "";
      if (!e->file || !e->file[0] || !is_plain(e->file) || !is_plain(fn)) goto done;
      int kw = snprintf(key + kpos, keylen - kpos, "%s%s:%u:%u-%u", nframes ? ";" : "", e->file,
                        e->line, e->start_char, e->end_char);
      int fw = snprintf(fields + fpos, flen - fpos, "\t%s\t%u\t%u\t%u\t%s", e->file, e->line,
                        e->start_char, e->end_char, fn);
      if (kw < 0 || fw < 0 || (size_t)kw >= keylen - kpos || (size_t)fw >= flen - fpos) {
        key[kpos] = fields[fpos] = 0;  /* keep the frames that fit */
        goto done;
      }
      kpos += (size_t)kw;
      fpos += (size_t)fw;
      nframes++;
    }
  }
done:
  return nframes > 0;
}

static uint32_t intern(types_map *m, const char *s)
{
  return strpool_intern(m->strs, s, strlen(s));
}

/* One line of the helper's output (or of the cache, which is the same). */
static void read_answer(types_map *m, char *line)
{
  line[strcspn(line, "\n")] = 0;
  char *tab = strchr(line, '\t');
  if (!tab) return;
  *tab++ = 0;
  if (!strcmp(line, "type")) {
    char *ty = strchr(tab, '\t');
    if (!ty) return;
    *ty++ = 0;
    uint32_t k = intern(m, tab), v = intern(m, ty);
    uint32_t old;
    u64map_replace(&m->chain_type, k, v, &old);
  } else if (!strcmp(line, "missing")) {
    uint32_t old;
    u64map_replace(&m->missing, intern(m, tab), 1, &old);
  } else if (!strcmp(line, "read")) {
    /* Answered from the cache: checked when it is loaded. */
  } else if (!strcmp(line, "stale")) {
    uint32_t old;
    u64map_replace(&m->stale, intern(m, tab), 1, &old);
  }
}

static void read_answers(types_map *m, FILE *f, FILE *copy)
{
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    if (copy) fputs(line, copy);
    read_answer(m, line);
  }
  free(line);
}

static uint64_t fnv1a64(uint64_t h, const void *p, size_t n)
{
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ULL;
  return h;
}

static uint64_t hash_file_identity(uint64_t h, const char *path)
{
  struct stat st;
  h = fnv1a64(h, path, strlen(path) + 1);
  if (stat(path, &st) == 0) {
    h = fnv1a64(h, &st.st_size, sizeof st.st_size);
    h = fnv1a64(h, &st.st_mtim, sizeof st.st_mtim);
  }
  return h;
}

/* The helper: $OCAML_MEMPROF_TYPES, else ocaml-memprof-types beside this
   executable (installed or in the build tree), else from PATH. */
static const char *helper_path(char *buf, size_t len)
{
  const char *env = getenv("OCAML_MEMPROF_TYPES");
  if (env && *env) return env;
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n > 0) {
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (slash && (size_t)(slash - buf) + sizeof "/ocaml-memprof-types" <= len) {
      strcpy(slash, "/ocaml-memprof-types");
      if (access(buf, X_OK) == 0) return buf;
    }
  }
  return "ocaml-memprof-types";
}

/* The cache file for the executable [exe] (NULL when it cannot be found:
   its answers could then be another build's) and search path. */
static char *cache_path(const char *exe, const char *helper, const char *const *cmt_paths,
                        size_t ncmt_paths)
{
  struct stat st;
  if (!exe || !exe[0] || stat(exe, &st) != 0) return NULL;
  char dir[PATH_MAX];
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && xdg[0]) snprintf(dir, sizeof dir, "%s/ocaml-memprof", xdg);
  else if (home && home[0]) snprintf(dir, sizeof dir, "%s/.cache/ocaml-memprof", home);
  else return NULL;
  char parent[PATH_MAX];
  snprintf(parent, sizeof parent, "%s", dir);
  *strrchr(parent, '/') = 0;
  mkdir(parent, 0755);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return NULL;
  uint64_t h = 0xcbf29ce484222325ULL;
  h = hash_file_identity(h, exe);
  h = hash_file_identity(h, helper);
  for (size_t i = 0; i < ncmt_paths; i++) h = fnv1a64(h, cmt_paths[i], strlen(cmt_paths[i]) + 1);
  char *p = xmalloc(strlen(dir) + 40);
  sprintf(p, "%s/types-%016llx.tsv", dir, (unsigned long long)h);
  return p;
}

/* Whether no file the cached answers were read from (the "read" lines:
   .cmt files and sources) changed after the cache was written. */
static int cache_fresh(const char *path)
{
  struct stat cst, st;
  FILE *f = fopen(path, "r");
  if (!f) return 1;
  if (fstat(fileno(f), &cst) != 0) { fclose(f); return 0; }
  char *line = NULL;
  size_t cap = 0;
  int fresh = 1;
  while (fresh && getline(&line, &cap, f) > 0) {
    if (strncmp(line, "read\t", 5)) continue;
    line[strcspn(line, "\n")] = 0;
    if (stat(line + 5, &st) != 0 || st.st_mtim.tv_sec > cst.st_mtim.tv_sec
        || (st.st_mtim.tv_sec == cst.st_mtim.tv_sec && st.st_mtim.tv_nsec > cst.st_mtim.tv_nsec))
      fresh = 0;
  }
  free(line);
  fclose(f);
  return fresh;
}

/* The directories to search: --cmt-path's, the executable's, and when it
   was built by dune the whole _build tree (the helper adds the standard
   library's). */
void types_write_dirs(FILE *in, const char *exe, const char *const *cmt_paths, size_t n)
{
  for (size_t i = 0; i < n; i++) fprintf(in, "dir\t8\t%s\n", cmt_paths[i]);
  if (!exe || !exe[0] || !is_plain(exe)) return;
  const char *slash = strrchr(exe, '/');
  if (slash) fprintf(in, "dir\t1\t%.*s\n", (int)(slash - exe), exe);
  else fprintf(in, "dir\t1\t.\n");
  const char *b = strstr(exe, "/_build/");
  if (b) fprintf(in, "dir\t10\t%.*s\n", (int)(b - exe + 7), exe);
}

/* Run the helper on [input] (a file), each line of its answer to [line]. */
static int run_helper(const char *helper, FILE *input, void (*line)(void *, char *), void *arg,
                      int quiet)
{
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (!pid) {
    dup2(fileno(input), 0);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execlp(helper, helper, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *out = fdopen(fds[0], "r");
  char *buf = NULL;
  size_t cap = 0;
  while (getline(&buf, &cap, out) > 0) line(arg, buf);
  free(buf);
  fclose(out);
  int status;
  if (waitpid(pid, &status, 0) < 0) return -1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    if (!quiet) msg("ocaml-memprof: types need %s, the .cmt reader built with the tools when PREFIX "
        "has an OCaml with compiler-libs: it could not be run\n", helper);
    return -1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status)) {
    msg("ocaml-memprof: %s failed (see above)\n", helper);
    return -1;
  }
  return 0;
}

int types_run_helper(FILE *input, void (*line)(void *arg, char *line), void *arg, int quiet)
{
  char helper_buf[PATH_MAX];
  rewind(input);
  return run_helper(helper_path(helper_buf, sizeof helper_buf), input, line, arg, quiet);
}

/* An answer line into the map, and into the cache file. */
typedef struct { types_map *m; FILE *cache; } answer_sink;

static void answer_line(void *arg, char *line)
{
  answer_sink *k = arg;
  if (k->cache) fputs(line, k->cache);
  read_answer(k->m, line);
}

types_map *types_resolve(an_ctx *c, const uint32_t *nodes, size_t nnodes,
                         const char *const *cmt_paths, size_t ncmt_paths)
{
  types_map *m = xcalloc(1, sizeof *m);
  m->strs = strpool_new();
  u64map_init(&m->chain_type, 256);
  u64map_init(&m->missing, 16);
  u64map_init(&m->stale, 16);
  m->nnodes = an_node_count(c);
  m->node_chain = xcalloc(m->nnodes, sizeof *m->node_chain);
  m->node_reason = xcalloc(m->nnodes, sizeof *m->node_reason);
  char helper_buf[PATH_MAX];
  const char *helper = helper_path(helper_buf, sizeof helper_buf);
  const char *exe = an_header(c)->executable;
  char *cpath = cache_path(exe, helper, cmt_paths, ncmt_paths);
  if (cpath && !cache_fresh(cpath)) unlink(cpath);
  FILE *cf = cpath ? fopen(cpath, "r") : NULL;
  if (cf) {
    read_answers(m, cf, NULL);
    fclose(cf);
  }
  /* The chains, and the helper's input for those the cache lacks. */
  FILE *input = tmpfile();
  if (!input) {
    msg("ocaml-memprof: --by type: cannot create a temporary file: %s\n", strerror(errno));
    free(cpath);
    types_free(m);
    return NULL;
  }
  types_write_dirs(input, exe, cmt_paths, ncmt_paths);
  u64map asked;
  u64map_init(&asked, 256);
  size_t nasked = 0;
  static char key[TYPES_FRAMES * 600], fields[TYPES_FRAMES * 700];
  for (size_t i = 0; i < nnodes; i++) {
    uint32_t node = nodes[i];
    if (!node_frames(c, node, key, sizeof key, fields, sizeof fields)) {
      m->node_reason[node] = "unknown (no source location: build with -g)";
      continue;
    }
    uint32_t k = intern(m, key);
    m->node_chain[node] = k + 1;
    if (u64map_get(&m->chain_type, k) || u64map_get(&asked, k)) continue;
    u64map_put(&asked, k, 1);
    fprintf(input, "chain\t%s%s\n", key, fields);
    nasked++;
  }
  u64map_free(&asked);
  int rc = 0;
  if (nasked) {
    rewind(input);
    FILE *cache = cpath ? fopen(cpath, "a") : NULL;
    answer_sink sink = { m, cache };
    rc = run_helper(helper, input, answer_line, &sink, 0);
    if (cache) fclose(cache);
  }
  fclose(input);
  free(cpath);
  if (rc) {
    types_free(m);
    return NULL;
  }
  return m;
}

const char *types_of_node(const types_map *m, uint32_t node)
{
  if (node >= m->nnodes) return "unknown";
  if (m->node_reason[node]) return m->node_reason[node];
  if (!m->node_chain[node]) return "unknown";
  uint32_t *v = u64map_get(&m->chain_type, m->node_chain[node] - 1);
  return v ? strpool_get(m->strs, *v) : "unknown (no answer from the helper)";
}

/* The names in [set], sorted by first appearance, as "a, b, c, ..."
   (four at most) into [buf]; their number. */
static size_t set_names(const types_map *m, const u64map *set, char *buf, size_t len)
{
  size_t count = 0, pos = 0;
  buf[0] = 0;
  for (uint32_t id = 0, n = strpool_count(m->strs); id < n; id++) {
    if (!u64map_get(set, id)) continue;
    if (count < 4 && pos < len)
      pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", count ? ", " : "",
                              strpool_get(m->strs, id));
    else if (count == 4 && pos < len)
      pos += (size_t)snprintf(buf + pos, len - pos, ", ...");
    count++;
  }
  return count;
}

void types_print_hints(const types_map *m)
{
  char names[1024];
  size_t n = set_names(m, &m->missing, names, sizeof names);
  if (n)
    msg("hint: no .cmt for %zu source file%s (%s): their sites' types are unknown; compile "
        "with -bin-annot (dune does) or give --cmt-path DIR\n", n, n > 1 ? "s" : "", names);
  n = set_names(m, &m->stale, names, sizeof names);
  if (n)
    msg("hint: %zu stale or foreign .cmt file%s ignored (%s): the source changed since, or "
        "another compiler wrote it; rebuild\n", n, n > 1 ? "s" : "", names);
}

void types_free(types_map *m)
{
  if (!m) return;
  strpool_free(m->strs);
  u64map_free(&m->chain_type);
  u64map_free(&m->missing);
  u64map_free(&m->stale);
  free(m->node_chain);
  free(m->node_reason);
  free(m);
}
