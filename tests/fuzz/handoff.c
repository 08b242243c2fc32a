/*
 * handoff.c - a randomized multithreaded fuzzer of blocks handed between
 * threads, with a CPU-bound process running beside it.
 *
 * N worker threads (default 4) each keep an array of slots. A step picks a
 * slot and, by the thread's own random stream, allocates into it (malloc,
 * calloc, realloc(NULL), posix_memalign, aligned_alloc, memalign with
 * alignments from 16 B to 2 MiB and often size 0, nodal_malloc_node,
 * nodal_calloc_node, nodal_aligned_alloc_node, nodal_realloc_node(NULL)),
 * or works on the block there: frees it (free, free_sized,
 * free_aligned_sized), reallocates it (growing, shrinking, to 0, plain or
 * to a node), moves it by hand between plain and node memory, hands it to
 * another thread through a shared queue, or takes a block from the queue
 * and frees it, reallocates it or keeps it. Now and then a thread allocates
 * and frees a burst of small blocks (pages retire, and their memory comes
 * back inside large blocks with the debris of freed blocks), and now and
 * then a thread exits with its blocks still in the queue and another takes
 * its place.
 *
 * Sizes run from 0 to 1 MiB with a bias to 0, tiny, small, medium
 * (16-128 KiB), large (128 KiB-1 MiB) and the sizes around 1 MiB - 4 KiB,
 * where large becomes huge. Blocks are often left unwritten, or written
 * only in their first bytes: a program may copy memory it never wrote (a
 * realloc of such a block does), and whatever a freed block left there
 * must not make a live block look freed (issue 17).
 *
 * Checked: right after every allocation and every realloc, the alignment,
 * malloc_usable_size(p) >= size, zeros from calloc, nodal_node_of for
 * blocks bound to a node (and, one time in 16, that plain memory is on a
 * node with memory); at every realloc, free, hand-over and receipt, the
 * block's contents (a tag's pattern over its head, its tail and a sample of
 * its middle, pattern.h) and its usable size. nodal aborting (a block it
 * calls not in use, say) is a failure too: the signal handler names the
 * operation.
 *
 * Knobs (--name=value): --threads=N (4), --ops=N (200000 per round, shared
 * among the threads), --seconds=S (0: one round; else rounds until S
 * seconds have passed), --slots=N (128 per thread), --queue=N (512),
 * --churn=N (a thread exits after 1/N of its steps on average, handing its
 * blocks over; 0: never; default 20000), --hogs=N (1: CPU-bound processes
 * beside the fuzzer, killed at the end and, if the fuzzer dies, by the
 * kernel: PR_SET_PDEATHSIG), --seed=S.
 *
 * Each thread draws from its own stream of the seed (round, position and
 * generation), so its decisions replay; the interleaving of threads does
 * not, nor do the blocks it receives. A failure prints one line: what was
 * expected and what happened, the thread (position.generation), its step
 * number and operation, the round and the seed. The run ends with one
 * line of counts on stdout.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <time.h>

#include "api.h"
#include "check.h"
#include "pattern.h"
#include "sizes.h"

#define H_MAX_THREADS 64
#define H_MAX_HOGS    8
#define H_KiB         ((size_t)1 << 10)
#define H_MiB         ((size_t)1 << 20)
/* nodal's thresholds, for the sizes the generator likes (the checks do not
   depend on them). */
#define H_SMALL_MAX   (16 * H_KiB)
#define H_MEDIUM_MAX  (128 * H_KiB)
#define H_LARGE_MAX   (H_MiB - 4 * H_KiB)
/* Bytes of requested size a thread keeps live before it frees instead. */
#define H_THREAD_BUDGET ((size_t)48 << 20)
#define H_PLAIN       (-1)                /* a block with no node promise */

/* The call that made a block (for messages, and which free fits it). */
enum h_how {
    H_MALLOC, H_CALLOC, H_REALLOC, H_POSIX_MEMALIGN, H_ALIGNED_ALLOC, H_MEMALIGN,
    H_MALLOC_NODE, H_CALLOC_NODE, H_ALIGNED_NODE, H_REALLOC_NODE, H_MOVED, H_HOW_COUNT
};
static const char *const h_how_name[H_HOW_COUNT] = {
    "malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign",
    "nodal_malloc_node", "nodal_calloc_node", "nodal_aligned_alloc_node",
    "nodal_realloc_node", "a copy by hand",
};

struct h_block {
    unsigned char *p;
    size_t size;         /* bytes asked for */
    size_t usable;       /* malloc_usable_size when it was made */
    size_t align;        /* alignment it must have */
    size_t wlen;         /* the pattern is laid out as for a block of wlen bytes... */
    size_t wcut;         /* ...and holds below wcut (0: nothing written) */
    uint64_t tag;
    int node;            /* the node it must be on, or H_PLAIN */
    uint8_t how;
    uint8_t maker;       /* position of the thread that made it */
};

