/*
 * profile.c - the heap profile's reports (prof=1; docs/profiling.md) and the
 * statistics of a running process (stats_every): nodal_profile_dump, the
 * dumps on a signal, every prof_interval seconds and every prof_growth
 * bytes of growth, the dump and the leak report at exit.
 *
 * A dump writes two files: <name>.heap, in the text format of gperftools'
 * heap profiler (read by google-pprof, Debian's google-perftools, and by
 * jeprof and pprof), with the estimated live and allocated objects and bytes
 * of every call stack and the process's memory map; and <name>.txt, the
 * sites ranked by live bytes with their split over nodes and their frames
 * symbolized. The samples are prof.c's.
 *
 * Periodic work (dumps, statistics) and the signal's dump are done by one
 * helper thread, started by the library's constructor when one of them is
 * asked for (again in a forked child): the signal handler only writes a
 * byte into a pipe the thread waits on, so no dump runs inside a signal
 * handler, or inside malloc.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include "init.h"
#include "lock.h"
#include "msg.h"
#include "nodal.h"
#include "options.h"
#include "os.h"
#include "out.h"
#include "prof.h"
#include "topo.h"

#define nd_profile_lock ND_LOCK(profile, 0)

#define ND_PROF_COLS 8   /* nodes the text report shows a column of (the rest: "other") */
#define ND_PROF_TOP  50  /* sites the text report lists */

/* One site's totals in a dump. */
typedef struct nd_prof_agg {
    uint64_t live_objs, live_bytes;
    uint64_t node_bytes[ND_PROF_COLS + 1];
} nd_prof_agg;

/* Scratch of the dumps (under the profile lock), mapped at the first: the
   output buffer, the files' names, then per site its totals and the site
   of that rank, side by side, so that a dump of a few sites touches three
   OS pages of it (the buffer as a static, the totals and the ranks as two
   mappings: four, reqresp -t 2's exit dump, /proc/self/pagemap). */
typedef struct nd_prof_scratch {
    nd_out o;
    /* A dump's base name, then each file's. Not on the stack: there, with a
       formatter's nd_out for the name and the copy of the memory map's
       buffer, the exit dump went 21 KB below its caller and left five OS
       pages of the main thread's stack resident, now 3.5 KB and two, and
       one page more of this (the one the name's start is on) (larson -t 2:
       gdb, the stack painted at the destructor's entry; /proc/self/pagemap
       at exit). Not in nodal's data: 4 KB more of .data moved a page the
       loader writes in every process, 4 KB more of .bss the address space
       every process holds (a test at the limit of RLIMIT_AS failed). */
    char name[ND_OPT_TEXT_MAX + 64];
    struct {
        nd_prof_agg agg;          /* site i's totals */
        uint32_t    rank;         /* the site ranked i-th */
    } e[ND_PROF_SITES];
} nd_prof_scratch;
/* The dumps' state, together and initialised (so in nodal's .data, whose
   page every process writes at start): as zero-initialised statics they
   made profiling write one more OS page of nodal's data at its first
   dump (reqresp -t 2, larson -t 2: /proc/self/pagemap at exit). */
static struct {
    nd_prof_scratch *sc;          /* mapped at the first dump */
    unsigned seq;                 /* the next numbered dump */
    int64_t  dumped_live;         /* live bytes at the last dump (prof_growth) */
    int      pipe[2];             /* the helper thread's wake-ups */
} nd_prof_ds = { .pipe = { -1, -1 } };
/* The dumps' scratch, mapped at the first (NULL when it cannot be). */
static nd_prof_scratch *nd_prof_scratch_get(void)
{
    if (nd_prof_ds.sc == NULL)
        nd_prof_ds.sc = nd_os_map_aligned(sizeof *nd_prof_ds.sc, nd_os_page_size());
    return nd_prof_ds.sc;
}

/* A dump's base name into the scratch's name: the prefix, '.', then the
   dump's number, or "exit" when at_exit. NULL when the prefix is too long
   (errno ENAMETOOLONG) or the scratch cannot be mapped (ENOMEM). */
