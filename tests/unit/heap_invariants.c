/*
 * heap_invariants.c - unit tests of the heap and page invariants under
 * random workloads: after every batch of operations nd_heap_is_valid() must
 * hold for the thread's heaps (the core is built with ND_DEBUG=2, so fills
 * and flushes check it too), blocks must come back intact, and remote frees
 * must return to their owner's pages.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string.h>
#include "alloc.h"
#include "heap.h"
#include "huge.h"
#include "page.h"
#include "check.h"
#include "proc.h"
#include "thread.h"
#include "segment.h"

#define MiB_ ((size_t)1 << 20)

static size_t random_size(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = *x >> 33;
    switch (r % 8) {
    case 0: return r % 17;
    case 1: case 2: case 3: return 16 + r % 1024;
    case 4: case 5: return 1024 + r % (32 << 10);
    case 6: return (32 << 10) + r % (256 << 10);
    default: return (r & 0x3f00) == 0 ? (4 << 20) + r % (4 << 20)   /* now and then huge */
                                      : (256 << 10) + r % (2 << 20);
    }
}

static void random_operations_keep_the_heap_valid(void)
{
    enum { N = 2048 };
    static void *p[N];
    static size_t sz[N];
    uint64_t x = nd_test_seed();
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 4000; i++) {
            size_t k = (size_t)(x >> 40) % N;
            x = x * 6364136223846793005ull + 1;
            if (p[k]) {
                for (size_t j = 0; j < sz[k]; j += 4096)
                    EXPECT(((unsigned char *)p[k])[j] == (unsigned char)(k + j), "block %zu byte %zu intact", k, j);
                nodal_free(p[k]);
                p[k] = NULL;
            } else {
                sz[k] = random_size(&x);
                p[k] = nodal_malloc(sz[k]);
                EXPECT(p[k] != NULL, "malloc(%zu) to succeed", sz[k]);
                for (size_t j = 0; j < sz[k]; j += 4096)
                    ((unsigned char *)p[k])[j] = (unsigned char)(k + j);
            }
        }
        EXPECT(nd_thread_is_valid(), "the heap invariants to hold after round %d", round);
    }
    for (int k = 0; k < N; k++)
        nodal_free(p[k]), p[k] = NULL;
    EXPECT(nd_thread_is_valid(), "the heap invariants to hold after freeing everything");
}

static void *producer(void *arg)
{
    void **slots = arg;
    for (int i = 0; i < 20000; i++)
        slots[i] = nodal_malloc(16 + (size_t)(i % 300));
    EXPECT(nd_thread_is_valid(), "the producer's heap to be valid");
    return NULL;
}

/* Blocks freed by another thread go back to their owner's pages: once the
   owner has collected, the pages are empty again and the heap is valid. */
static void remote_frees_return_to_the_owner(void)
{
    static void *slots[20000];
    pthread_t t;
    nodal_free(nodal_malloc(1));   /* this thread has a heap to adopt into */
    EXPECT(pthread_create(&t, NULL, producer, slots) == 0, "pthread_create to work");
    pthread_join(t, NULL);   /* the producer exits: its segments are abandoned */
    for (int i = 0; i < 20000; i++)
        nodal_free(slots[i]);   /* remote frees into abandoned segments */
    nodal_collect(1);
    EXPECT(nd_thread_is_valid(), "the heap that adopted the segments to be valid");
    /* Everything returned: no small block of the producer is still live. */
    char json[1 << 16];
    nodal_stats_json(json, sizeof json);
    const char *th = strstr(json, "\"threads\":");
    EXPECT(th != NULL && atoi(th + 10) == 1, "only this thread to be live, stats say %.14s", th ? th : "nothing");
    const char *a = strstr(json, "\"allocated\":");
    EXPECT(a != NULL && atol(a + 12) == 0, "no byte to be allocated, stats say %.24s", a ? a : "nothing");
}

/* Blocks another thread frees wait in its cache and go back to their own
   pages as one chain per page: freed in address order, runs cross page
   boundaries (page 0 of a segment starts after the header) and must still
   land on the right page. The owner then takes them all back, checked. */
struct handoff { void **blocks; int n, down; };