/* One worker thread (a position, run by successive generations). */
struct h_thread {
    int index;
    unsigned gen;
    long ops_left;       /* steps this position still has to run in the round */
    long step;           /* steps this generation has run */
    const char *doing;   /* the operation in progress, for failure lines */
    struct nd_rng rng;
    struct h_block *slot;
    size_t live;         /* requested bytes in its slots */
    pthread_t tid;
    int retired;         /* exited early (churn), blocks handed over */
};

/* ---- the run's state ------------------------------------------------------ */
static const struct nd_api *A;
static int h_threads, h_slots, h_node_ids[NODAL_MAX_NODES], h_node_count;
static long h_churn, h_round;
static double h_deadline;             /* monotonic seconds; 0: none */
static struct h_thread h_thr[H_MAX_THREADS];
static _Thread_local struct h_thread *h_self;
static const char *volatile h_main_doing = "starting";
static pid_t h_hog[H_MAX_HOGS];
static int h_hogs;

/* The hand-over queue. */
static pthread_mutex_t h_q_lock = PTHREAD_MUTEX_INITIALIZER;
static struct h_block *h_q;
static size_t h_q_cap, h_q_head, h_q_count;

/* Finished workers, for the main thread to join and replace. */
static pthread_mutex_t h_done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t h_done_cond = PTHREAD_COND_INITIALIZER;
static int h_done[H_MAX_THREADS], h_done_count;

/* Counts for the closing line. */
enum { C_ALLOC, C_FREE, C_REALLOC, C_REALLOC_NODE, C_MOVE, C_SEND, C_RECV, C_RECV_FREE,
       C_RECV_REALLOC, C_RECV_KEEP, C_UNWRITTEN, C_ZERO_ALIGNED, C_BURST, C_RETIRE, C_COUNT };
static const char *const h_count_name[C_COUNT] = {
    "allocations", "frees", "reallocs", "node reallocs", "moves", "hand-overs", "receipts",
    "received+freed", "received+reallocated", "received+kept", "left unwritten",
    "empty aligned", "bursts", "thread exits",
};
static atomic_long h_count[C_COUNT];

static double h_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- failures ------------------------------------------------------------- */

