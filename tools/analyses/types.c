/* types.c: types of allocation sites, from the helper ocaml-memprof-types
   (see types.h and tools/types/ocaml_memprof_types.ml for its protocol).

   A stack is named by its innermost frames, each by the id of its string
   "file:line:start-end" (frags, made once per location; FRAG_NO_LOCATION
   for a frame without debug information, written "?").  The helper says
   how many of the frames it sent an answer depends on (most types, those
   without variables, depend on the allocation's frame alone), or that it
   depends on the chain ending there; so an answer is kept for a *prefix*
   of frames (answers: their frames, and a map from a hash of the prefix,
   its length and whether it is exact, to the answer, checked frame by
   frame), and a node's lookup hashes its frames one by one and probes
   each prefix, without building any string.  Answers are written to the
   cache as "type\tPREFIX\tTYPE", PREFIX the frames' strings joined by
   ';' (and ";$" when exact): 4,045 lines instead of the 20,437 chains of
   a trace of ocamlopt.opt (make -C tools bench-types).  A node's type is kept once found (node_type).
   The helper runs on one end of a socket pair (a write to a helper that
   could not be started fails with EPIPE instead of a signal); its new
   answers are held in memory (news) and appended to the cache only when
   it has ended well, so that the cache never holds answers without the
   files they were read from.  Heap snapshots' requests (snaptypes.c) run
   another helper once on a file of requests instead (types_run_helper),
   sharing its start and the reports of its failures (fork_helper,
   wait_helper). */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "types.h"
#include "util.h"

/* A location's frame in frags: the id of its key string, or one of these. */
#define FRAG_NO_LOCATION UINT32_MAX        /* a location without debug information */
#define FRAG_STOP (UINT32_MAX - 1)         /* a frame that cannot be sent: the key ends */
/* The cache's format, in its name's hash: another format is another file. */
#define CACHE_FORMAT "prefix answers 2"   /* 2: with the listings of the directories searched */

/* The type of every chain whose first nfr frames are answer_frags[off..]
   (exact: of the chain of exactly these frames). */
typedef struct {
  uint32_t type, off, nfr;
  int exact;
} answer;

struct types_map {
  an_ctx *c;
  const char *const *cmt_paths;
  size_t ncmt_paths;
  strpool *strs;               /* frame strings, types, file names */
  answer *ans;
  size_t nans, ans_cap;
  uint32_t *ans_frags;
  size_t nans_frags, ans_frags_cap;
  u64map ans_idx;              /* prefix_hash -> index in ans */
  u64map missing, stale;       /* file string id -> 1 */
  char *foreign;               /* the helper's OCaml version, when not the trace's */
  uint32_t *node_type;         /* per node: type string id + 1 (0: not known yet) */
  size_t node_cap;
  uint32_t *loc_frags;         /* per location: 1 + index in frags (0: not made) */
  size_t loc_cap;
  uint32_t *frags;             /* per location: its frame count, then its frames */
  size_t nfrags, frags_cap;
  char *key;                   /* a chain's key, for the helper */
  size_t key_cap;
  uint32_t chain[TYPES_FRAMES];   /* the frags of the node being looked up */
  size_t nchain;
  char helper[PATH_MAX];
  char *cache;                 /* the cache file, or NULL (not cached) */
  int started, failed;
  pid_t pid;
  int fd;                      /* our end of the helper's socket */
  FILE *from;                  /* the same, for reading lines */
  char *line;
  size_t line_cap;
  FILE *news;                  /* the helper's answers, for the cache */
  char *news_buf;
  size_t news_len;
};

static int is_plain(const char *s)
{
  return !strpbrk(s, "\t\n\r");
}

static uint32_t intern(types_map *m, const char *s)
{
  return strpool_intern(m->strs, s, strlen(s));
}