static void *free_in_address_order(void *arg)
{
    struct handoff *h = arg;
    for (int i = 0; i < h->n; i++)
        nodal_free(h->blocks[h->down ? h->n - 1 - i : i]);
    nodal_collect(0);   /* flush this thread's cache: every chain goes home now */
    return NULL;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

static void remote_frees_in_chains_go_back_to_their_own_pages(void)
{
    enum { N = 40000 };
    static void *blocks[N];
    size_t sizes[] = { 48, 96, 3072, 48, 96, 3072 };
    for (size_t k = 0; k < 6; k++) {
        for (int i = 0; i < N; i++) {
            blocks[i] = nodal_malloc(sizes[k]);
            EXPECT(blocks[i] != NULL, "malloc(%zu) to succeed", sizes[k]);
        }
        qsort(blocks, N, sizeof blocks[0], by_address);
        struct handoff h = { blocks, N, k >= 3 };   /* ascending, then descending addresses */
        pthread_t t;
        EXPECT(pthread_create(&t, NULL, free_in_address_order, &h) == 0, "pthread_create to work");
        pthread_join(t, NULL);
        for (int i = 0; i < N; i++)
            blocks[i] = nodal_malloc(sizes[k]);   /* takes the chains back, checking every link */
        EXPECT(nd_thread_is_valid(), "the heap invariants to hold after taking back %d blocks of %zu B", N, sizes[k]);
        for (int i = 0; i < N; i++)
            nodal_free(blocks[i]);
    }
}

/* A thread that frees a block of a full page "notifies" the owner: it holds
   the page BUSY from its push until the page is on the owner's `notified`
   list. fork() can cut such a thread off at either point; the owner in the
   child must not wait for it forever. Simulated here: this thread pushes
   one of its own blocks as a remote free would, stops where the notifier
   would be cut off, and forks. The child frees everything (the page leaves
   the full queue, which waits out BUSY), allocates again and checks the
   heap. */
static void fork_cutting_off_a_remote_free_leaves_a_working_child(void)
{
    enum { N = 4096 };
    static void *blocks[N];
    for (int variant = 0; variant < 2; variant++) {
        nd_page *pg = NULL;
        int victim = -1;
        for (int i = 0; i < N; i++) {
            blocks[i] = nodal_malloc(64);
            EXPECT(blocks[i] != NULL, "malloc(64) to succeed");
        }
        for (int i = 0; i < N && pg == NULL; i++) {
            nd_page *q = nd_page_of(nd_seg_base(blocks[i]), blocks[i]);
            if ((nd_load_acquire(&q->xfree) & ND_XSTATE_MASK) == ND_XSTATE_NOTIFY)
                pg = q, victim = i;
        }
        EXPECT(pg != NULL, "some page of %d blocks of 64 B to be full and armed", N);
        EXPECT(nd_page_xpush(pg, blocks[victim]) == ND_XSTATE_NOTIFY,
               "the push to find the page armed (the pusher must notify)");
        nd_heap *h = nd_load_acquire(&pg->heap);
        if (variant == 1) {     /* cut off after queueing the page, before clearing BUSY */
            pg->xnext = h->notified;
            h->notified = pg;
        }
        blocks[victim] = NULL;
        fflush(NULL);
        pid_t pid = fork();
        EXPECT(pid >= 0, "fork to work");
        if (pid == 0) {
            alarm(20);
            for (int i = 0; i < N; i++)
                nodal_free(blocks[i]);
            nodal_collect(0);
            for (int i = 0; i < N; i++)
                blocks[i] = nodal_malloc(64);
            bool ok = nd_thread_is_valid();
            for (int i = 0; i < N; i++)
                nodal_free(blocks[i]);
            _exit(ok && nd_thread_is_valid() ? 0 : 3);
        }
        /* The parent is single-threaded too: finish the notification the
           same way, then give everything back. */
        nd_heap_fork_child(h);
        int st;
        while (waitpid(pid, &st, 0) < 0)
            ;
        EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0,
               "the child (variant %d) to free, allocate and exit 0; it %s", variant,
               nd_describe_status(st));
        for (int i = 0; i < N; i++)
            nodal_free(blocks[i]);
        EXPECT(nd_thread_is_valid(), "the parent's heap to be valid after variant %d", variant);
    }
}