static const char *nd_prof_base(bool at_exit, unsigned seq)
{
    const char *tmpl = nd_opt_text(ND_OPT_prof_prefix);
    if (tmpl[0] == '\0')
        tmpl = "nodal-prof.%p";
    nd_prof_scratch *sc = nd_prof_scratch_get();
    if (sc == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    char *name = sc->name;
    size_t len = nd_opt_expand_path(tmpl, nd_os_pid(), name, ND_OPT_TEXT_MAX + 32);
    if (len >= ND_OPT_TEXT_MAX + 32) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    name[len++] = '.';
    if (at_exit) {
        memcpy(name + len, "exit", 5);
        return name;
    }
    char digits[10];
    int k = 0;
    do
        digits[k++] = (char)('0' + seq % 10);
    while ((seq /= 10) != 0);
    while (k > 0)
        name[len++] = digits[--k];
    name[len] = '\0';
    return name;
}

static int nd_prof_col(int node)
{
    for (int i = 0; i < nd_topo.mem_count && i < ND_PROF_COLS; i++)
        if (nd_topo.mem_ids[i] == node)
            return i;
    return ND_PROF_COLS;
}

/* Totals of the live samples per site into the scratch's agg; the sites with
   samples ranked by live bytes (then bytes allocated) into its rank.
   Returns the number ranked. */
static uint32_t nd_prof_collect(nd_prof_agg *total)
{
    const nd_prof_site *sites = nd_prof_sites();
    memset(total, 0, sizeof *total);
    uint32_t n = 0;
    for (uint32_t i = (uint32_t)nd_prof_site_next(0); i < ND_PROF_SITES; i = (uint32_t)nd_prof_site_next(i + 1)) {
        if (nd_load_acquire(&sites[i].state) != 2)
            continue;
        memset(&nd_prof_ds.sc->e[i].agg, 0, sizeof nd_prof_ds.sc->e[i].agg);
        nd_prof_ds.sc->e[n++].rank = i;
    }
    for (size_t i = nd_prof_live_next(0); i < ND_PROF_LIVE; i = nd_prof_live_next(i + 1)) {
        nd_prof_live v;
        if (!nd_prof_live_copy(i, &v) || v.site >= ND_PROF_SITES)
            continue;
        /* Where the kernel has the block's first page now (NUMA balancing
           may have moved it); where it was asked for when it cannot say. */
        int node = nd_os_addr_node((const void *)v.addr);
        int col = nd_prof_col(node >= 0 ? node : v.node);
        nd_prof_agg *a = &nd_prof_ds.sc->e[v.site].agg;
        a->live_objs += v.objs;
        a->live_bytes += v.bytes;
        a->node_bytes[col] += v.bytes;
        total->live_objs += v.objs;
        total->live_bytes += v.bytes;
        total->node_bytes[col] += v.bytes;
    }
    /* Shell sort, descending by live bytes, then bytes allocated. */
    for (uint32_t gap = n / 2; gap > 0; gap /= 2)
        for (uint32_t i = gap; i < n; i++) {
            uint32_t x = nd_prof_ds.sc->e[i].rank, j = i;
            for (; j >= gap; j -= gap) {
                uint32_t y = nd_prof_ds.sc->e[j - gap].rank;
                bool before = nd_prof_ds.sc->e[x].agg.live_bytes > nd_prof_ds.sc->e[y].agg.live_bytes ||
                              (nd_prof_ds.sc->e[x].agg.live_bytes == nd_prof_ds.sc->e[y].agg.live_bytes &&
                               nd_load_relaxed(&sites[x].alloc_bytes) > nd_load_relaxed(&sites[y].alloc_bytes));
                if (!before)
                    break;
                nd_prof_ds.sc->e[j].rank = y;
            }
            nd_prof_ds.sc->e[j].rank = x;
        }
    return n;
}

/* The gperftools heap-profile text format: a header with the totals, one
   line per stack (live objects: bytes [allocated objects: bytes] @ return
   addresses), then the memory map. The counts are already estimates of
   the totals ("heapprofile": the viewer scales nothing). */
static void nd_prof_write_heap(nd_out *o, uint32_t n, const nd_prof_agg *total)
{
    const nd_prof_site *sites = nd_prof_sites();
    uint64_t ao = 0, ab = 0;
    for (uint32_t r = 0; r < n; r++) {
        ao += nd_load_relaxed(&sites[nd_prof_ds.sc->e[r].rank].alloc_objs);
        ab += nd_load_relaxed(&sites[nd_prof_ds.sc->e[r].rank].alloc_bytes);
    }
    nd_outf(o, "heap profile: %6lu: %8lu [%6lu: %8lu] @ heapprofile\n", (unsigned long)total->live_objs,
            (unsigned long)total->live_bytes, (unsigned long)ao, (unsigned long)ab);
    for (uint32_t r = 0; r < n; r++) {
        uint32_t i = nd_prof_ds.sc->e[r].rank;
        const nd_prof_site *s = &sites[i];
        nd_outf(o, "%6lu: %8lu [%6lu: %8lu] @", (unsigned long)nd_prof_ds.sc->e[i].agg.live_objs,
                (unsigned long)nd_prof_ds.sc->e[i].agg.live_bytes, (unsigned long)nd_load_relaxed(&s->alloc_objs),
                (unsigned long)nd_load_relaxed(&s->alloc_bytes));
        for (uint32_t k = 0; k < s->nframes; k++)
            nd_outf(o, " %p", s->frames[k]);
        nd_outf(o, "\n");
    }
    nd_outf(o, "\nMAPPED_LIBRARIES:\n");
    nd_out_flush(o);   /* (its buffer then holds nothing: the copy's) */
    if (o->fd >= 0 && !nd_os_copy_file("/proc/self/maps", o->fd, o->buf, sizeof o->buf))
        o->err = 1;
}

static void nd_prof_frame(nd_out *o, const void *a)
{
    const char *file, *sym;
    const void *base, *sa;
    nd_os_symbol(a, &file, &base, &sym, &sa);
    const char *name = file != NULL ? strrchr(file, '/') : NULL;
    name = name != NULL ? name + 1 : file != NULL && file[0] ? file : "?";
    if (sym != NULL)
        nd_outf(o, "        %s+0x%lx (%s) %p\n", sym, (unsigned long)((uintptr_t)a - (uintptr_t)sa), name, a);
    else
        nd_outf(o, "        ? (%s+0x%lx) %p\n", name, (unsigned long)((uintptr_t)a - (uintptr_t)base), a);
}

static void nd_prof_bytes_cols(nd_out *o, const nd_prof_agg *a)
{
    for (int c = 0; c < nd_topo.mem_count && c < ND_PROF_COLS; c++)
        nd_outf(o, " node%d=%lu", nd_topo.mem_ids[c], (unsigned long)a->node_bytes[c]);
    if (nd_topo.mem_count > ND_PROF_COLS)
        nd_outf(o, " other=%lu", (unsigned long)a->node_bytes[ND_PROF_COLS]);
}

/* The text report: the sites ranked by live bytes, each with its share,
   its split over nodes and its frames. */
static void nd_prof_write_text(nd_out *o, uint32_t n, const nd_prof_agg *total, const char *why)
{
    const nd_prof_site *sites = nd_prof_sites();
    char prog[64];
    nd_os_program_name(prog, sizeof prog);
    nd_outf(o, "nodal heap profile (%s): pid=%ld program=%s rate=%ld sites=%u dropped=%lu samples=%lu unwound=%lu\n",
            why, nd_os_pid(), prog, (long)nd_prof_rate(), n, (unsigned long)nd_prof_dropped(),
            (unsigned long)nd_prof_samples(), (unsigned long)nd_prof_unwinds());
    nd_outf(o, "live: bytes=%lu blocks=%lu", (unsigned long)total->live_bytes, (unsigned long)total->live_objs);
    nd_prof_bytes_cols(o, total);
    nd_outf(o, "  (estimates from the samples)\n\n");
    for (uint32_t r = 0; r < n && r < ND_PROF_TOP; r++) {
        uint32_t i = nd_prof_ds.sc->e[r].rank;
        const nd_prof_agg *a = &nd_prof_ds.sc->e[i].agg;
        const nd_prof_site *s = &sites[i];
        double share = total->live_bytes ? 100.0 * (double)a->live_bytes / (double)total->live_bytes : 0;
        nd_outf(o, "#%u live_bytes=%lu share=%.1f%% live_blocks=%lu", r + 1, (unsigned long)a->live_bytes, share,
                (unsigned long)a->live_objs);
        nd_prof_bytes_cols(o, a);
        nd_outf(o, " allocated_bytes=%lu allocated_blocks=%lu samples=%lu\n",
                (unsigned long)nd_load_relaxed(&s->alloc_bytes), (unsigned long)nd_load_relaxed(&s->alloc_objs),
                (unsigned long)nd_load_relaxed(&s->samples));
        for (uint32_t k = 0; k < s->nframes; k++)
            nd_prof_frame(o, s->frames[k]);
    }
    if (n > ND_PROF_TOP)
        nd_outf(o, "(%u more sites: see the .heap file)\n", n - ND_PROF_TOP);
}

/* One dump: <base>.heap and <base>.txt. At exit, also the leak report on
   stderr. Under the profile lock. */
static int nd_prof_dump_locked(const char *base, const char *why, bool at_exit)
{
    if (nd_prof_scratch_get() == NULL) {
        errno = ENOMEM;
        return -1;
    }
    /* The files' names: base (the scratch's name itself, or copied there)
       and an extension; base again after them. */
    char *path = nd_prof_ds.sc->name;
    size_t len = strlen(base);
    if (len + 6 > sizeof nd_prof_ds.sc->name) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (base != path)
        memcpy(path, base, len + 1);
    base = path;
    nd_prof_agg total;
    uint32_t n = nd_prof_collect(&total);
    nd_out *o = &nd_prof_ds.sc->o;
    int err = 0;
    for (int f = 0; f < 2; f++) {
        const char *ext = f == 0 ? ".heap" : ".txt";
        memcpy(path + len, ext, strlen(ext) + 1);
        int fd = nd_os_create_file(path);
        if (fd < 0) {
            err = errno ? errno : EIO;
            continue;
        }
        nd_out_to_file(o, NULL, fd);
        if (f == 0)
            nd_prof_write_heap(o, n, &total);
        else
            nd_prof_write_text(o, n, &total, why);
        nd_out_flush(o);
        if (o->err)
            err = EIO;
        nd_os_close(fd);
    }
    path[len] = '\0';
    nd_prof_ds.dumped_live = nd_prof_live_bytes();
    if (at_exit) {
        /* The leak report: sites whose sampled blocks are still live. */
        nd_out_to_file(o, NULL, -1);
        uint32_t leaking = 0;
        for (uint32_t r = 0; r < n; r++)
            leaking += nd_prof_ds.sc->e[nd_prof_ds.sc->e[r].rank].agg.live_bytes != 0;
        nd_outf(o, "nodal: heap profile: %s.heap and %s.txt (google-pprof --text PROGRAM %s.heap)\n", base, base,
                base);
        if (leaking > 0) {
            nd_outf(o, "nodal: leaks: %u site(s) still hold sampled blocks at exit, about %lu bytes in %lu blocks; the largest:\n",
                    leaking, (unsigned long)total.live_bytes, (unsigned long)total.live_objs);
            const nd_prof_site *sites = nd_prof_sites();
            for (uint32_t r = 0; r < leaking && r < 5; r++) {
                uint32_t i = nd_prof_ds.sc->e[r].rank;
                nd_outf(o, "nodal: leak #%u: about %lu bytes in %lu blocks, allocated at\n", r + 1,
                        (unsigned long)nd_prof_ds.sc->e[i].agg.live_bytes, (unsigned long)nd_prof_ds.sc->e[i].agg.live_objs);
                for (uint32_t k = 0; k < sites[i].nframes && k < 4; k++)
                    nd_prof_frame(o, sites[i].frames[k]);
            }
        }
        nd_out_flush(o);
    }
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

static int nd_prof_dump_numbered(const char *why)
{
    nd_lock(nd_profile_lock);
    int r = -1;
    const char *base = nd_prof_base(false, nd_prof_ds.seq);
    if (base != NULL) {
        nd_prof_ds.seq++;
        r = nd_prof_dump_locked(base, why, false);
    }
    nd_unlock(nd_profile_lock);
    return r;
}

nd_public int nodal_profile_dump(const char *path)
{
    nd_process_ensure();
    if (!nd_prof_is_on()) {
        errno = ENOTSUP;
        return -1;
    }
    if (path == NULL)
        return nd_prof_dump_numbered("nodal_profile_dump");
    nd_lock(nd_profile_lock);
    int r = nd_prof_dump_locked(path, "nodal_profile_dump", false);
    nd_unlock(nd_profile_lock);
    return r;
}

/* ---- the helper thread ------------------------------------------------------ */

static void nd_prof_on_signal(int sig)
{
    (void)sig;
    char c = 1;
    nd_os_signal_write(nd_load_relaxed(&nd_prof_ds.pipe[1]), &c, 1);
}

static void *nd_profile_helper(void *arg)
{
    (void)arg;
    uint64_t interval = (uint64_t)nd_opt(ND_OPT_prof_interval) * 1000;
    uint64_t every = (uint64_t)nd_opt(ND_OPT_stats_every) * 1000;
    int64_t growth = nd_opt(ND_OPT_prof_growth);
    bool prof = nd_prof_is_on();
    uint64_t now = nd_os_now_ms(), next_dump = now + interval, next_stats = now + every;
    for (;;) {
        uint64_t wait = 1000;   /* growth is checked once a second */
        if (prof && interval && next_dump - now < wait)
            wait = next_dump > now ? next_dump - now : 0;
        if (every && next_stats - now < wait)
            wait = next_stats > now ? next_stats - now : 0;
        bool sig = nd_os_wait_input(nd_prof_ds.pipe[0], (int)wait);
        now = nd_os_now_ms();
        if (prof && sig)
            nd_prof_dump_numbered("signal");
        if (prof && interval && now >= next_dump) {
            nd_prof_dump_numbered("interval");
            next_dump = now + interval;
        }
        if (prof && growth > 0 && nd_prof_live_bytes() - nd_load_relaxed(&nd_prof_ds.dumped_live) >= growth)
            nd_prof_dump_numbered("growth");
        if (every && now >= next_stats) {
            long mode = nd_opt(ND_OPT_stats);
            nodal_stats_print(NULL, mode == 2 ? "json" : mode == 1 ? "" : "brief");
            next_stats = now + every;
        }
    }
    return NULL;
}

static void nd_profile_helper_start(void)
{
    if (!nd_os_pipe(nd_prof_ds.pipe))
        return;
    long sig = nd_opt(ND_OPT_prof_signal);
    if (sig > 0 && nd_prof_is_on() && !nd_os_on_signal((int)sig, nd_prof_on_signal))
        nd_warn("prof_signal=%ld: not a signal a handler can be installed for", sig);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, nd_profile_helper, NULL) != 0)
        nd_warn("cannot start the thread of periodic dumps and statistics");
    pthread_attr_destroy(&attr);
}