/* The frames of location [loc] in frags (made on first use). */
static const uint32_t *location_frags(types_map *m, uint32_t loc)
{
  if (loc >= m->loc_cap) {
    size_t old = m->loc_cap;
    grow_array((void **)&m->loc_frags, &m->loc_cap, (size_t)loc + 1, sizeof *m->loc_frags);
    memset(m->loc_frags + old, 0, (m->loc_cap - old) * sizeof *m->loc_frags);
  }
  if (!m->loc_frags[loc]) {
    const mpt_location *l = an_location(m->c, loc);
    uint32_t n = l && l->n ? l->n : 1;
    grow_array((void **)&m->frags, &m->frags_cap, m->nfrags + 1 + n, sizeof *m->frags);
    uint32_t *f = m->frags + m->nfrags;
    m->loc_frags[loc] = (uint32_t)m->nfrags + 1;
    m->nfrags += 1 + n;
    f[0] = n;
    if (!l || !l->n) f[1] = FRAG_NO_LOCATION;
    else
      for (uint32_t k = 0; k < n; k++) {
        const mpt_loc_entry *e = &l->entries[k];
        char s[64];
        if (!e->file || !e->file[0] || !is_plain(e->file) || strchr(e->file, ';')
            || (e->function && !is_plain(e->function))) {
          f[1 + k] = FRAG_STOP;
          continue;
        }
        size_t fl = strlen(e->file);
        int w = snprintf(s, sizeof s, ":%u:%u-%u", e->line, e->start_char, e->end_char);
        char *buf = xmalloc(fl + (size_t)w + 1);
        memcpy(buf, e->file, fl);
        memcpy(buf + fl, s, (size_t)w + 1);
        f[1 + k] = strpool_intern(m->strs, buf, fl + (size_t)w);
        free(buf);
      }
  }
  return m->frags + m->loc_frags[loc] - 1;
}

/* The frames of [node]'s stack, innermost first, up to TYPES_FRAMES, into
   m->chain and, when [fields] is given, the helper's fields of each frame
   (file, line, start, end, function; empty for a frame without debug
   information).  0 when the allocation itself has no source location. */
static int node_frames(types_map *m, uint32_t node, FILE *fields)
{
  const an_node *nodes = an_nodes(m->c);
  size_t nframes = 0;
  for (uint32_t n = node; n && nframes < TYPES_FRAMES; n = nodes[n].parent) {
    const uint32_t *f = location_frags(m, nodes[n].loc);
    if (f[1] == FRAG_NO_LOCATION) {
      /* A frame without debug information: the helper skips it. */
      if (!nframes) break;
      if (fields) fputs("\t\t0\t0\t0\t", fields);
      m->chain[nframes++] = FRAG_NO_LOCATION;
      continue;
    }
    const mpt_location *l = an_location(m->c, nodes[n].loc);
    for (uint32_t k = 0; k < f[0] && nframes < TYPES_FRAMES; k++) {
      if (f[1 + k] == FRAG_STOP) goto done;
      if (fields) {
        const mpt_loc_entry *e = &l->entries[k];
        fprintf(fields, "\t%s\t%u\t%u\t%u\t%s", e->file, e->line, e->start_char, e->end_char,
                e->function ? e->function : "");
      }
      m->chain[nframes++] = f[1 + k];
    }
  }
done:
  m->nchain = nframes;
  return nframes > 0;
}

/* The key of the first [n] frames of m->chain (";$" after them when
   [exact]) into m->key. */
static const char *chain_key(types_map *m, size_t n, int exact)
{
  size_t pos = 0;
  for (size_t i = 0; i <= n; i++) {
    const char *s = i < n ? (m->chain[i] == FRAG_NO_LOCATION ? "?" : strpool_get(m->strs, m->chain[i]))
                  : exact ? "$" : NULL;
    if (!s) break;
    size_t len = strlen(s);
    grow_array((void **)&m->key, &m->key_cap, pos + len + 2, 1);
    if (pos) m->key[pos++] = ';';
    memcpy(m->key + pos, s, len);
    pos += len;
  }
  grow_array((void **)&m->key, &m->key_cap, pos + 1, 1);
  m->key[pos] = 0;
  return m->key;
}

/* The hash of a prefix, frame by frame, then of its length and exactness. */
static uint64_t hash_frame(uint64_t h, uint32_t frag)
{
  return mix64(h + frag + 0x9E3779B97F4A7C15ULL);
}