/* realloc moves a plain huge block to a new mapping when it cannot grow
   in place (mremap). The old addresses are free for anyone once the block
   has moved: a block another thread maps there meanwhile must keep its
   segment-map entries (they were wiped when the move cleared the old
   range's entries after the fact: that block's free then aborted with
   "invalid pointer (not allocated by nodal)"). The hook maps huge blocks
   of the old size right after the move, as another thread could: the
   kernel usually hands back the range just released. */
static void *moved_hook_blocks[4];
static int moved_hook_hits;

static void map_where_the_block_was(void *old_start, size_t old_size)
{
    for (int i = 0; i < 4; i++) {
        moved_hook_blocks[i] = nodal_malloc(old_size - 8192);
        if ((uint8_t *)moved_hook_blocks[i] >= (uint8_t *)old_start &&
            (uint8_t *)moved_hook_blocks[i] < (uint8_t *)old_start + old_size)
            moved_hook_hits++;
    }
}

static void a_huge_block_mapped_where_a_moved_one_was_stays_nodals(void)
{
    enum { ROUNDS = 16 };
    nd_huge_moved_hook = map_where_the_block_was;
    for (int r = 0; r < ROUNDS; r++) {
        /* A block, and one right after it so that it cannot grow in place. */
        size_t size = (size_t)(8 + r % 4) << 20;
        uint8_t *p = nodal_malloc(size);
        void *fence = nodal_malloc((size_t)4 << 20);
        EXPECT(p != NULL && fence != NULL, "huge mallocs to succeed");
        memset(p, 0x5a, 4096);
        moved_hook_blocks[0] = NULL;
        uint8_t *q = nodal_realloc(p, size * 3);
        EXPECT(q != NULL && q[4095] == 0x5a, "realloc of a huge block to keep its contents");
        for (int i = 0; i < 4; i++) {
            void *b = moved_hook_blocks[i];
            if (b == NULL)
                continue;
            EXPECT(nodal_usable_size(b) >= ((size_t)(8 + r % 4) << 20) - 8192,
                   "a huge block mapped while another moved to be nodal's and in use");
            nodal_free(b);   /* aborts if its segment-map entries were wiped */
            moved_hook_blocks[i] = NULL;
        }
        nodal_free(q);
        nodal_free(fence);
    }
    nd_huge_moved_hook = NULL;
    if (moved_hook_hits == 0)
        SKIP("the kernel never mapped a new block where a moved one was (%d rounds): the window was "
             "not exercised", ROUNDS);
}

/* Under an address-space limit that leaves room for no 4 MiB segment, a
   thread's small and medium blocks come from short segments (segment.h):
   their invariants hold (nd_thread_is_valid checks every segment of the
   thread's heaps), their blocks stay intact, a request that does not fit
   fails with ENOMEM, and an empty short segment goes back to the OS. */
static long vm_kib(void)
{
    char buf[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(buf, sizeof buf, f) != NULL)
        if (strncmp(buf, "VmSize:", 7) == 0)
            kib = atol(buf + 7);
    fclose(f);
    return kib;
}

static void *short_segment_work(void *arg)
{
    enum { N = 512 };
    static void *p[N];
    static size_t sz[N];
    int *result = arg;
    uint64_t x = nd_test_seed();
    int ok = 0, failed = 0, short_seen = 0, bad = 0;
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < 3000; i++) {
            size_t k = (size_t)(x >> 40) % N;
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            if (p[k] != NULL) {
                for (size_t j = 0; j < sz[k]; j += 512)
                    bad += ((unsigned char *)p[k])[j] != (unsigned char)(k + j);
                nodal_free(p[k]);
                p[k] = NULL;
                continue;
            }
            sz[k] = (x >> 33) % 4 == 0 ? 16384 + (x >> 20) % (112 << 10) : 1 + (x >> 20) % 2048;
            errno = 0;
            p[k] = nodal_malloc(sz[k]);
            if (p[k] == NULL) {
                failed++;
                bad += errno != ENOMEM;
                continue;
            }
            ok++;
            short_seen |= nd_seg_base(p[k])->size < ND_SEG_SIZE;
            for (size_t j = 0; j < sz[k]; j += 512)
                ((unsigned char *)p[k])[j] = (unsigned char)(k + j);
        }
        bad += !nd_thread_is_valid();
    }
    for (int k = 0; k < N; k++) {
        nodal_free(p[k]);
        p[k] = NULL;
    }
    nodal_collect(1);
    bad += !nd_thread_is_valid();
    result[0] = ok, result[1] = failed, result[2] = short_seen, result[3] = bad;
    return NULL;
}