/* A forked child has no helper thread: a new one, with a pipe of its own. */
static void nd_profile_fork_child(void)
{
    nd_os_close(nd_prof_ds.pipe[0]);
    nd_os_close(nd_prof_ds.pipe[1]);
    nd_profile_helper_start();
}

__attribute__((constructor(102))) static void nd_profile_init(void)
{
    if (nd_load_acquire(&nd_process_state) != 2)
        return;
    if (nd_opt(ND_OPT_prof) > 0) {
        /* Before any of the profile's code runs: it sits at the end of
           the text, which a process that does not profile never maps. */
        nd_os_code_map_by_page((const void *)(uintptr_t)nd_prof_start);
        if (nd_prof_start(nd_opt(ND_OPT_prof_rate)))
            nd_os_keep_stderr();
    }
    bool helper = nd_opt(ND_OPT_stats_every) > 0 ||
                  (nd_prof_is_on() && (nd_opt(ND_OPT_prof_signal) > 0 || nd_opt(ND_OPT_prof_interval) > 0 ||
                                       nd_opt(ND_OPT_prof_growth) > 0));
    if (helper) {
        if (nd_opt(ND_OPT_stats_every) > 0)
            nd_os_keep_stderr();
        nd_profile_helper_start();
        nd_os_atfork(NULL, NULL, nd_profile_fork_child);
    }
}

/* The dump and the leak report at exit. */
__attribute__((destructor(102))) static void nd_profile_at_exit(void)
{
    if (nd_load_acquire(&nd_process_state) != 2 || !nd_prof_is_on())
        return;
    nd_lock(nd_profile_lock);
    const char *base = nd_prof_base(true, 0);
    if (base != NULL && nd_prof_dump_locked(base, "exit", true) != 0)
        nd_warn("cannot write the heap profile to '%s.heap'", base);
    nd_unlock(nd_profile_lock);
}