static uint64_t prefix_hash(uint64_t h, size_t n, int exact)
{
  return mix64(h ^ ((uint64_t)n << 1 | (uint64_t)exact));
}

/* Keep [type] as the answer for the first [n] frames of [frames]. */
static void add_answer(types_map *m, const uint32_t *frames, size_t n, int exact, uint32_t type)
{
  uint64_t h = 0;
  for (size_t i = 0; i < n; i++) h = hash_frame(h, frames[i]);
  grow_array((void **)&m->ans_frags, &m->ans_frags_cap, m->nans_frags + n, sizeof *m->ans_frags);
  memcpy(m->ans_frags + m->nans_frags, frames, n * sizeof *frames);
  grow_array((void **)&m->ans, &m->ans_cap, m->nans + 1, sizeof *m->ans);
  m->ans[m->nans] = (answer){ type, (uint32_t)m->nans_frags, (uint32_t)n, exact };
  m->nans_frags += n;
  /* Two prefixes of one hash: the later one is kept (the other is asked
     again when met). */
  u64map_put(&m->ans_idx, prefix_hash(h, n, exact), (uint32_t)m->nans++);
}

/* The answer for the first [n] frames of m->chain, hashed as [h]. */
static const answer *find_answer(const types_map *m, uint64_t h, size_t n, int exact)
{
  uint32_t *ix = u64map_get(&m->ans_idx, prefix_hash(h, n, exact));
  if (!ix) return NULL;
  const answer *a = &m->ans[*ix];
  if (a->nfr != n || a->exact != exact
      || memcmp(m->ans_frags + a->off, m->chain, n * sizeof *m->chain))
    return NULL;
  return a;
}

/* The answer for m->chain: that of its shortest answered prefix, or of
   the whole chain. */
static const answer *lookup_chain(const types_map *m)
{
  uint64_t h = 0;
  const answer *a;
  for (size_t d = 1; d <= m->nchain; d++) {
    h = hash_frame(h, m->chain[d - 1]);
    if ((a = find_answer(m, h, d, 0))) return a;
  }
  return find_answer(m, h, m->nchain, 1);
}

/* A cache line "type PREFIX TYPE" into the answers; a malformed line is
   skipped. */
static void read_cached_type(types_map *m, char *key, const char *ty)
{
  uint32_t frames[TYPES_FRAMES];
  size_t n = 0;
  int exact = 0;
  for (char *p = key, *semi; p; p = semi ? semi + 1 : NULL) {
    semi = strchr(p, ';');
    if (semi) *semi = 0;
    if (exact || !*p) return;                /* "$" ends a key */
    if (!strcmp(p, "$")) exact = 1;
    else if (n == TYPES_FRAMES) return;
    else frames[n++] = !strcmp(p, "?") ? FRAG_NO_LOCATION : intern(m, p);
  }
  if (n) add_answer(m, frames, n, exact, intern(m, ty));
}

/* One line of the cache, or of the helper's output after its answers. */
static void read_answer(types_map *m, char *line)
{
  line[strcspn(line, "\n")] = 0;
  char *tab = strchr(line, '\t');
  if (!tab) return;
  *tab++ = 0;
  uint32_t old;
  if (!strcmp(line, "type")) {
    char *ty = strchr(tab, '\t');
    if (!ty) return;
    *ty++ = 0;
    read_cached_type(m, tab, ty);
  } else if (!strcmp(line, "missing")) u64map_replace(&m->missing, intern(m, tab), 1, &old);
  else if (!strcmp(line, "stale")) u64map_replace(&m->stale, intern(m, tab), 1, &old);
  else if (!strcmp(line, "foreign")) {
    free(m->foreign);
    m->foreign = xstrdup(tab);
  }
  /* "read" lines are checked when the cache is loaded. */
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
static void helper_path(char *buf, size_t len)
{
  const char *env = getenv("OCAML_MEMPROF_TYPES");
  if (env && *env) { snprintf(buf, len, "%s", env); return; }
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n > 0) {
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (slash && (size_t)(slash - buf) + sizeof "/ocaml-memprof-types" <= len) {
      strcpy(slash, "/ocaml-memprof-types");
      if (access(buf, X_OK) == 0) return;
    }
  }
  snprintf(buf, len, "ocaml-memprof-types");
}