static void short_segments_under_an_address_space_limit_keep_the_heap_valid(void)
{
    fflush(NULL);
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork to work");
    if (pid == 0) {
        alarm(60);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 << 10);
        /* Room for the thread's stack and 3 MiB: no whole segment. */
        long vm = vm_kib();
        struct rlimit lim;
        lim.rlim_cur = lim.rlim_max = (rlim_t)vm * 1024 + ((rlim_t)3 << 20);
        if (vm <= 0 || setrlimit(RLIMIT_AS, &lim) != 0)
            _exit(4);
        int r[4] = { 0, 0, 0, 0 };
        pthread_t t;
        if (pthread_create(&t, &attr, short_segment_work, r) != 0)
            _exit(5);
        pthread_join(t, NULL);
        printf("%d %d %d %d\n", r[0], r[1], r[2], r[3]);
        _exit(r[0] > 0 && r[2] && r[3] == 0 ? 0 : 3);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ;
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "the child to get blocks from short segments, with every block intact, every failure ENOMEM and "
           "the heap valid (exit 0); it %s (4: no limit, 5: no thread, 3: see its line of ok, failed, "
           "short segments seen, problems)", nd_describe_status(st));
}

/* The segment map is a direct-mapped table (segment.h): a window 256 GiB
   away from a segment's has the same slot, and is neither taken for the
   segment nor given the slot while the segment holds it; a mapping whose
   slots are all taken is put aside (nd_seg_reserve), and the allocation
   fails cleanly when every place the kernel offers is. */
static uintptr_t other_window_of_slot(uintptr_t w)
{
    /* The same slot in another 256 GiB region, below 2^47. */
    uintptr_t region = (uintptr_t)ND_SEGMAP_SLOTS << ND_SEG_SHIFT;
    uintptr_t a = w << ND_SEG_SHIFT;
    return a >= region ? a - region : a + region;
}

static void segment_map_words_name_their_window(void)
{
    char *p = nodal_malloc(64);
    EXPECT(p != NULL, "malloc(64) to succeed");
    nd_segment *s = nd_seg_base(p);
    EXPECT(nd_seg_of(p) == s, "a block's segment to be found through the map");
    uintptr_t alias = other_window_of_slot((uintptr_t)s >> ND_SEG_SHIFT);
    EXPECT(nd_seg_of((void *)(alias + 64)) == NULL && !nd_segmap_is_start(alias),
           "an address 256 GiB from a segment (the same slot) not to be nodal's");
    EXPECT(!nd_segmap_huge((nd_segment *)alias, 0, ND_SEG_SIZE), "a window whose slot is taken not to be claimed");
    EXPECT(nd_seg_of(p) == s, "the segment's word to be intact after a refused claim");
    /* A window with a free slot: claimed for three chunks, found from each,
       released. */
    uintptr_t w = alias >> ND_SEG_SHIFT;
    while (!nd_segmap_huge((nd_segment *)(w << ND_SEG_SHIFT), 0, 3 * ND_SEG_SIZE))
        w += 3;
    uint8_t *x = (uint8_t *)(w << ND_SEG_SHIFT);
    EXPECT(nd_seg_of(x + 5 * MiB_) == (nd_segment *)x && nd_seg_of(x + 9 * MiB_) == (nd_segment *)x &&
           nd_segmap_is_start((uintptr_t)x) && !nd_segmap_is_start((uintptr_t)x + ND_SEG_SIZE),
           "every chunk of a claimed mapping to point back at its start, only the first to be a start");
    EXPECT(nd_segmap_huge((nd_segment *)x, 3 * ND_SEG_SIZE, 0), "a release to succeed");
    EXPECT(nd_seg_of(x + 5 * MiB_) == NULL, "released windows not to be nodal's");
    nodal_free(p);
}

