/*
 * nodecost.c - what node-bound memory costs, mechanism by mechanism: the
 * kernel primitives nodal uses when it commits node-bound memory, timed
 * apart per 4 MiB segment, and the end-to-end cost of committing new
 * node-bound memory through nodal against plain first-touched memory.
 *
 * Primitives (each on fresh 4 MiB-aligned mappings, -S segments per
 * repetition; set-up and tear-down untimed):
 *   map            mmap + munmap of a 4 MiB segment (nodal over-maps to align)
 *   mbind          mbind(MPOL_PREFERRED, node) of an untouched segment
 *   touch-plain    first touch (one write per OS page) of an unbound segment:
 *                  the baseline, what plain malloc memory costs
 *   touch-bound    first touch of a bound segment, no populate
 *   populate-64k   MADV_POPULATE_WRITE per 64 KiB chunk (nodal's commit unit)
 *   populate-4m    one MADV_POPULATE_WRITE for the whole segment
 *   query-64k      move_pages query of the 16 OS pages of each chunk
 *   query-4m       move_pages query of all 1,024 OS pages, 256 per call
 *   migrate        move_pages(MPOL_MF_MOVE) of a segment populated on another
 *                  node to the target (strays; needs two nodes with memory)
 *   purge-64k      MADV_DONTNEED per 64 KiB chunk of a populated segment
 *   purge-4m       one MADV_DONTNEED of a populated segment
 *   refault        first touch again after purge-4m (the policy stays)
 *   commit-64k     what nodal does today for a whole segment: mbind, then per
 *                  chunk populate + query (= mbind + populate-64k + query-64k)
 *   commit-4m      the same per segment: mbind, populate 4 MiB, query 4 MiB
 *
 * Through nodal (libnodal.so preloaded; skipped otherwise), -M MiB of new
 * memory per repetition in -s byte blocks, each block written once, nothing
 * freed until the end (so every repetition commits new memory):
 *   nodal-plain    malloc + first touch: a plain first-touched MiB
 *   nodal-node     nodal_malloc_node(size, node) + write: a new node-bound MiB
 * and "nodal-node / nodal-plain" per MiB (issue 12: target <= 1.2).
 *
 * -H sets transparent huge pages for the process: default (the system's
 * setting), off (prctl PR_SET_THP_DISABLE: no THP anywhere, nodal's
 * huge_pages=1 included), on (MADV_HUGEPAGE on the primitives' segments;
 * nodal follows NODAL_OPTIONS huge_pages). -B n keeps n sibling threads busy
 * on other CPUs, as in a multithreaded program: a purge or a migration must
 * then shoot down their TLBs too.
 *
 * Reported per mechanism: wall and CPU microseconds per segment (us_seg,
 * cpu_us_seg) and CPU microseconds per MiB (cpu_us_mib), medians over -r
 * repetitions with the spread in a note line; and the TLB-shootdown IPIs
 * the machine received per segment while it ran (tlb_ipis_seg, from
 * /proc/interrupts: an IPI interrupts another CPU, which is what makes a
 * purge or a migration expensive in a multithreaded program). "config=thp-<mode>" names the
 * THP setting (the runner's column).
 */
#define _GNU_SOURCE
#include "harness.h"
#include "nodeapi.h"
#include "nodal.h"

#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#pragma weak nodal_malloc_node
#pragma weak nodal_free

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef PR_SET_THP_DISABLE
#define PR_SET_THP_DISABLE 41
#endif

#define SEG (4ul << 20)
#define CHUNK (64ul << 10)
#define PAGE 4096ul
#define PAGES (SEG / PAGE)
#define MAXREPS 64

enum thp_mode { THP_DEFAULT, THP_OFF, THP_ON };

static struct {
    int node, other;        /* target node; another node with memory, or -1 */
    int segs, reps;
    enum thp_mode thp;
    int have_populate;
    int busy;               /* sibling threads spinning on other CPUs */
} cfg;