/* The cache file for the executable [exe] (NULL when it cannot be found:
   its answers could then be another build's), helper and search path. */
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
  h = fnv1a64(h, CACHE_FORMAT, sizeof CACHE_FORMAT);
  h = hash_file_identity(h, exe);
  h = hash_file_identity(h, helper);
  for (size_t i = 0; i < ncmt_paths; i++) h = fnv1a64(h, cmt_paths[i], strlen(cmt_paths[i]) + 1);
  char *p = xmalloc(strlen(dir) + 40);
  sprintf(p, "%s/types-%016llx.tsv", dir, (unsigned long long)h);
  return p;
}

static void forget_answers(types_map *m)
{
  m->nans = m->nans_frags = 0;
  u64map_free(&m->ans_idx);
  u64map_free(&m->missing);
  u64map_free(&m->stale);
  u64map_init(&m->ans_idx, 256);
  u64map_init(&m->missing, 16);
  u64map_init(&m->stale, 16);
  free(m->foreign);
  m->foreign = NULL;
}

static int cmp_names(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The hash the helper gives directory [dir] searched [depth] levels deep
   (tools/types/ocaml_memprof_types.ml, [listings]): its .cmt files' names
   and, when [depth] > 0, its subdirectories' (other than .git and
   node_modules) followed by '/', sorted, each ended by a newline, hashed
   with 64-bit FNV-1a.  0 when it cannot be read. */
static uint64_t listing_hash(const char *dir, int depth)
{
  DIR *d = opendir(dir);
  if (!d) return 0;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *s = e->d_name;
    size_t len = strlen(s);
    int sub = 0;
    if (!strcmp(s, ".") || !strcmp(s, "..")) continue;
    if (len >= 4 && !strcmp(s + len - 4, ".cmt")) sub = 0;
    else if (depth > 0 && strcmp(s, ".git") && strcmp(s, "node_modules")) {
      if (e->d_type == DT_DIR) sub = 1;
      else if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) {
        struct stat st;
        char *p = xmalloc(strlen(dir) + len + 2);
        sprintf(p, "%s/%s", dir, s);
        sub = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
        free(p);
      }
      if (!sub) continue;
    } else continue;
    grow_array((void **)&names, &cap, n + 1, sizeof *names);
    names[n] = xmalloc(len + 2);
    memcpy(names[n], s, len);
    if (sub) names[n][len++] = '/';
    names[n++][len] = 0;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_names);   /* names is NULL when n is 0 */
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    h = fnv1a64(h, names[i], strlen(names[i]));
    h = fnv1a64(h, "\n", 1);
    free(names[i]);
  }
  free(names);
  return h;
}

/* Whether a cache line "listing DEPTH HASH DIR" still holds. */
static int listing_holds(char *line)
{
  char *depth = line + 8, *hash = strchr(depth, '\t'), *dir = hash ? strchr(hash + 1, '\t') : NULL;
  if (!dir) return 0;
  *dir++ = 0;
  dir[strcspn(dir, "\n")] = 0;
  char *end;
  unsigned long long want = strtoull(hash + 1, &end, 16);
  return *end == 0 && end != hash + 1 && listing_hash(dir, atoi(depth)) == want;
}

/* Read the cache's answers, in one pass that also checks them: when a
   file they were read from (the "read" lines: .cmt files and sources)
   changed after the cache was written, or a directory searched for .cmt
   files (the "listing" lines) got or lost a .cmt file or subdirectory
   (an answer "no .cmt", or a generic type for lack of a caller's .cmt,
   may be wrong then), they are forgotten and the cache removed. */