/* A failed check: the line check.h prints, with where the thread was. */
__attribute__((noreturn, format(printf, 3, 4)))
static void h_fail_at(const char *file, int line, const char *fmt, ...)
{
    char msg[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const struct h_thread *t = h_self;
    if (t)
        nd_fail_at(file, line, "%s [thread %d.%u, step %ld: %s; round %ld]", msg, t->index,
                   t->gen, t->step, t->doing, h_round);
    nd_fail_at(file, line, "%s [main thread: %s; round %ld]", msg, h_main_doing, h_round);
}
#define HEXPECT(cond, ...)                                                   \
    do {                                                                     \
        if (!(cond))                                                         \
            h_fail_at(__FILE__, __LINE__, __VA_ARGS__);                      \
    } while (0)

/* Async-signal-safe pieces of the line a fatal signal prints. */
static size_t h_put(char *buf, size_t n, size_t cap, const char *s)
{
    while (*s && n + 1 < cap)
        buf[n++] = *s++;
    return n;
}

static size_t h_put_num(char *buf, size_t n, size_t cap, uint64_t v)
{
    char d[24];
    int k = 0;
    do
        d[k++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (k > 0 && n + 1 < cap)
        buf[n++] = d[--k];
    return n;
}

/* nodal (or a wild pointer) killed the process: say where the fuzzer was.
   The first thread to get here reports and ends the process; another one
   (two threads can abort at once) waits for that. */
static atomic_int h_fatal_seen;

static void h_on_fatal(int sig)
{
    if (atomic_exchange(&h_fatal_seen, 1))
        for (;;)
            pause();
    char b[600];
    size_t n = 0, cap = sizeof b;
    n = h_put(b, n, cap, "FAIL ");
    n = h_put(b, n, cap, nd_case_name);
    n = h_put(b, n, cap, ": expected no fatal signal; got ");
    n = h_put(b, n, cap, sig == SIGABRT ? "SIGABRT (nodal aborted?)"
                         : sig == SIGSEGV ? "SIGSEGV" : "SIGBUS");
    const struct h_thread *t = h_self;
    if (t) {
        n = h_put(b, n, cap, " in thread ");
        n = h_put_num(b, n, cap, (uint64_t)t->index);
        n = h_put(b, n, cap, ".");
        n = h_put_num(b, n, cap, t->gen);
        n = h_put(b, n, cap, " at step ");
        n = h_put_num(b, n, cap, (uint64_t)t->step);
        n = h_put(b, n, cap, ": ");
        n = h_put(b, n, cap, t->doing);
    } else {
        n = h_put(b, n, cap, " in the main thread: ");
        n = h_put(b, n, cap, h_main_doing);
    }
    n = h_put(b, n, cap, "; round ");
    n = h_put_num(b, n, cap, (uint64_t)h_round);
    n = h_put(b, n, cap, " [seed=");
    n = h_put_num(b, n, cap, nd_seed);
    n = h_put(b, n, cap, ", rerun with --seed=");
    n = h_put_num(b, n, cap, nd_seed);
    n = h_put(b, n, cap, "]\n");
    ssize_t ignored = write(2, b, n);
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- the CPU hog ------------------------------------------------------- */

/* Starts n processes that spin until killed. Each dies with the fuzzer
   whatever way it ends: the kernel sends it SIGKILL when the thread that
   forked it (this one, the main thread) exits, and it checks its parent
   besides. */
static void h_hogs_start(int n)
{
    pid_t me = getpid();
    if (n > H_MAX_HOGS)
        n = H_MAX_HOGS;
    for (int i = 0; i < n; i++) {
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        HEXPECT(pid >= 0, "fork of a CPU hog to work (errno %d)", errno);
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != me)
                _exit(0);
            for (;;) {
                for (volatile uint32_t spin = 0; spin < (1u << 24); spin++)
                    ;
                if (getppid() != me)
                    _exit(0);
            }
        }
        h_hog[h_hogs++] = pid;
    }
}

static void h_hogs_stop(void)
{
    for (int i = 0; i < h_hogs; i++) {
        kill(h_hog[i], SIGKILL);
        while (waitpid(h_hog[i], NULL, 0) < 0 && errno == EINTR)
            ;
    }
    h_hogs = 0;
}

/* ---- sizes, alignments, nodes ------------------------------------------- */

static const size_t h_edge_sizes[] = {
    8, 15, 16, 17, 4095, 4096, 4097, 65536, H_SMALL_MAX - 1, H_SMALL_MAX, H_SMALL_MAX + 1,
    H_MEDIUM_MAX - 1, H_MEDIUM_MAX, H_MEDIUM_MAX + 1, H_MEDIUM_MAX + 4096,
};
/* Around 1 MiB - 4 KiB (the largest large block) and 1 MiB. */
static const size_t h_top_sizes[] = {
    H_LARGE_MAX - 8192, H_LARGE_MAX - 4097, H_LARGE_MAX - 4096, H_LARGE_MAX - 1, H_LARGE_MAX,
    H_LARGE_MAX + 1, H_LARGE_MAX + 16, H_LARGE_MAX + 4095, H_MiB - 1, H_MiB, H_MiB + 1,
    H_MiB + 4096,
};
#define H_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* A request size from 0 to 1 MiB (and a few past it). */
static size_t h_size(struct nd_rng *r)
{
    uint64_t pick = nd_rng_below(r, 100);
    if (pick < 8)
        return 0;
    if (pick < 30)
        return 1 + nd_rng_below(r, 64);                                /* tiny */
    if (pick < 36)
        return 1 + nd_rng_below(r, 15);                                /* below one word pair */
    if (pick < 58)
        return nd_log_uniform(r, 65, H_SMALL_MAX);                      /* small */
    if (pick < 70)
        return H_SMALL_MAX + 1 + nd_rng_below(r, H_MEDIUM_MAX - H_SMALL_MAX);   /* medium */
    if (pick < 84)
        return H_MEDIUM_MAX + 1 + nd_rng_below(r, H_LARGE_MAX - H_MEDIUM_MAX);  /* large */
    if (pick < 92)
        return h_top_sizes[nd_rng_below(r, H_COUNT_OF(h_top_sizes))];
    return h_edge_sizes[nd_rng_below(r, H_COUNT_OF(h_edge_sizes))];
}

/* A power of two from 16 B to 2 MiB, half of them 8 KiB or more. */
static size_t h_align(struct nd_rng *r)
{
    unsigned bits = nd_rng_below(r, 2) ? 4 + (unsigned)nd_rng_below(r, 9)
                                       : 13 + (unsigned)nd_rng_below(r, 9);
    return (size_t)1 << bits;
}

static int h_node(struct nd_rng *r)
{
    return h_node_ids[nd_rng_below(r, (uint64_t)h_node_count)];
}

static int h_node_valid(int node)
{
    for (int i = 0; i < h_node_count; i++)
        if (h_node_ids[i] == node)
            return 1;
    return 0;
}

/* ---- contents: head, tail and a sample of the middle ------------------------ */

#define H_EDGE   ((size_t)256)      /* pattern bytes at each end */
#define H_STRIDE ((size_t)8192)     /* one 16-byte sample per stride between */

/* Writes (check == 0) or verifies the pattern of a block laid out as `len`
   bytes, below `cut`; returns the first wrong offset or SIZE_MAX. */
static size_t h_pattern(unsigned char *p, size_t len, size_t cut, uint64_t tag, int check)
{
    size_t bad, head = nd_min_size(len, H_EDGE);
    if ((bad = nd_pat_range(p, 0, nd_min_size(head, cut), tag, check)) != SIZE_MAX)
        return bad;
    if (len <= H_EDGE)
        return SIZE_MAX;
    size_t tail = len - H_EDGE > H_EDGE ? len - H_EDGE : H_EDGE;
    for (size_t o = H_STRIDE; o + 16 <= tail && o < cut; o += H_STRIDE)
        if ((bad = nd_pat_range(p, o, nd_min_size(o + 16, cut), tag, check)) != SIZE_MAX)
            return bad;
    if (tail < cut)
        return nd_pat_range(p, tail, nd_min_size(len, cut), tag, check);
    return SIZE_MAX;
}

static void h_write(struct h_thread *t, struct h_block *b)
{
    /* Most blocks get their pattern over the size asked for; some only in
       their first bytes, some not at all. */
    uint64_t pick = nd_rng_below(&t->rng, 10);
    b->tag = nd_rng_next(&t->rng) | 1;
    if (pick < 7)
        b->wlen = b->size;
    else if (pick < 8)
        b->wlen = nd_min_size(b->size, 8);
    else
        b->wlen = 0;
    if (b->wlen == 0)
        atomic_fetch_add_explicit(&h_count[C_UNWRITTEN], 1, memory_order_relaxed);
    b->wcut = b->wlen;
    h_pattern(b->p, b->wlen, b->wcut, b->tag, 0);
}

static void h_check(const struct h_block *b, const char *when)
{
    size_t bad = h_pattern(b->p, b->wlen, b->wcut, b->tag, 1);
    HEXPECT(bad == SIZE_MAX, "the %zu-byte block %p (from %s in thread %u, pattern over %zu "
            "bytes) to keep its contents %s; byte %zu differs", b->size, (void *)b->p,
            h_how_name[b->how], b->maker, b->wcut, when, bad);
    size_t u = A->usable_size(b->p);
    HEXPECT(u == b->usable, "%s of the %zu-byte block %p (from %s) to stay %zu %s, it is %zu",
            nd_fn("malloc_usable_size"), b->size, (void *)b->p, h_how_name[b->how], b->usable,
            when, u);
}

/* ---- the checks every new block passes ----------------------------------- */

/* A block `how` just returned for `size` bytes, alignment `align`, node
   `node` (or H_PLAIN): checks it and records it in *b (contents still to
   be decided by the caller). */
static void h_adopt(struct h_thread *t, struct h_block *b, void *vp, size_t size, size_t align,
                    int node, int how, int zeroed)
{
    unsigned char *p = vp;
    HEXPECT(p != NULL, "%s(%zu bytes, alignment %zu, node %d) to succeed, got NULL (errno %d)",
            h_how_name[how], size, align, node, errno);
    if (align < 16)
        align = 16;
    HEXPECT(is_aligned(p, align), "%s(%zu) to return a block aligned to %zu, got %p",
            h_how_name[how], size, align, vp);
    size_t usable = A->usable_size(p);
    HEXPECT(usable >= size, "%s of the block %s(%zu) returned (%p) to be at least %zu, it is %zu",
            nd_fn("malloc_usable_size"), h_how_name[how], size, vp, size, usable);
    if (zeroed) {
        size_t bad = nd_zero_check(p, size);
        HEXPECT(bad == SIZE_MAX, "%s(%zu) to return zeroed memory; byte %zu of %p is 0x%02x",
                h_how_name[how], size, bad, vp, bad == SIZE_MAX ? 0 : p[bad]);
    }
    if (node >= 0) {
        int on = nodal_node_of(p);
        HEXPECT(on == node, "%s(%zu) for node %d to give a block on node %d, nodal_node_of(%p) "
                "says %d", h_how_name[how], size, node, node, vp, on);
    } else if (nd_rng_below(&t->rng, 16) == 0) {
        int on = nodal_node_of(p);
        HEXPECT(h_node_valid(on), "nodal_node_of(%p) (plain memory from %s(%zu)) to name a node "
                "with memory, got %d", vp, h_how_name[how], size, on);
    }
    memset(b, 0, sizeof *b);
    b->p = p;
    b->size = size;
    b->usable = usable;
    b->align = align;
    b->node = node;
    b->how = (uint8_t)how;
    b->maker = (uint8_t)t->index;
    atomic_fetch_add_explicit(&h_count[C_ALLOC], 1, memory_order_relaxed);
}

/* ---- operations ---------------------------------------------------------- */

/* Allocates a new block into *b, by one of the allocation calls. */
static void h_allocate(struct h_thread *t, struct h_block *b)
{
    struct nd_rng *r = &t->rng;
    size_t size = h_size(r), align = 16;
    int node = H_PLAIN, how, zeroed = 0;
    void *p = NULL;
    uint64_t pick = nd_rng_below(r, 100);
    errno = 0;
    if (pick < 26) {
        how = H_MALLOC;
        t->doing = "malloc";
        p = A->malloc(size);
    } else if (pick < 36) {
        size_t count = 1 + nd_rng_below(r, 8);
        size /= count;
        how = H_CALLOC;
        t->doing = "calloc";
        p = A->calloc(count, size);
        size *= count;
        zeroed = 1;
    } else if (pick < 41) {
        how = H_REALLOC;
        t->doing = "realloc of NULL";
        p = A->realloc(NULL, size);
    } else if (pick < 66) {
        /* The aligned calls, a third of the time for size 0. */
        align = h_align(r);
        if (nd_rng_below(r, 3) == 0) {
            size = 0;
            atomic_fetch_add_explicit(&h_count[C_ZERO_ALIGNED], 1, memory_order_relaxed);
        }
        if (pick < 50) {
            how = H_POSIX_MEMALIGN;
            t->doing = "posix_memalign";
            int rc = A->posix_memalign(&p, align, size);
            HEXPECT(rc == 0, "posix_memalign(%zu, %zu) to return 0, got %d", align, size, rc);
        } else if (pick < 56) {
            how = H_ALIGNED_ALLOC;
            t->doing = "aligned_alloc";
            p = A->aligned_alloc(align, size);
        } else if (pick < 60) {
            how = H_MEMALIGN;
            t->doing = "memalign";
            p = A->memalign(align, size);
        } else {
            how = H_ALIGNED_NODE;
            t->doing = "nodal_aligned_alloc_node";
            node = h_node(r);
            p = nodal_aligned_alloc_node(align, size, node);
        }
    } else if (pick < 84) {
        how = H_MALLOC_NODE;
        t->doing = "nodal_malloc_node";
        node = h_node(r);
        p = nodal_malloc_node(size, node);
    } else if (pick < 92) {
        size_t count = 1 + nd_rng_below(r, 4);
        size /= count;
        how = H_CALLOC_NODE;
        t->doing = "nodal_calloc_node";
        node = h_node(r);
        p = nodal_calloc_node(count, size, node);
        size *= count;
        zeroed = 1;
    } else {
        how = H_REALLOC_NODE;
        t->doing = "nodal_realloc_node of NULL";
        node = h_node(r);
        p = nodal_realloc_node(NULL, size, node);
    }
    h_adopt(t, b, p, size, align, node, how, zeroed);
    h_write(t, b);
    t->live += b->size;
}

/* Frees *b with a call that fits it, contents checked first. */
static void h_release(struct h_thread *t, struct h_block *b, const char *what)
{
    t->doing = what;
    h_check(b, "until it is freed");
    uint64_t pick = nd_rng_below(&t->rng, 4);
    if (pick == 1) {
        t->doing = "free_sized";
        A->free_sized(b->p, b->size);
    } else if (pick == 2 && b->how == H_ALIGNED_ALLOC) {
        t->doing = "free_aligned_sized";
        A->free_aligned_sized(b->p, b->align, b->size);
    } else {
        A->free(b->p);
    }
    memset(b, 0, sizeof *b);
    atomic_fetch_add_explicit(&h_count[C_FREE], 1, memory_order_relaxed);
}

/* Reallocates *b (plain or to a node, any size), contents checked before
   and after. */
static void h_reallocate(struct h_thread *t, struct h_block *b, int received)
{
    struct nd_rng *r = &t->rng;
    h_check(b, received ? "when it is received" : "until it is reallocated");
    struct h_block old = *b;
    size_t size = h_size(r);
    /* A block whose second word the program never wrote, often into a
       small one: realloc copies what memory held there. */
    if (old.wcut < 16 && nd_rng_below(r, 4) != 0)
        size = 1 + nd_rng_below(r, 512);
    int to_node = nd_rng_below(r, 3) == 0;
    int node = to_node ? h_node(r) : old.node;
    void *q;
    errno = 0;
    if (to_node) {
        t->doing = received ? "nodal_realloc_node of a received block" : "nodal_realloc_node";
        if (size == 0)
            size = 1;
        q = nodal_realloc_node(old.p, size, node);
        atomic_fetch_add_explicit(&h_count[C_REALLOC_NODE], 1, memory_order_relaxed);
    } else {
        t->doing = received ? "realloc of a received block" : "realloc";
        q = A->realloc(old.p, size);
        atomic_fetch_add_explicit(&h_count[C_REALLOC], 1, memory_order_relaxed);
        if (size == 0 && q == NULL) {      /* realloc(p, 0) freed it */
            memset(b, 0, sizeof *b);
            t->live -= old.size;
            return;
        }
    }
    h_adopt(t, b, q, size, 16, node, to_node ? H_REALLOC_NODE : H_REALLOC, 0);
    /* What was written survives up to the new size. */
    b->tag = old.tag;
    b->wlen = old.wlen;
    b->wcut = nd_min_size(old.wcut, size);
    size_t bad = h_pattern(b->p, b->wlen, b->wcut, b->tag, 1);
    HEXPECT(bad == SIZE_MAX, "%s(%p [%zu bytes from %s], %zu) = %p to keep the first %zu bytes; "
            "byte %zu differs", t->doing, (void *)old.p, old.size, h_how_name[old.how], size,
            (void *)q, b->wcut, bad);
    if (nd_rng_below(r, 2))
        h_write(t, b);        /* else the old contents stay (maybe none) */
    t->live = t->live - old.size + size;
}

/* Moves *b by hand between plain and node memory: a new block, the
   written bytes copied, the old one freed. */
static void h_move(struct h_thread *t, struct h_block *b)
{
    struct nd_rng *r = &t->rng;
    h_check(b, "until it is moved");
    struct h_block old = *b;
    int node = old.node >= 0 && nd_rng_below(r, 2) ? H_PLAIN : h_node(r);
    void *q;
    errno = 0;
    if (node == H_PLAIN) {
        t->doing = "a move from node memory to plain memory";
        q = A->malloc(old.size);
    } else {
        t->doing = "a move to node memory";
        q = nodal_malloc_node(old.size, node);
    }
    h_adopt(t, b, q, old.size, 16, node, H_MOVED, 0);
    memcpy(b->p, old.p, old.size);
    b->tag = old.tag;
    b->wlen = old.wlen;
    b->wcut = old.wcut;
    t->doing = "free after a move";
    A->free(old.p);
    t->doing = "a check after a move";
    h_check(b, "after it is moved");
    atomic_fetch_add_explicit(&h_count[C_MOVE], 1, memory_order_relaxed);
}

/* Puts *b in the queue (1) or, when the queue is full, leaves it (0). */
static int h_send(struct h_thread *t, struct h_block *b)
{
    t->doing = "hand-over";
    h_check(b, "when it is handed over");
    int sent = 0;
    pthread_mutex_lock(&h_q_lock);
    if (h_q_count < h_q_cap) {
        h_q[(h_q_head + h_q_count++) % h_q_cap] = *b;
        sent = 1;
    }
    pthread_mutex_unlock(&h_q_lock);
    if (sent) {
        t->live -= b->size;
        memset(b, 0, sizeof *b);
        atomic_fetch_add_explicit(&h_count[C_SEND], 1, memory_order_relaxed);
    }
    return sent;
}

static int h_take(struct h_block *out)
{
    int got = 0;
    pthread_mutex_lock(&h_q_lock);
    if (h_q_count > 0) {
        *out = h_q[h_q_head];
        h_q_head = (h_q_head + 1) % h_q_cap;
        h_q_count--;
        got = 1;
    }
    pthread_mutex_unlock(&h_q_lock);
    return got;
}

/* Takes a block from the queue and frees it, reallocates it or keeps it in
   slot *b (whose block is handed over or freed first). */
static void h_receive(struct h_thread *t, struct h_block *b)
{
    struct h_block got;
    t->doing = "taking a block from the queue";
    if (!h_take(&got))
        return;
    atomic_fetch_add_explicit(&h_count[C_RECV], 1, memory_order_relaxed);
    uint64_t pick = nd_rng_below(&t->rng, 10);
    if (pick < 3) {
        h_release(t, &got, "free of a received block");
        atomic_fetch_add_explicit(&h_count[C_RECV_FREE], 1, memory_order_relaxed);
        return;
    }
    t->live += got.size;
    if (pick < 8) {
        h_reallocate(t, &got, 1);
        atomic_fetch_add_explicit(&h_count[C_RECV_REALLOC], 1, memory_order_relaxed);
        if (!got.p)
            return;
    } else {
        t->doing = "keeping a received block";
        h_check(&got, "when it is received");
        atomic_fetch_add_explicit(&h_count[C_RECV_KEEP], 1, memory_order_relaxed);
    }
    if (b->p && !h_send(t, b)) {
        t->live -= b->size;
        h_release(t, b, "free to make room for a received block");
    }
    *b = got;
}

/* A burst of small blocks of one size, all freed again: pages fill and
   retire, and their memory comes back later with freed blocks' debris. */
static void h_burst(struct h_thread *t)
{
    enum { MAX = 2048 };
    void *p[MAX];
    struct nd_rng *r = &t->rng;
    /* Half of them a power of two: the blocks then start on every OS page,
       where a large block carved from that memory later starts too. */
    size_t size = nd_rng_below(r, 2) ? (size_t)16 << nd_rng_below(r, 9)
                                     : 16 * (1 + nd_rng_below(r, 32));
    size_t n = 128 + nd_rng_below(r, MAX - 128);
    int write = (int)nd_rng_below(r, 2);
    t->doing = "a burst of small mallocs";
    for (size_t i = 0; i < n; i++) {
        p[i] = A->malloc(size);
        HEXPECT(p[i] != NULL, "%s(%zu) to succeed in a burst", nd_fn("malloc"), size);
        if (write)
            memset(p[i], (int)(i & 0xff), size);
    }
    t->doing = "a burst of small frees";
    int backwards = (int)nd_rng_below(r, 2);
    for (size_t i = 0; i < n; i++)
        A->free(p[backwards ? n - 1 - i : i]);
    if (nd_rng_below(r, 4) == 0) {
        t->doing = "nodal_collect(0) after a burst";
        nodal_collect(0);
    }
    atomic_fetch_add_explicit(&h_count[C_BURST], 1, memory_order_relaxed);
}

/* One step on a random slot. */
static void h_step(struct h_thread *t)
{
    struct nd_rng *r = &t->rng;
    struct h_block *b = &t->slot[nd_rng_below(r, (uint64_t)h_slots)];
    if (nd_rng_below(r, 100) == 0) {
        h_burst(t);
        return;
    }
    if (!b->p) {
        uint64_t pick = nd_rng_below(r, 10);
        if (pick < 3)
            h_receive(t, b);
        if (!b->p && pick < 9 && t->live < H_THREAD_BUDGET)
            h_allocate(t, b);
        return;
    }
    uint64_t pick = nd_rng_below(r, 100);
    if (pick < 16 || t->live >= H_THREAD_BUDGET) {
        t->live -= b->size;
        h_release(t, b, "free");
    } else if (pick < 38) {
        h_reallocate(t, b, 0);
    } else if (pick < 42) {
        h_move(t, b);
    } else if (pick < 64) {
        h_send(t, b);
    } else if (pick < 90) {
        h_receive(t, b);
    } else {
        t->doing = "a check of a live block";
        h_check(b, "while it is live");
        if (b->node >= 0) {
            int on = nodal_node_of(b->p);
            HEXPECT(on == b->node, "the block %p (from %s for node %d) to stay on node %d, "
                    "nodal_node_of says %d", (void *)b->p, h_how_name[b->how], b->node, b->node,
                    on);
        }
        HEXPECT(is_aligned(b->p, b->align), "the block %p from %s to be aligned to %zu",
                (void *)b->p, h_how_name[b->how], b->align);
    }
}

static void h_finished(int index)
{
    pthread_mutex_lock(&h_done_lock);
    h_done[h_done_count++] = index;
    pthread_cond_signal(&h_done_cond);
    pthread_mutex_unlock(&h_done_lock);
}

static void *h_worker(void *arg)
{
    struct h_thread *t = arg;
    h_self = t;
    t->step = 0;
    t->live = 0;
    t->retired = 0;
    while (t->ops_left > 0) {
        t->step++;
        t->ops_left--;
        h_step(t);
        if ((t->step & 1023) == 0 && h_deadline > 0 && h_now() > h_deadline)
            t->ops_left = 0;
        if (h_churn > 0 && t->ops_left > 0 && nd_rng_below(&t->rng, (uint64_t)h_churn) == 0) {
            /* Exit now; the blocks go to the queue (what does not fit is
               freed), most of them to be freed by threads that did not
               allocate them while this one is gone. */
            t->retired = 1;
            atomic_fetch_add_explicit(&h_count[C_RETIRE], 1, memory_order_relaxed);
            break;
        }
    }
    for (int i = 0; i < h_slots; i++) {
        struct h_block *b = &t->slot[i];
        if (!b->p)
            continue;
        if (t->retired && h_send(t, b))
            continue;
        t->live -= b->size;
        h_release(t, b, t->retired ? "free before a thread exits" : "free at the end of a round");
    }
    t->doing = "exiting";
    h_finished(t->index);
    return NULL;
}

static void h_spawn(struct h_thread *t)
{
    uint64_t stream = ((uint64_t)h_round << 40) | ((uint64_t)t->index << 24) | t->gen;
    t->rng = nd_rng_for(stream);
    t->doing = "starting";
    int rc = pthread_create(&t->tid, NULL, h_worker, t);
    HEXPECT(rc == 0, "pthread_create of thread %d.%u to work (error %d)", t->index, t->gen, rc);
}

/* One round: every position runs its share of `ops` steps (a position whose
   thread exits early gets a new thread for the rest); then the main thread
   frees what is left in the queue. */
static void h_round_run(long ops)
{
    int running = 0;
    h_main_doing = "starting the round's threads";
    for (int i = 0; i < h_threads; i++) {
        struct h_thread *t = &h_thr[i];
        t->index = i;
        t->gen = 0;
        t->ops_left = ops / h_threads + (i < ops % h_threads);
        h_spawn(t);
        running++;
    }
    while (running > 0) {
        h_main_doing = "waiting for threads";
        pthread_mutex_lock(&h_done_lock);
        while (h_done_count == 0)
            pthread_cond_wait(&h_done_cond, &h_done_lock);
        int i = h_done[--h_done_count];
        pthread_mutex_unlock(&h_done_lock);
        struct h_thread *t = &h_thr[i];
        h_main_doing = "joining a thread";
        pthread_join(t->tid, NULL);
        if (t->ops_left > 0) {
            h_main_doing = "starting a thread in place of one that exited";
            t->gen++;
            h_spawn(t);
        } else {
            running--;
        }
    }
    struct h_block b;
    h_main_doing = "freeing the blocks left in the queue";
    while (h_take(&b)) {
        size_t bad = h_pattern(b.p, b.wlen, b.wcut, b.tag, 1);
        HEXPECT(bad == SIZE_MAX, "the %zu-byte block %p left in the queue (from %s in thread %u) "
                "to keep its contents; byte %zu differs", b.size, (void *)b.p,
                h_how_name[b.how], b.maker, bad);
        size_t u = A->usable_size(b.p);
        HEXPECT(u == b.usable, "%s of the block %p left in the queue to stay %zu, it is %zu",
                nd_fn("malloc_usable_size"), (void *)b.p, b.usable, u);
        A->free(b.p);
    }
}

static void blocks_handed_between_threads_stay_intact_and_in_use(void)
{
    A = nd_api();
#ifndef ND_TEST_PREFIX_ONLY
    ND_NEED(A->free_sized, "free_sized");
    ND_NEED(A->free_aligned_sized, "free_aligned_sized");
#endif
    h_threads = (int)nd_opt_long("threads", 4);
    long ops = nd_opt_long("ops", 200000);
    long seconds = nd_opt_long("seconds", 0);
    h_slots = (int)nd_opt_long("slots", 128);
    h_q_cap = (size_t)nd_opt_long("queue", 512);
    h_churn = nd_opt_long("churn", 20000);
    int hogs = (int)nd_opt_long("hogs", 1);
    HEXPECT(h_threads >= 1 && h_threads <= H_MAX_THREADS, "--threads between 1 and %d, got %d",
            H_MAX_THREADS, h_threads);
    HEXPECT(h_slots >= 1 && h_q_cap >= 1 && ops >= 1, "--slots, --queue and --ops to be >= 1");
    uint64_t seed = nd_test_seed();
    h_node_count = nodal_node_ids(h_node_ids, NODAL_MAX_NODES);
    HEXPECT(h_node_count >= 1, "nodal_node_ids to name at least one node, got %d", h_node_count);
    if (h_node_count > NODAL_MAX_NODES)
        h_node_count = NODAL_MAX_NODES;

    /* The queue and the slots come from the system's allocator where there
       is one beside nodal (prefix), from nodal otherwise: either way not
       the blocks under test. */
    h_q = calloc(h_q_cap, sizeof *h_q);
    HEXPECT(h_q != NULL, "the queue to be allocated");
    for (int i = 0; i < h_threads; i++) {
        h_thr[i].slot = calloc((size_t)h_slots, sizeof *h_thr[i].slot);
        HEXPECT(h_thr[i].slot != NULL, "the slots to be allocated");
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h_on_fatal;
    sigaction(SIGABRT, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);

    h_hogs_start(hogs);
    double start = h_now();
    h_deadline = seconds > 0 ? start + (double)seconds : 0;
    do {
        h_round_run(ops);
        h_round++;
    } while (h_deadline > 0 && h_now() < h_deadline);
    h_hogs_stop();

    char counts[1024];
    size_t n = 0;
    for (int c = 0; c < C_COUNT; c++) {
        long v = atomic_load(&h_count[c]);
        n += (size_t)snprintf(counts + n, sizeof counts - n, "%s%s %ld", c ? ", " : "",
                              h_count_name[c], v);
        if (n >= sizeof counts)
            n = sizeof counts - 1;
    }
    printf("%s: %ld round(s) of %ld steps, %d threads, %d hog(s), %d node(s), %.1f s, "
           "seed %" PRIu64 ": %s\n", nd_case_name, h_round, ops, h_threads, hogs, h_node_count,
           h_now() - start, seed, counts);
    for (int i = 0; i < h_threads; i++)
        free(h_thr[i].slot);
    free(h_q);
}

static const struct nd_case cases[] = {
    ND_CASE(blocks_handed_between_threads_stay_intact_and_in_use),
};
ND_MAIN(cases)
