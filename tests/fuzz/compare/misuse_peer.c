/*
 * misuse_peer.c - one heap misuse or corruption per run, through the
 * standard names only, so any malloc can be put under it with LD_PRELOAD.
 * compare-misuse.sh runs every case under every allocator and tabulates
 * what each one does.
 *
 *   misuse_peer CASE        (misuse_peer --list prints the cases)
 *
 * After the misuse the program goes on using the heap and reports what it
 * sees, so "silent" is told apart from "silently corrupt":
 *   exit 0   nothing visible happened
 *   exit 3   stdout "DUP ..."       malloc handed out one block twice
 *   exit 3   stdout "EXPLOITED ..." malloc returned the address the test wrote
 *   exit 4   the test could not set itself up (no adjacent blocks, ...)
 * An allocator that catches the misuse aborts (SIGABRT, usually with a
 * message on stderr) or crashes (SIGSEGV) first.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <malloc.h>

/* Through volatile pointers: the compiler must not reason about these. */
static void *(*volatile M)(size_t) = malloc;
static void (*volatile F)(void *) = free;
static void *(*volatile R)(void *, size_t) = realloc;
static size_t (*volatile U)(void *) = malloc_usable_size;

static uint64_t target[64] __attribute__((aligned(64)));
static unsigned char global_buf[256];

static void dup_check(size_t size, int n)
{
    static void *got[65536];
    for (int i = 0; i < n; i++) {
        got[i] = M(size);
        for (int j = 0; j < i; j++)
            if (got[i] == got[j]) {
                printf("DUP %p\n", got[i]);
                fflush(stdout);
                _exit(3);
            }
    }
}

static void target_check(size_t size, int n)
{
    for (int i = 0; i < n; i++) {
        unsigned char *q = M(size);
        if (q >= (unsigned char *)target && q < (unsigned char *)target + sizeof target) {
            printf("EXPLOITED %p\n", (void *)q);
            fflush(stdout);
            _exit(3);
        }
    }
}

static void poison(void *p)
{
    uint64_t v = (uint64_t)(uintptr_t)target;
    memcpy(p, &v, sizeof v);
}

static void *thread_free(void *p)
{
    F(p);
    return NULL;
}

static void free_elsewhere(void *p)
{
    pthread_t t;
    pthread_create(&t, NULL, thread_free, p);
    pthread_join(t, NULL);
}

static void *thread_free_twice(void *p)
{
    F(p);
    F(p);
    return NULL;
}

/* ---- the cases --------------------------------------------------------- */

static void double_free(void)
{
    void *keep = M(32), *p = M(32);
    (void)keep;
    F(p);
    F(p);
    dup_check(32, 16);
}

static void double_free_p_q_p(size_t size)
{
    void *keep = M(size), *p = M(size), *q = M(size);
    (void)keep;
    F(p);
    F(q);
    F(p);
    dup_check(size, 16);
}
static void double_free_p_q_p_small(void) { double_free_p_q_p(32); }
static void double_free_p_q_p_large(void) { double_free_p_q_p(256 << 10); }

static void double_free_owner_then_other(void)
{
    void *keep[16];
    for (int i = 0; i < 16; i++)
        keep[i] = M(32);
    void *p = M(32);
    F(p);
    free_elsewhere(p);
    dup_check(32, 4096);
}

static void double_free_other_then_owner(void)
{
    void *keep[16];
    for (int i = 0; i < 16; i++)
        keep[i] = M(32);
    void *p = M(32);
    free_elsewhere(p);
    F(p);
    dup_check(32, 4096);
}

static void double_free_by_other_thread(void)
{
    void *keep = M(32), *p = M(32);
    (void)keep;
    pthread_t t;
    pthread_create(&t, NULL, thread_free_twice, p);
    pthread_join(t, NULL);
    dup_check(32, 4096);
}

static void interior(size_t size, size_t off)
{
    unsigned char *keep = M(size), *p = M(size);
    (void)keep;
    memset(p, 'x', size < 65536 ? size : 65536);
    F(p + off);
    for (int i = 0; i < 64; i++)
        if ((unsigned char *)M(size) == p + off) {
            printf("EXPLOITED interior pointer handed out\n");
            fflush(stdout);
            _exit(3);
        }
}
static void free_interior_small(void) { interior(64, 16); }
static void free_interior_large(void) { interior(256 << 10, 4096); }

static void free_stack(void)
{
    char buf[64];
    memset(buf, 1, sizeof buf);
    F(buf + 16);
}