static void load_cache(types_map *m)
{
  struct stat cst, st;
  FILE *f = fopen(m->cache, "r");
  if (!f) return;
  if (fstat(fileno(f), &cst) != 0) { fclose(f); return; }
  u64map checked;
  u64map_init(&checked, 256);
  int fresh = 1;
  while (fresh && getline(&m->line, &m->line_cap, f) > 0) {
    if (!strncmp(m->line, "listing\t", 8)) {
      /* Each run of the helper appended the same listings: checked once. */
      m->line[strcspn(m->line, "\n")] = 0;
      uint32_t id = intern(m, m->line);
      if (u64map_get(&checked, id)) continue;
      u64map_put(&checked, id, 1);
      fresh = listing_holds(m->line);
      continue;
    }
    if (strncmp(m->line, "read\t", 5)) { read_answer(m, m->line); continue; }
    char *path = m->line + 5;
    path[strcspn(path, "\n")] = 0;
    uint32_t id = intern(m, path);
    if (u64map_get(&checked, id)) continue;
    u64map_put(&checked, id, 1);
    if (stat(path, &st) != 0 || st.st_mtim.tv_sec > cst.st_mtim.tv_sec
        || (st.st_mtim.tv_sec == cst.st_mtim.tv_sec && st.st_mtim.tv_nsec > cst.st_mtim.tv_nsec))
      fresh = 0;
  }
  u64map_free(&checked);
  fclose(f);
  if (!fresh) {
    forget_answers(m);
    unlink(m->cache);
  }
}

types_map *types_open(an_ctx *c, const char *const *cmt_paths, size_t ncmt_paths)
{
  types_map *m = xcalloc(1, sizeof *m);
  m->c = c;
  m->cmt_paths = cmt_paths;
  m->ncmt_paths = ncmt_paths;
  m->strs = strpool_new();
  u64map_init(&m->ans_idx, 256);
  u64map_init(&m->missing, 16);
  u64map_init(&m->stale, 16);
  m->fd = -1;
  helper_path(m->helper, sizeof m->helper);
  m->cache = cache_path(an_header(c)->executable, m->helper, cmt_paths, ncmt_paths);
  if (m->cache) load_cache(m);
  return m;
}