static void a_mapping_whose_slots_are_taken_goes_elsewhere_or_fails_cleanly(void)
{
    enum { CHUNKS = 3 };   /* an 8 MiB block and its header span three windows */
    /* Where an 8 MiB block goes; then the slots of those windows are
       taken (by windows 256 GiB away), and the next 8 MiB block must go
       elsewhere, wholly in the map. */
    uint8_t *p = nodal_malloc(8 * MiB_);
    EXPECT(p != NULL, "malloc(8 MiB) to succeed");
    uintptr_t w0 = (uintptr_t)nd_seg_of(p) >> ND_SEG_SHIFT;
    nodal_free(p);
    nodal_collect(1);
    bool held[CHUNKS];
    for (int i = 0; i < CHUNKS; i++)
        held[i] = nd_segmap_huge((nd_segment *)other_window_of_slot(w0 + (uintptr_t)i), 0, 1);
    p = nodal_malloc(8 * MiB_);
    EXPECT(p != NULL, "malloc(8 MiB) to succeed with the slots of the last one's windows taken");
    uintptr_t w1 = (uintptr_t)nd_seg_of(p) >> ND_SEG_SHIFT;
    for (int i = 0; i < CHUNKS; i++)
        EXPECT(!held[i] || w1 + 2 < w0 + (uintptr_t)i || w1 > w0 + (uintptr_t)i,
               "the new block not to use window %d of the last one, whose slot is taken", i);
    EXPECT(nd_seg_of(p + 6 * MiB_) == nd_seg_of(p) && nd_seg_of(p + 8 * MiB_ - 1) == nd_seg_of(p),
           "every window of the new block to be in the map");
    nodal_free(p);
    nodal_collect(1);
    for (int i = 0; i < CHUNKS; i++)
        if (held[i])
            EXPECT(nd_segmap_huge((nd_segment *)other_window_of_slot(w0 + (uintptr_t)i), 1, 0), "a release to succeed");

    /* Every slot taken: the allocation fails cleanly, and the mappings put
       aside are gone. */
    static uint8_t mine[ND_SEGMAP_SLOTS];
    uintptr_t far = (uintptr_t)0x500000000000 >> ND_SEG_SHIFT;   /* 80 TiB: nothing of this process is there */
    for (uintptr_t i = 0; i < ND_SEGMAP_SLOTS; i++)
        mine[i] = nd_segmap_huge((nd_segment *)((far + i) << ND_SEG_SHIFT), 0, 1);
    long vm = vm_kib();
    errno = 0;
    void *q = nodal_malloc(8 * MiB_);
    int err = errno;
    EXPECT(q == NULL && err == ENOMEM, "with every slot taken, malloc(8 MiB) to give NULL, ENOMEM (got %p, errno %d)",
           q, err);
    EXPECT(vm_kib() <= vm, "the mappings put aside to be unmapped (VmSize %ld KiB, was %ld)", vm_kib(), vm);
    for (uintptr_t i = 0; i < ND_SEGMAP_SLOTS; i++)
        if (mine[i])
            EXPECT(nd_segmap_huge((nd_segment *)((far + i) << ND_SEG_SHIFT), 1, 0), "a release to succeed");
    q = nodal_malloc(8 * MiB_);
    EXPECT(q != NULL, "malloc(8 MiB) to succeed once the slots are free again");
    nodal_free(q);
}

static const struct nd_case cases[] = {
    ND_CASE(a_huge_block_mapped_where_a_moved_one_was_stays_nodals),
    ND_CASE(short_segments_under_an_address_space_limit_keep_the_heap_valid),
    ND_CASE(segment_map_words_name_their_window),
    ND_CASE(a_mapping_whose_slots_are_taken_goes_elsewhere_or_fails_cleanly),
    ND_CASE(fork_cutting_off_a_remote_free_leaves_a_working_child),
    ND_CASE(random_operations_keep_the_heap_valid),
    ND_CASE(remote_frees_return_to_the_owner),
    ND_CASE(remote_frees_in_chains_go_back_to_their_own_pages),
};
ND_MAIN(cases)