/* ---- segments --------------------------------------------------------- */
static void *seg_map(void)
{
    char *raw = mmap(NULL, 2 * SEG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        die("mmap: %s", strerror(errno));
    char *p = (char *)(((uintptr_t)raw + SEG - 1) & ~(uintptr_t)(SEG - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (p + SEG < raw + 2 * SEG)
        munmap(p + SEG, (size_t)(raw + 2 * SEG - (p + SEG)));
    if (cfg.thp == THP_ON)
        madvise(p, SEG, MADV_HUGEPAGE);
    return p;
}

static void seg_bind(void *p, int node)
{
    unsigned long mask[2] = { 0, 0 };
    mask[node / 64] |= 1ul << (node % 64);
    if (mbind(p, SEG, MPOL_PREFERRED, mask, 128 + 1, 0) != 0 && numa_available() >= 0)
        die("mbind: %s", strerror(errno));
}

static void touch(char *p, size_t len)
{
    for (size_t o = 0; o < len; o += PAGE)
        p[o] = 1;
    clobber();
}

static void populate(char *p, size_t len)
{
    if (cfg.have_populate && madvise(p, len, MADV_POPULATE_WRITE) == 0)
        return;
    cfg.have_populate = 0;
    touch(p, len);
}

/* move_pages query of [p, p+len), `batch` OS pages per call; returns strays. */
static long query(char *p, size_t len, size_t batch, int node)
{
    void *pages[1024];
    int status[1024];
    long bad = 0;
    for (size_t off = 0; off < len;) {
        size_t n = 0;
        for (; n < batch && off < len; n++, off += PAGE)
            pages[n] = p + off;
        if (move_pages(0, (unsigned long)n, pages, NULL, status, 0) != 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            bad += status[i] != node;
    }
    return bad;
}

static long migrate(char *p, int node)
{
    void *pages[256];
    int nodes[256], status[256];
    long bad = 0;
    for (size_t off = 0; off < SEG;) {
        size_t n = 0;
        for (; n < 256 && off < SEG; n++, off += PAGE) {
            pages[n] = p + off;
            nodes[n] = node;
        }
        if (move_pages(0, (unsigned long)n, pages, nodes, status, MPOL_MF_MOVE) < 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            bad += status[i] != node;
    }
    return bad;
}

/* ---- the mechanisms ---------------------------------------------------- */
/* Each prepares seg (untimed), then run() does the timed work on it. */
enum prep { P_FRESH, P_BOUND, P_POPULATED, P_ELSEWHERE, P_PURGED };

struct mech {
    const char *name;
    enum prep prep;
    int needs_other;    /* needs a second node with memory */
    long (*run)(char *seg);
};

static long m_map(char *seg)
{
    (void)seg;
    munmap(seg_map(), SEG);
    return 0;
}
static long m_mbind(char *seg) { seg_bind(seg, cfg.node); return 0; }
static long m_touch(char *seg) { touch(seg, SEG); return 0; }
static long m_populate_64k(char *seg)
{
    for (size_t o = 0; o < SEG; o += CHUNK)
        populate(seg + o, CHUNK);
    return 0;
}
static long m_populate_4m(char *seg) { populate(seg, SEG); return 0; }
static long m_query_64k(char *seg)
{
    long bad = 0;
    for (size_t o = 0; o < SEG; o += CHUNK)
        bad += query(seg + o, CHUNK, CHUNK / PAGE, cfg.node);
    return bad;
}
static long m_query_4m(char *seg) { return query(seg, SEG, 256, cfg.node); }
static long m_migrate(char *seg) { return migrate(seg, cfg.node); }
static long m_purge_64k(char *seg)
{
    for (size_t o = 0; o < SEG; o += CHUNK)
        madvise(seg + o, CHUNK, MADV_DONTNEED);
    return 0;
}
static long m_purge_4m(char *seg) { madvise(seg, SEG, MADV_DONTNEED); return 0; }
static long m_commit_64k(char *seg)
{
    seg_bind(seg, cfg.node);
    long bad = 0;
    for (size_t o = 0; o < SEG; o += CHUNK) {
        populate(seg + o, CHUNK);
        bad += query(seg + o, CHUNK, CHUNK / PAGE, cfg.node);
    }
    return bad;
}
static long m_commit_4m(char *seg)
{
    seg_bind(seg, cfg.node);
    populate(seg, SEG);
    return query(seg, SEG, 256, cfg.node);
}

static const struct mech mechs[] = {
    { "map", P_FRESH, 0, m_map },
    { "mbind", P_FRESH, 0, m_mbind },
    { "touch-plain", P_FRESH, 0, m_touch },
    { "touch-bound", P_BOUND, 0, m_touch },
    { "populate-64k", P_BOUND, 0, m_populate_64k },
    { "populate-4m", P_BOUND, 0, m_populate_4m },
    { "query-64k", P_POPULATED, 0, m_query_64k },
    { "query-4m", P_POPULATED, 0, m_query_4m },
    { "migrate", P_ELSEWHERE, 1, m_migrate },
    { "purge-64k", P_POPULATED, 0, m_purge_64k },
    { "purge-4m", P_POPULATED, 0, m_purge_4m },
    { "refault", P_PURGED, 0, m_touch },
    { "commit-64k", P_FRESH, 0, m_commit_64k },
    { "commit-4m", P_FRESH, 0, m_commit_4m },
};
#define NMECHS (sizeof mechs / sizeof mechs[0])

static void prepare(char *seg, enum prep prep)
{
    switch (prep) {
    case P_FRESH:
        break;
    case P_BOUND:
        seg_bind(seg, cfg.node);
        break;
    case P_POPULATED:
        seg_bind(seg, cfg.node);
        populate(seg, SEG);
        break;
    case P_ELSEWHERE:
        seg_bind(seg, cfg.other);
        populate(seg, SEG);
        break;
    case P_PURGED:
        seg_bind(seg, cfg.node);
        populate(seg, SEG);
        madvise(seg, SEG, MADV_DONTNEED);
        break;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *thp_name(void)
{
    return cfg.thp == THP_OFF ? "off" : cfg.thp == THP_ON ? "on" : "default";
}

/* Prints one mechanism's row from per-repetition totals (ns per
   repetition, each covering `segs` segments' worth of memory; ipis: TLB
   shootdown IPIs over all repetitions, -1 if unknown). */
static void report(const char *mech, double *wall, double *cpu, int reps, double segs, long bad, long long ipis)
{
    double lo = 1e300, hi = 0;
    for (int i = 0; i < reps; i++) {
        lo = cpu[i] < lo ? cpu[i] : lo;
        hi = cpu[i] > hi ? cpu[i] : hi;
    }
    double w = median(wall, reps) / segs / 1e3, c = median(cpu, reps) / segs / 1e3;
    char ipi[48] = "";
    if (ipis >= 0)
        snprintf(ipi, sizeof ipi, " tlb_ipis_seg=%.2f", (double)ipis / segs / reps);
    bench_result("nodecost", "mech=%s config=thp-%s node=%d busy=%d us_seg=%.1f cpu_us_seg=%.1f cpu_us_mib=%.2f%s",
                 mech, thp_name(), cfg.node, cfg.busy, w, c, c / (double)(SEG >> 20), ipi);
    printf("note: %s: CPU us per segment over %d repetitions: %.1f-%.1f%s\n", mech, reps, lo / segs / 1e3,
           hi / segs / 1e3, bad > 0 ? " (some pages not on the target node: see the migrate row)" : "");
}

static void run_mech(const struct mech *m)
{
    if (m->needs_other && cfg.other < 0) {
        printf("note: %s: skipped (needs a second node with memory)\n", m->name);
        return;
    }
    char **segs = malloc(sizeof *segs * (size_t)cfg.segs);
    double wall[MAXREPS], cpu[MAXREPS];
    long bad = 0;
    long long ipis = 0;
    for (int r = 0; r < cfg.reps; r++) {
        for (int i = 0; i < cfg.segs; i++) {
            segs[i] = seg_map();
            prepare(segs[i], m->prep);
        }
        long long i0 = bench_tlb_shootdowns();
        uint64_t t0 = now_ns(), c0 = thread_cpu_ns();
        for (int i = 0; i < cfg.segs; i++) {
            long b = m->run(segs[i]);
            bad += b > 0 ? b : 0;
        }
        uint64_t c1 = thread_cpu_ns(), t1 = now_ns();
        long long i1 = bench_tlb_shootdowns();
        ipis = i0 < 0 || i1 < 0 || ipis < 0 ? -1 : ipis + (i1 - i0);
        wall[r] = (double)(t1 - t0);
        cpu[r] = (double)(c1 - c0);
        for (int i = 0; i < cfg.segs; i++)
            munmap(segs[i], SEG);
    }
    report(m->name, wall, cpu, cfg.reps, cfg.segs, bad, ipis);
    free(segs);
}

/* ---- through nodal ----------------------------------------------------- */
static void run_nodal(long long mib, size_t bsize)
{
    if (!nodal_malloc_node || !nodal_free) {
        printf("note: nodal-plain, nodal-node: skipped (libnodal.so is not preloaded)\n");
        return;
    }
    size_t per_rep = (size_t)mib << 20, nblocks = per_rep / bsize;
    void **keep = malloc(sizeof *keep * nblocks * (size_t)cfg.reps * 2);
    size_t nkeep = 0;
    double wall[2][MAXREPS], cpu[2][MAXREPS];
    long long ipis[2] = { 0, 0 };
    /* interleaved: plain then node in every repetition */
    for (int r = 0; r < cfg.reps; r++) {
        for (int k = 0; k < 2; k++) {
            long long i0 = bench_tlb_shootdowns();
            uint64_t t0 = now_ns(), c0 = thread_cpu_ns();
            for (size_t i = 0; i < nblocks; i++) {
                char *p = k == 0 ? malloc(bsize) : nodal_malloc_node(bsize, cfg.node);
                if (!p)
                    die("allocation failed after %zu blocks", nkeep);
                memset(p, 1, bsize);
                keep[nkeep++] = p;
            }
            uint64_t c1 = thread_cpu_ns(), t1 = now_ns();
            long long i1 = bench_tlb_shootdowns();
            ipis[k] = i0 < 0 || i1 < 0 || ipis[k] < 0 ? -1 : ipis[k] + (i1 - i0);
            wall[k][r] = (double)(t1 - t0);
            cpu[k][r] = (double)(c1 - c0);
        }
    }
    /* every node block must be on the node */
    long bad = 0, nnode = 0;
    void **nodeblocks = malloc(sizeof *nodeblocks * nkeep);
    for (size_t i = 0; i < nkeep; i++)
        if ((i / nblocks) % 2 == 1)
            nodeblocks[nnode++] = keep[i];
    bad = node_count_misplaced(nodeblocks, (size_t)nnode, cfg.node);
    double segs = (double)per_rep / (double)SEG;
    double pc[MAXREPS], nc[MAXREPS];
    memcpy(pc, cpu[0], sizeof pc);
    memcpy(nc, cpu[1], sizeof nc);
    report("nodal-plain", wall[0], cpu[0], cfg.reps, segs, 0, ipis[0]);
    report("nodal-node", wall[1], cpu[1], cfg.reps, segs, bad, ipis[1]);
    double ratio = median(nc, cfg.reps) / median(pc, cfg.reps);
    bench_result("nodecost-ratio", "what=node_vs_plain_mib config=thp-%s node=%d block=%zu ratio=%.3f misplaced=%ld",
                 thp_name(), cfg.node, bsize, ratio, bad);
    for (size_t i = 0; i < nkeep; i++)
        (i / nblocks) % 2 ? nodal_free(keep[i]) : free(keep[i]);
    free(nodeblocks);
    free(keep);
}

/* ---- busy siblings ----------------------------------------------------- */
static atomic_int siblings_stop;
static void *sibling(void *arg)
{
    bench_pin_self((int)(intptr_t)arg);
    char buf[4096];
    while (!atomic_load_explicit(&siblings_stop, memory_order_relaxed)) {
        memset(buf, 1, sizeof buf);
        escape(buf);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    const char *target = "local", *only = NULL;
    long long mib = 16, bsize = 1024, busy = 0;
    cfg.segs = 16;
    cfg.reps = 5;
    int opt;
    while ((opt = getopt(argc, argv, "N:S:r:H:m:M:s:B:P")) != -1) {
        switch (opt) {
        case 'N': target = optarg; break;
        case 'S': cfg.segs = (int)parse_size(optarg); break;
        case 'r': cfg.reps = (int)parse_size(optarg); break;
        case 'H':
            if (strcmp(optarg, "off") == 0)
                cfg.thp = THP_OFF;
            else if (strcmp(optarg, "on") == 0)
                cfg.thp = THP_ON;
            else if (strcmp(optarg, "default") == 0)
                cfg.thp = THP_DEFAULT;
            else
                die("-H takes default, off or on");
            break;
        case 'm': only = optarg; break;
        case 'M': mib = parse_size(optarg); break;
        case 's': bsize = parse_size(optarg); break;
        case 'B': busy = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr,
                    "usage: nodecost [-N node|local] [-S segments] [-r reps] [-H default|off|on]\n"
                    "                [-m mech,...|nodal] [-M MiB through nodal] [-s block size] [-B busy siblings] [-P]\n"
                    "mechanisms: map mbind touch-plain touch-bound populate-64k populate-4m query-64k query-4m\n"
                    "            migrate purge-64k purge-4m refault commit-64k commit-4m; nodal = nodal-plain\n"
                    "            and nodal-node (needs LD_PRELOAD=libnodal.so)\n");
            return 2;
        }
    }
    if (cfg.segs < 1 || cfg.reps < 1 || cfg.reps > MAXREPS || bsize < 16 || mib < 1)
        die("bad arguments");
    bench_pin_self(bench_cpu(0));
    cfg.node = node_target_for(node_target_parse(target), 0, bench_cpu(0));
    int ids[64], n = node_ids(ids, 64);
    int known = 0;
    cfg.other = -1;
    for (int i = 0; i < n; i++) {
        known |= ids[i] == cfg.node;
        if (ids[i] != cfg.node && cfg.other < 0)
            cfg.other = ids[i];
    }
    if (!known)
        die("node %d has no memory", cfg.node);
    if (cfg.thp == THP_OFF && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
        die("prctl(PR_SET_THP_DISABLE): %s", strerror(errno));
    cfg.have_populate = 1;
    char *probe = seg_map();
    if (madvise(probe, PAGE, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
        cfg.have_populate = 0;
    munmap(probe, SEG);
    if (!cfg.have_populate)
        printf("note: this kernel has no MADV_POPULATE_WRITE: populate rows touch every page instead\n");
    pthread_t sib[64];
    cfg.busy = busy < 64 ? (int)busy : 64;
    for (long long i = 0; i < busy && i < 64; i++)
        pthread_create(&sib[i], NULL, sibling, (void *)(intptr_t)bench_cpu((int)i + 1));
    printf("note: node %d, other node %d, %d segments of 4 MiB per repetition, %d repetitions, THP %s, "
           "%lld busy siblings\n", cfg.node, cfg.other, cfg.segs, cfg.reps, thp_name(), busy);

    for (size_t i = 0; i < NMECHS; i++) {
        if (only) {
            char list[512];
            snprintf(list, sizeof list, ",%s,", only);
            char key[64];
            snprintf(key, sizeof key, ",%s,", mechs[i].name);
            if (!strstr(list, key))
                continue;
        }
        run_mech(&mechs[i]);
    }
    if (!only || strstr(only, "nodal"))
        run_nodal(mib, (size_t)bsize);
    atomic_store(&siblings_stop, 1);
    for (long long i = 0; i < busy && i < 64; i++)
        pthread_join(sib[i], NULL);
    return 0;
}