/* Write all of [s] to the helper; -1 when it has gone. */
static int send_all(types_map *m, const char *s, size_t n)
{
  while (n) {
    ssize_t w = send(m->fd, s, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The directories to search: --cmt-path's, the executable's, and when it
   was built by dune the whole _build tree (the helper adds the standard
   library's); those that a protocol line cannot hold are left out.  The
   first .cmt found of a module is used, so the executable's own come
   before the rest of _build (where another executable may have a module
   of the same name): dune puts them two levels below it, in
   .NAME.eobjs/byte. */
void types_write_dirs(FILE *in, const char *exe, const char *version, const char *const *cmt_paths,
                      size_t n)
{
  if (version && version[0] && is_plain(version)) fprintf(in, "version\t%s\n", version);
  for (size_t i = 0; i < n; i++)
    if (is_plain(cmt_paths[i])) fprintf(in, "dir\t8\t%s\n", cmt_paths[i]);
  if (!exe || !exe[0] || !is_plain(exe)) return;
  const char *slash = strrchr(exe, '/');
  const char *b = strstr(exe, "/_build/");
  int depth = b ? 2 : 1;
  if (slash) fprintf(in, "dir\t%d\t%.*s\n", depth, (int)(slash - exe), exe);
  else fprintf(in, "dir\t%d\t.\n", depth);
  if (b) fprintf(in, "dir\t10\t%.*s\n", (int)(b - exe + 7), exe);
}

/* Fork [helper] with [in] as its stdin and [out] as its stdout, [ours]
   (our end of [out]) closed in it: its pid, or -1 (errno set). */
static pid_t fork_helper(const char *helper, int in, int out, int ours)
{
  fflush(NULL);
  pid_t pid = fork();
  if (!pid) {
    dup2(in, 0);
    dup2(out, 1);
    close(ours);
    if (out > 1) close(out);
    execlp(helper, helper, (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* Wait for [helper] (process [pid]) once its output is read; 0 when it
   ended well, else -1 after one line on stderr: "NEEDS HELPER, the .cmt
   reader ..." when it could not be run (nothing when [needs] is NULL), or
   how it failed. */
static int wait_helper(const char *helper, pid_t pid, const char *needs)
{
  int status;
  if (waitpid(pid, &status, 0) < 0) status = -1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    if (needs)
      msg("%s %s, the .cmt reader built with the tools when PREFIX "
          "has an OCaml with compiler-libs: it could not be run\n", needs, helper);
    return -1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status)) {
    if (WIFSIGNALED(status)) msg("%s failed: killed by signal %d\n", helper, WTERMSIG(status));
    else msg("%s failed (exit status %d; its messages, if any, above)\n", helper,
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return -1;
  }
  return 0;
}

/* Start the helper and give it the directories to search and the trace's
   OCaml version, which must be the helper's. */
static void start_helper(types_map *m)
{
  m->started = 1;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    msg("--by type: cannot start %s: %s\n", m->helper, strerror(errno));
    m->failed = 1;
    return;
  }
  pid_t pid = fork_helper(m->helper, sv[1], sv[1], sv[0]);
  if (pid < 0) {
    msg("--by type: cannot start %s: %s\n", m->helper, strerror(errno));
    close(sv[0]);
    close(sv[1]);
    m->failed = 1;
    return;
  }
  close(sv[1]);
  m->pid = pid;
  m->fd = sv[0];
  m->from = fdopen(sv[0], "r");
  m->news = open_memstream(&m->news_buf, &m->news_len);
  char *buf;
  size_t len;
  FILE *in = open_memstream(&buf, &len);
  const ti_header *h = an_header(m->c);
  types_write_dirs(in, h->executable, h->ocaml_version, m->cmt_paths, m->ncmt_paths);
  fclose(in);
  send_all(m, buf, len);   /* a helper that has gone is seen at its first answer */
  free(buf);
}

/* Wait for the helper once its output is read; 0 when it ended well. */
static int reap_helper(types_map *m)
{
  fclose(m->from);
  m->from = NULL;
  m->fd = -1;
  int rc = wait_helper(m->helper, m->pid, "--by type needs");
  m->pid = 0;
  return rc;
}

/* The helper's answer "type KEY DEPTH TYPE" in [line] for m->chain,
   whose key is [key]: kept for the prefix it holds for, and for the
   cache.  Its type's string id, or UINT32_MAX when the line is not it. */
static uint32_t take_answer(types_map *m, char *line, const char *key)
{
  size_t klen = strlen(key);
  if (strncmp(line, "type\t", 5) || strncmp(line + 5, key, klen) || line[5 + klen] != '\t')
    return UINT32_MAX;
  char *depth = line + 5 + klen + 1, *ty = strchr(depth, '\t');
  if (!ty) return UINT32_MAX;
  *ty++ = 0;
  ty[strcspn(ty, "\n")] = 0;
  char *end;
  unsigned long d = strtoul(depth, &end, 10);
  int exact = !strcmp(depth, "all");
  if (exact || *end || !d || d > m->nchain) d = m->nchain;
  uint32_t type = intern(m, ty);
  add_answer(m, m->chain, d, exact, type);
  fprintf(m->news, "type\t%s\t%s\n", chain_key(m, d, exact), ty);
  return type;
}

/* The helper's answer for the stack of [node], whose frames are in
   m->chain: its type's string id, or the failure's. */
static uint32_t ask_helper(types_map *m, uint32_t node)
{
  static const char no_answer[] = "unknown (no answer from the helper)";
  if (!m->started) start_helper(m);
  if (m->failed) return intern(m, no_answer);
  char *buf, *key = xstrdup(chain_key(m, m->nchain, 0));
  size_t len;
  FILE *line = open_memstream(&buf, &len);
  fprintf(line, "chain\t%s", key);
  node_frames(m, node, line);
  fputc('\n', line);
  fclose(line);
  int sent = send_all(m, buf, len);
  free(buf);
  uint32_t type = UINT32_MAX;
  while (sent == 0 && type == UINT32_MAX && getline(&m->line, &m->line_cap, m->from) > 0)
    type = take_answer(m, m->line, key);
  free(key);
  if (type != UINT32_MAX) return type;
  /* The helper has gone (or never started, or spoke out of turn): say
     why, once. */
  m->failed = 1;
  if (reap_helper(m) == 0) msg("%s ended without answering\n", m->helper);
  return intern(m, no_answer);
}

const char *types_of_node(types_map *m, uint32_t node)
{
  if (node >= m->node_cap) {
    size_t old = m->node_cap;
    grow_array((void **)&m->node_type, &m->node_cap, (size_t)node + 1, sizeof *m->node_type);
    memset(m->node_type + old, 0, (m->node_cap - old) * sizeof *m->node_type);
  }
  if (!m->node_type[node]) {
    uint32_t ty;
    const answer *a;
    if (!node) ty = intern(m, "unknown (no backtrace)");
    else if (!node_frames(m, node, NULL))
      ty = intern(m, "unknown (no source location: build with -g)");
    else ty = (a = lookup_chain(m)) ? a->type : ask_helper(m, node);
    m->node_type[node] = ty + 1;
  }
  return strpool_get(m->strs, m->node_type[node] - 1);
}

int types_failed(const types_map *m)
{
  return m->failed;
}

int types_close(types_map *m)
{
  if (!m->started || m->failed) return m->failed;
  /* The end of the input: the helper adds the files it read, missing and
     stale, then exits. */
  shutdown(m->fd, SHUT_WR);
  while (getline(&m->line, &m->line_cap, m->from) > 0) {
    fputs(m->line, m->news);
    read_answer(m, m->line);
  }
  m->started = 0;
  fclose(m->news);
  m->news = NULL;
  if (reap_helper(m)) {
    m->failed = 1;
    return 1;
  }
  FILE *f = m->cache ? fopen(m->cache, "a") : NULL;
  if (f) {
    fwrite(m->news_buf, 1, m->news_len, f);
    fclose(f);
  }
  return 0;
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
  if (m->foreign) {
    msg("hint: the trace is of OCaml %s and the .cmt reader %s of OCaml %s, which cannot read "
        "that compiler's .cmt files: every type is unknown; use the ocaml-memprof installed "
        "with %s (or set OCAML_MEMPROF_TYPES to its ocaml-memprof-types)\n",
        an_header(m->c)->ocaml_version, m->helper, m->foreign, an_header(m->c)->ocaml_version);
    return;
  }
  size_t n = set_names(m, &m->missing, names, sizeof names);
  if (n)
    msg("hint: no .cmt for %zu source file%s (%s): their sites' types are unknown; compile "
        "with -bin-annot (dune: `dune build @check` writes executables' .cmt too) or give --cmt-path DIR\n", n, n > 1 ? "s" : "", names);
  n = set_names(m, &m->stale, names, sizeof names);
  if (n)
    msg("hint: %zu stale or foreign .cmt file%s ignored (%s): the source changed since, or "
        "another compiler wrote it; rebuild\n", n, n > 1 ? "s" : "", names);
}

void types_free(types_map *m)
{
  if (!m) return;
  if (m->from) fclose(m->from);
  if (m->pid) waitpid(m->pid, NULL, 0);
  if (m->news) fclose(m->news);
  free(m->news_buf);
  strpool_free(m->strs);
  free(m->ans);
  free(m->ans_frags);
  u64map_free(&m->ans_idx);
  u64map_free(&m->missing);
  u64map_free(&m->stale);
  free(m->foreign);
  free(m->node_type);
  free(m->loc_frags);
  free(m->frags);
  free(m->key);
  free(m->cache);
  free(m->line);
  free(m);
}

int types_run_helper(FILE *input, void (*line)(void *arg, char *line), void *arg, int quiet)
{
  char helper[PATH_MAX];
  helper_path(helper, sizeof helper);
  int fds[2];
  if (pipe(fds) != 0) {
    msg("types: cannot start %s: %s\n", helper, strerror(errno));
    return -1;
  }
  rewind(input);
  pid_t pid = fork_helper(helper, fileno(input), fds[1], fds[0]);
  close(fds[1]);
  if (pid < 0) {
    msg("types: cannot start %s: %s\n", helper, strerror(errno));
    close(fds[0]);
    return -1;
  }
  FILE *out = fdopen(fds[0], "r");
  char *buf = NULL;
  size_t cap = 0;
  while (getline(&buf, &cap, out) > 0) line(arg, buf);
  free(buf);
  fclose(out);
  return wait_helper(helper, pid, quiet ? NULL : "types need");
}
