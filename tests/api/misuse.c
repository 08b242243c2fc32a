/*
 * misuse.c - freeing what nodal never handed out, or freeing twice, stops the
 * program: one line on stderr that names nodal, then abort(). Each misuse runs
 * in a forked child; the parent checks the child died of SIGABRT and what it
 * printed.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>

#include "api.h"
#include "check.h"
#include "proc.h"

typedef void (*misuse_fn)(void *);

/* Runs `fn` in a child and checks the death it must die. */
static void expect_abort_with_message(const char *what, misuse_fn fn, void *arg)
{
    static struct nd_child c;
    nd_run_forked(fn, arg, 30, &c);
    EXPECT(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGABRT,
           "%s to abort the process (SIGABRT); the child %s; its stderr: \"%s\"",
           what, nd_describe_status(c.status), c.err);
    int lines = nd_count_lines_with(c.err, "nodal");
    EXPECT(lines == 1, "%s to print exactly one line containing \"nodal\" on stderr "
           "before aborting, found %d; stderr: \"%s\"", what, lines, c.err);
}

/* If the misuse is let through, say so: the parent sees a normal exit. */
static void survived(const char *what)
{
    fprintf(stderr, "the child survived %s\n", what);
    _exit(3);
}

static void free_stack_address(void *arg)
{
    (void)arg;
    char local[64];
    memset(local, 1, sizeof local);
    nd_api()->free(local + 16);
    survived("freeing a stack address");
}

static void free_of_stack_address_aborts_with_message(void)
{
    nd_api();
    expect_abort_with_message("freeing a stack address", free_stack_address, NULL);
}

/* A pointer into the middle of a page of a mapping nodal knows nothing of. */
static void free_foreign_mapping(void *arg)
{
    (void)arg;
    size_t len = (size_t)4 << 20;
    unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        _exit(4);
    memset(m, 0x5a, len);
    /* A little heap activity first, so nodal is initialized and has pages. */
    void *keep = nd_api()->malloc(100);
    nd_api()->free(m + len / 2 + 2048 + 48);
    (void)keep;
    survived("freeing a pointer into a foreign mapping");
}

static void free_of_pointer_into_foreign_mapping_aborts_with_message(void)
{
    nd_api();
    expect_abort_with_message("freeing a pointer into the middle of an mmap()ed page "
                              "nodal never handed out", free_foreign_mapping, NULL);
}

/* glibc's own malloc, whatever the program's malloc resolves to. */
static void *(*glibc_malloc(void))(size_t)
{
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (!libc)
        return NULL;
    void *sym = dlsym(libc, "__libc_malloc");
    if (!sym)
        sym = dlsym(libc, "malloc");
    void *(*fn)(size_t);
    memcpy(&fn, &sym, sizeof fn);
    return fn;
}

static void free_glibc_pointer(void *arg)
{
    void *(*gmalloc)(size_t);
    memcpy(&gmalloc, arg, sizeof gmalloc);
    void *p = gmalloc(40);
    if (!p)
        _exit(4);
    memset(p, 1, 40);
    void *keep = nd_api()->malloc(100);
    nd_api()->free(p);
    (void)keep;
    survived("freeing a glibc malloc pointer");
}

static void free_of_glibc_pointer_aborts_with_message(void)
{
    nd_api();
    void *(*gmalloc)(size_t) = glibc_malloc();
    if (!gmalloc)
        SKIP("glibc's malloc cannot be found with dlsym (not a glibc system?)");
    expect_abort_with_message("freeing a pointer from glibc's malloc",
                              free_glibc_pointer, &gmalloc);
}

static void double_free(void *arg)
{
    size_t size = *(size_t *)arg;
    const struct nd_api *A = nd_api();
    void *keep = A->malloc(size);   /* a neighbour, so the page stays in use */
    void *p = A->malloc(size);
    if (!p || !keep)
        _exit(4);
    memset(p, 1, size < 4096 ? size : 4096);
    A->free(p);
    A->free(p);
    survived("an immediate double free");
}

static void expect_double_free_abort(size_t size)
{
    char what[96];
    nd_api();
    snprintf(what, sizeof what, "freeing a %zu-byte block twice in a row", size);
    expect_abort_with_message(what, double_free, &size);
}

static void double_free_of_small_block_aborts_with_message(void)
{
    expect_double_free_abort(32);
}

static void double_free_of_medium_block_aborts_with_message(void)
{
    expect_double_free_abort(3000);
}

static void double_free_of_large_block_aborts_with_message(void)
{
    expect_double_free_abort((size_t)256 << 10);
}