static void free_global(void)
{
    F(global_buf + 64);
}

static void free_mmap(void)
{
    unsigned char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(m, 0x5a, 1 << 20);
    F(m + (1 << 19) + 2048 + 48);
}

/* One 8-byte write into a freed block that went back to the allocator's
   free list (cache or page list); then malloc watches for the address. */
static void write_after_free(void)
{
    enum { N = 12000 };
    static void *b[N];
    for (int i = 0; i < N; i++)
        b[i] = M(48);
    void *p = b[0];
    F(p);
    for (int i = N - 1; i >= N / 2; i--)
        F(b[i]);
    poison(p);
    target_check(48, 2 * N);
}

/* The same with the most recently freed block (the head of a cache). */
static void write_after_free_recent(void)
{
    void *keep = M(48), *p = M(48);
    (void)keep;
    F(p);
    poison(p);
    target_check(48, 64);
}

static void write_after_free_remote(void)
{
    void *keep[256];
    for (int i = 0; i < 256; i++)
        keep[i] = M(48);
    void *p = M(48);
    free_elsewhere(p);
    poison(p);
    target_check(48, 20000);
}

static int neighbours(size_t size, unsigned char **a, unsigned char **b)
{
    static unsigned char *blk[512];
    for (int i = 0; i < 512; i++)
        blk[i] = M(size);
    for (int i = 0; i < 512; i++)
        for (int j = 0; j < 512; j++)
            if (blk[j] > blk[i] && blk[j] <= blk[i] + U(blk[i]) + 16) {
                *a = blk[i];
                *b = blk[j];
                return 1;
            }
    return 0;
}

/* Overflow from a into its free neighbour b, up to 16 bytes into b. */
static void overflow_into_free_neighbour(void)
{
    unsigned char *a, *b;
    if (!neighbours(48, &a, &b))
        _exit(4);
    F(b);
    memset(a + 48, 0x41, (size_t)(b - (a + 48)) + 16);
    for (int i = 0; i < 4096; i++)
        (void)M(48);
    F(a);
}

/* Overflow of 32 bytes past the requested end of a live block. */
static void overflow_into_live_neighbour(void)
{
    unsigned char *a, *b;
    if (!neighbours(40, &a, &b))
        _exit(4);
    memset(a + 40, 0x41, 32);
    F(a);
    F(b);
    dup_check(40, 64);
}

static void realloc_freed_small(void)
{
    void *keep = M(100), *p = M(100), *keep2 = M(100);
    (void)keep, (void)keep2;
    F(p);
    void *q = R(p, 50);
    (void)q;
    dup_check(100, 64);
}

static void realloc_freed_large(void)
{
    void *keep = M(256 << 10), *p = M(256 << 10);
    (void)keep;
    F(p);
    void *q = R(p, 128 << 10);
    (void)q;
}

struct peer_case {
    const char *name;
    void (*run)(void);
};
static const struct peer_case peer_cases[] = {
    { "double_free", double_free },
    { "double_free_p_q_p_small", double_free_p_q_p_small },
    { "double_free_p_q_p_large", double_free_p_q_p_large },
    { "double_free_owner_then_other_thread", double_free_owner_then_other },
    { "double_free_other_thread_then_owner", double_free_other_then_owner },
    { "double_free_twice_by_other_thread", double_free_by_other_thread },
    { "free_interior_small", free_interior_small },
    { "free_interior_large", free_interior_large },
    { "free_stack_address", free_stack },
    { "free_global_address", free_global },
    { "free_foreign_mmap", free_mmap },
    { "write_after_free_recent_block", write_after_free_recent },
    { "write_after_free_flushed_block", write_after_free },
    { "write_after_free_remote_block", write_after_free_remote },
    { "overflow_into_free_neighbour", overflow_into_free_neighbour },
    { "overflow_into_live_neighbour", overflow_into_live_neighbour },
    { "realloc_of_freed_small_block", realloc_freed_small },
    { "realloc_of_freed_large_block", realloc_freed_large },
};
#define N_CASES (sizeof peer_cases / sizeof peer_cases[0])

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < N_CASES; i++)
            printf("%s\n", peer_cases[i].name);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE | --list\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < N_CASES; i++)
        if (strcmp(peer_cases[i].name, argv[1]) == 0) {
            peer_cases[i].run();
            return 0;
        }
    fprintf(stderr, "%s: no case %s\n", argv[0], argv[1]);
    return 2;
}