static void double_free_of_huge_block_aborts_with_message(void)
{
    expect_double_free_abort((size_t)64 << 20);
}

/* ---- double frees by a thread that does not own the block -------------
   The block goes back to its owner's page through the page's remote-free
   list; freeing it twice there must abort, not leave a cycle that the owner
   walks forever (the child's alarm turns a hang into SIGALRM). */

struct remote_df {
    size_t size;
    int pattern;          /* 0: p, p   1: p, q, p */
    void *p, *q;
};

static void *remote_df_thread(void *arg)
{
    struct remote_df *r = arg;
    const struct nd_api *A = nd_api();
    A->free(r->p);
    if (r->pattern == 1)
        A->free(r->q);
    A->free(r->p);
    return NULL;
}

/* The owner allocates, another thread frees twice, then the owner keeps
   allocating the same size (or exits, when `owner_exits`). */
static void remote_double_free(struct remote_df *r, int owner_exits)
{
    const struct nd_api *A = nd_api();
    void *keep = A->malloc(r->size);
    r->p = A->malloc(r->size);
    r->q = A->malloc(r->size);
    if (!keep || !r->p || !r->q)
        _exit(4);
    pthread_t t;
    if (pthread_create(&t, NULL, remote_df_thread, r) != 0)
        _exit(4);
    pthread_join(t, NULL);
    if (owner_exits)
        return;
    static void *volatile sink;
    for (int i = 0; i < 100000; i++) {
        sink = A->malloc(r->size);
        if (i % 3 == 0)
            A->free(sink);
    }
    survived("a double free by another thread");
}

static void remote_double_free_child(void *arg)
{
    remote_double_free(arg, 0);
}

static void *owner_thread(void *arg)
{
    remote_double_free(arg, 1);
    return NULL;   /* the thread exits: its heap takes the remote frees back */
}

static void remote_double_free_owner_exits_child(void *arg)
{
    pthread_t t;
    if (pthread_create(&t, NULL, owner_thread, arg) != 0)
        _exit(4);
    pthread_join(t, NULL);
    survived("a double free by another thread, then the owner's exit");
}

static void expect_remote_double_free_abort(size_t size, int pattern, int owner_exits)
{
    struct remote_df r = { size, pattern, NULL, NULL };
    char what[160];
    static struct nd_child c;
    nd_api();
    snprintf(what, sizeof what, "a %zu-byte block freed twice (%s) by a thread that does not own it%s",
             size, pattern ? "p, q, p" : "p, p", owner_exits ? ", then the owner exiting" : "");
    nd_run_forked(owner_exits ? remote_double_free_owner_exits_child : remote_double_free_child,
                  &r, 30, &c);
    EXPECT(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGABRT,
           "%s to abort the process (SIGABRT), never hang; the child %s; its stderr: \"%s\"",
           what, nd_describe_status(c.status), c.err);
    EXPECT(nd_count_lines_with(c.err, "nodal: free(): double free") == 1 &&
           nd_count_lines_with(c.err, "nodal") == 1,
           "%s to print exactly one line, \"nodal: free(): double free ...\"; stderr: \"%s\"",
           what, c.err);
}

static void double_free_by_another_thread_aborts_with_message(void)
{
    size_t sizes[] = { 32, 3000, 100000 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        expect_remote_double_free_abort(sizes[i], 0, 0);
}

static void double_free_p_q_p_by_another_thread_aborts_with_message(void)
{
    size_t sizes[] = { 32, 3000, 100000 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        expect_remote_double_free_abort(sizes[i], 1, 0);
}

static void double_free_by_another_thread_aborts_at_the_owners_exit(void)
{
    expect_remote_double_free_abort(32, 1, 1);
    expect_remote_double_free_abort(3000, 0, 1);
}

static const struct nd_case cases[] = {
    ND_CASE(free_of_stack_address_aborts_with_message),
    ND_CASE(free_of_pointer_into_foreign_mapping_aborts_with_message),
    ND_CASE(free_of_glibc_pointer_aborts_with_message),
    ND_CASE(double_free_of_small_block_aborts_with_message),
    ND_CASE(double_free_of_medium_block_aborts_with_message),
    ND_CASE(double_free_of_large_block_aborts_with_message),
    ND_CASE(double_free_of_huge_block_aborts_with_message),
    ND_CASE(double_free_by_another_thread_aborts_with_message),
    ND_CASE(double_free_p_q_p_by_another_thread_aborts_with_message),
    ND_CASE(double_free_by_another_thread_aborts_at_the_owners_exit),
};
ND_MAIN(cases)
