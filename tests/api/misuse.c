/*
 * misuse.c - freeing what nodal never handed out, or freeing twice, stops the
 * program: one line on stderr that names nodal, then abort(). Each misuse runs
 * in a forked child; the parent checks the child died of SIGABRT and what it
 * printed.
 *
 * The cases after "exact messages" below also name the line: the child
 * prints "want: LINE" on stdout before the misuse (alternatives separated by
 * " | "), and the one stderr line containing "nodal" must be LINE exactly, or
 * LINE followed by " (detail)". Cases that need options (check=2, secure=1, 2)
 * re-execute this program as `misuse_child --scenario=NAME` with
 * NODAL_OPTIONS set. Heap corruption that nodal lets through is made
 * visible in the child (a block handed out twice, malloc returning the
 * address an attacker wrote) and reported as such.
 *
 * Messages (nodal's, after "nodal: "):
 *   free(): double free: P
 *   free(): double free or invalid pointer (block not in use): P   (large)
 *   free(): invalid pointer (not the start of a block): P
 *   free(): invalid pointer (not allocated by nodal): P
 *   free(): heap corruption (segment header overwritten): P
 *   free(): heap overflow past the end of the block: P             (secure=1, 2)
 *   malloc(): corrupted free list: P        P = the free block whose link was overwritten
 *   malloc(): free block modified after free: P                    (secure=2; secure=1: out of a transfer store)
 *   realloc(): invalid pointer (block not in use): P
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <pthread.h>
#include <semaphore.h>
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

/* A freed large block of one OS page is kept for the next such request
   (large.h), in use for its pool, so the second free finds it flagged, not
   free: it must abort all the same, and say "double free". */
static void double_free_one_page_block(void *arg)
{
    (void)arg;
    const struct nd_api *A = nd_api();
    void *p = A->aligned_alloc(32768, 4096);   /* above 16 KiB alignment: a large block */
    if (!p)
        _exit(4);
    memset(p, 1, 4096);
    A->free(p);
    A->free(p);
    survived("an immediate double free");
}

static void double_free_of_a_kept_one_page_block_aborts_with_message(void)
{
    static struct nd_child c;
    nd_api();
    expect_abort_with_message("freeing a kept one-page block twice", double_free_one_page_block, NULL);
    nd_run_forked(double_free_one_page_block, NULL, 30, &c);
    EXPECT(strstr(c.err, "double free") != NULL, "the message to say \"double free\"; stderr: \"%s\"", c.err);
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

/* ---- exact messages ---------------------------------------------------- */

static struct nd_child mc;

/* The child states the line nodal must print (printf format). */
__attribute__((format(printf, 1, 2)))
static void want(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("want: ", stdout);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

/* The child saw the misuse go through; says what happened and exits 3. */
__attribute__((noreturn, format(printf, 1, 2)))
static void let_through(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("the misuse went through: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    _exit(3);
}

/* Is `line` (len bytes) `w` (wlen bytes), or `w` followed by " (detail)"? */
static int line_is(const char *line, size_t len, const char *w, size_t wlen)
{
    if (len < wlen || memcmp(line, w, wlen) != 0)
        return 0;
    return len == wlen || (len > wlen + 2 && line[wlen] == ' ' && line[wlen + 1] == '(' &&
                           line[len - 1] == ')');
}

/* Does `line` match one of the " | "-separated alternatives of `wants`? */
static int line_matches(const char *line, size_t len, const char *wants)
{
    const char *w = wants;
    for (;;) {
        const char *bar = strstr(w, " | ");
        size_t wlen = bar ? (size_t)(bar - w) : strlen(w);
        if (line_is(line, len, w, wlen))
            return 1;
        if (!bar)
            return 0;
        w = bar + 3;
    }
}

/* The child's death: SIGABRT, one stderr line naming nodal, the line it
   announced. */
static void check_death(const char *what, const struct nd_child *c)
{
    EXPECT(WIFSIGNALED(c->status) && WTERMSIG(c->status) == SIGABRT,
           "%s to abort the process (SIGABRT); the child %s; its stderr: \"%s\"",
           what, nd_describe_status(c->status), c->err);
    const char *w = strstr(c->out, "want: ");
    EXPECT(w != NULL, "the child of \"%s\" to announce the message it expects; stdout: \"%s\"",
           what, c->out);
    char wants[512];
    size_t wl = strcspn(w + 6, "\n");
    if (wl >= sizeof wants)
        wl = sizeof wants - 1;
    memcpy(wants, w + 6, wl);
    wants[wl] = '\0';
    int lines = nd_count_lines_with(c->err, "nodal");
    EXPECT(lines == 1, "%s to print exactly one line containing \"nodal\" (\"%s\"), found %d; "
           "stderr: \"%s\"", what, wants, lines, c->err);
    const char *line = c->err;
    for (;;) {
        size_t len = strcspn(line, "\n");
        const char *hit = strstr(line, "nodal");
        if (hit && hit < line + len) {
            EXPECT(line_matches(line, len, wants), "%s to print \"%s\"; it printed \"%.*s\"",
                   what, wants, (int)len, line);
            return;
        }
        line += len + 1;
    }
}

/* A scenario: runs in the child, announces its line, misuses the heap. */
typedef void (*scenario_fn)(long arg);
struct scenario {
    const char *name;
    scenario_fn fn;
};
static const struct scenario *find_scenario(const char *name);

struct scenario_call {
    const struct scenario *sc;
    long arg;
};

static void scenario_call_run(void *p)
{
    const struct scenario_call *call = p;
    alarm(30);
    call->sc->fn(call->arg);
    fflush(stdout);
    _exit(0);
}

/* Runs scenario `name` with `arg` in a child: forked when `options` is NULL,
   else this program re-executed with NODAL_OPTIONS=options. Leaves what
   the child did in mc. */
static void run_scenario(const char *options, const char *name, long arg)
{
    const struct scenario *sc = find_scenario(name);
    EXPECT(sc != NULL, "a scenario named %s", name);
    if (options) {
        static char self[4096], variant[64], scen[160], argbuf[64];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        EXPECT(n > 0, "/proc/self/exe to name this program");
        self[n] = '\0';
        snprintf(variant, sizeof variant, "--variant=%s", nd_api()->name);
        snprintf(scen, sizeof scen, "--scenario=%s", name);
        snprintf(argbuf, sizeof argbuf, "--arg=%ld", arg);
        char *argv[] = { self, variant, (char *)"misuse_child", scen, argbuf, NULL };
        nd_run_exec(argv, options, NULL, 30, &mc);
    } else {
        struct scenario_call call = { sc, arg };
        nd_fork_captured(scenario_call_run, &call, 1, &mc);
    }
}

/* The scenario's misuse must end in nodal's line it announced and abort(). */
static void expect_misuse(const char *what, const char *options, const char *name, long arg)
{
    run_scenario(options, name, arg);
    char full[320];
    snprintf(full, sizeof full, "%s%s%s", what, options ? " with NODAL_OPTIONS=" : "",
             options ? options : "");
    check_death(full, &mc);
}

/* The scenario's misuse must fault at once (a guard page): SIGSEGV, with
   nothing from nodal (it never saw the write). */
static void expect_fault(const char *what, const char *options, const char *name, long arg)
{
    run_scenario(options, name, arg);
    EXPECT(WIFSIGNALED(mc.status) && WTERMSIG(mc.status) == SIGSEGV,
           "%s with NODAL_OPTIONS=%s to fault at the write (SIGSEGV: a guard page); the child %s; "
           "its stderr: \"%s\"", what, options ? options : "", nd_describe_status(mc.status), mc.err);
    EXPECT(strstr(mc.out, "about to write") != NULL,
           "the child of \"%s\" to reach the write; its stdout: \"%s\"", what, mc.out);
}

/* The child side of a re-executed scenario. */
static void misuse_child(void)
{
    const char *name = NULL;
    for (int i = 0; i < nd_opt_count; i++)
        if (strcmp(nd_opt_keys[i], "scenario") == 0)
            name = nd_opt_vals[i];
    const struct scenario *sc = name ? find_scenario(name) : NULL;
    if (!sc) {
        fprintf(stderr, "misuse_child: no --scenario=NAME given, or no such scenario\n");
        _exit(2);
    }
    nd_api();
    sc->fn(nd_opt_long("arg", 0));
    fflush(stdout);
    _exit(0);
}

/* After a misuse that nodal let through: n blocks of `size`; if one comes
   back twice, the heap is corrupt. */
static void expect_no_block_twice(size_t size, const char *what)
{
    const struct nd_api *A = nd_api();
    void *got[64];
    for (int i = 0; i < 64; i++) {
        got[i] = A->malloc(size);
        for (int j = 0; j < i; j++)
            if (got[i] == got[j])
                let_through("%s: malloc(%zu) then handed out %p twice", what, size, got[i]);
    }
}

/* ---- double frees by one thread: p, q, p ------------------------------ */

static void sc_double_free_p_q_p(long size)
{
    const struct nd_api *A = nd_api();
    void *keep = A->malloc((size_t)size);
    void *p = A->malloc((size_t)size), *q = A->malloc((size_t)size);
    if (!keep || !p || !q)
        _exit(4);
    if ((size_t)size >= ((size_t)128 << 10) && (size_t)size < ((size_t)4 << 20))
        want("nodal: free(): double free or invalid pointer (block not in use): %p", p);
    else if ((size_t)size >= ((size_t)4 << 20))
        want("nodal: free(): invalid pointer (not allocated by nodal): %p", p);
    else
        want("nodal: free(): double free: %p", p);
    A->free(p);
    A->free(q);
    A->free(p);
    expect_no_block_twice((size_t)size, "free(p); free(q); free(p)");
    let_through("free(p); free(q); free(p) of %ld-byte blocks", size);
}

static void double_free_p_q_p_of_small_block_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing a 32-byte block p, then q, then p again", NULL, "double_free_p_q_p", 32);
}

static void double_free_p_q_p_of_medium_block_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing a 3000-byte block p, then q, then p again", NULL, "double_free_p_q_p", 3000);
}

static void double_free_p_q_p_of_large_block_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing a 256 KiB block p, then q, then p again", NULL, "double_free_p_q_p",
                  256L << 10);
}

static void double_free_p_q_p_of_huge_block_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing a 64 MiB block p, then q, then p again", NULL, "double_free_p_q_p",
                  64L << 20);
}

/* ---- double frees across threads: owner and another thread ------------ */

struct xthread {
    void *p;
};

static void *free_in_thread(void *arg)
{
    nd_api()->free(((struct xthread *)arg)->p);
    return NULL;
}

static void free_by_another_thread(void *p)
{
    struct xthread x = { p };
    pthread_t t;
    if (pthread_create(&t, NULL, free_in_thread, &x) != 0)
        _exit(4);
    pthread_join(t, NULL);
}

/* arg = size; the owner frees first when `owner_first`. Then the owner
   allocates the size until a block comes back twice. */
static void cross_thread_double_free(long size, int owner_first)
{
    const struct nd_api *A = nd_api();
    void *keep[16];
    for (int i = 0; i < 16; i++)
        keep[i] = A->malloc((size_t)size);
    void *p = A->malloc((size_t)size);
    if (!p || !keep[15])
        _exit(4);
    want("nodal: free(): double free: %p", p);
    if (owner_first) {
        A->free(p);
        free_by_another_thread(p);
    } else {
        free_by_another_thread(p);
        A->free(p);
    }
    static void *seen[20000];
    for (int i = 0; i < 20000; i++) {
        seen[i] = A->malloc((size_t)size);
        if (seen[i] == p)
            for (int j = 0; j < i; j++)
                if (seen[j] == p)
                    let_through("the %ld-byte block %p freed by %s came back from malloc twice",
                                size, p, owner_first ? "its owner, then another thread"
                                                     : "another thread, then its owner");
    }
    let_through("the %ld-byte block %p freed by %s", size, p,
                owner_first ? "its owner, then another thread" : "another thread, then its owner");
}

static void sc_double_free_owner_then_other(long size) { cross_thread_double_free(size, 1); }
static void sc_double_free_other_then_owner(long size) { cross_thread_double_free(size, 0); }

static void double_free_by_owner_then_another_thread_aborts_with_message(void)
{
    nd_api();
    long sizes[] = { 32, 3000, 100000 };
    for (size_t i = 0; i < 3; i++)
        expect_misuse("a block freed by its owner, then by another thread", NULL,
                      "double_free_owner_then_other", sizes[i]);
}

static void double_free_by_another_thread_then_owner_aborts_with_message(void)
{
    nd_api();
    long sizes[] = { 32, 3000, 100000 };
    for (size_t i = 0; i < 3; i++)
        expect_misuse("a block freed by another thread, then by its owner", NULL,
                      "double_free_other_then_owner", sizes[i]);
}

/* check=2 validates frees from other threads too: the owner frees p (under
   check=2 straight to its page), another thread frees p again. */
static void check_2_validates_a_free_by_another_thread(void)
{
    nd_api();
    long sizes[] = { 32, 3000 };
    for (size_t i = 0; i < 2; i++)
        expect_misuse("a block freed by its owner, then by another thread", "check=2",
                      "double_free_owner_then_other", sizes[i]);
}

/* ---- interior pointers ------------------------------------------------- */

/* arg: size in the low 40 bits, offset of the pointer freed above them. */
static void sc_free_interior(long arg)
{
    size_t size = (size_t)arg & (((size_t)1 << 40) - 1), off = (size_t)arg >> 40;
    const struct nd_api *A = nd_api();
    void *keep = A->malloc(size);
    unsigned char *p = A->malloc(size);
    if (!keep || !p)
        _exit(4);
    memset(p, 0x41, size < 65536 ? size : 65536);
    want("nodal: free(): invalid pointer (not the start of a block): %p", (void *)(p + off));
    A->free(p + off);
    for (int i = 0; i < 64; i++) {
        unsigned char *q = A->malloc(size);
        if (q == p + off)
            let_through("free(p + %zu) of a %zu-byte block; malloc then returned p + %zu",
                        off, size, off);
    }
    let_through("free(p + %zu) of a %zu-byte block", off, size);
}

static long interior(size_t size, size_t off) { return (long)(size | off << 40); }

static void free_of_interior_pointer_of_small_block_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing p + 16 of a 64-byte block", NULL, "free_interior", interior(64, 16));
}

static void free_of_interior_pointer_of_medium_block_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing p + 1024 of a 3000-byte block", NULL, "free_interior",
                  interior(3000, 1024));
}

static void free_of_interior_pointer_of_large_block_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing p + 16 of a 256 KiB block", NULL, "free_interior",
                  interior((size_t)256 << 10, 16));
    expect_misuse("freeing p + 128 KiB of a 256 KiB block", NULL, "free_interior",
                  interior((size_t)256 << 10, (size_t)128 << 10));
}

static void free_of_interior_pointer_of_huge_block_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing p + 16 of a 16 MiB block", NULL, "free_interior",
                  interior((size_t)16 << 20, 16));
}

/* Past the first 4 MiB of a huge block (the segment map marks only the
   block's first 4 MiB today: the message says "not allocated by nodal"). */
static void free_of_pointer_deep_inside_a_huge_block_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing p + 6 MiB of a 16 MiB block", NULL, "free_interior",
                  interior((size_t)16 << 20, (size_t)6 << 20));
}

/* ---- foreign pointers and nodal's own memory ---------------------------- */

static unsigned char some_global[256];

static void sc_free_global(long arg)
{
    (void)arg;
    void *keep = nd_api()->malloc(100);
    (void)keep;
    want("nodal: free(): invalid pointer (not allocated by nodal): %p", (void *)(some_global + 64));
    nd_api()->free(some_global + 64);
    let_through("freeing the address of a global");
}

static void free_of_global_address_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing the address of a global variable", NULL, "free_global", 0);
}

static void sc_free_wild(long arg)
{
    (void)arg;
    void *keep = nd_api()->malloc(100);
    (void)keep;
    void *wild = (void *)(uintptr_t)0x5a5a5a5a5000ULL;
    want("nodal: free(): invalid pointer (not allocated by nodal): %p", wild);
    nd_api()->free(wild);
    let_through("freeing an address nothing is mapped at");
}

static void free_of_unmapped_address_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing an address nothing is mapped at", NULL, "free_wild", 0);
}

/* arg: offset from the segment base (0 = the base itself). */
static void sc_free_segment_header(long off)
{
    const struct nd_api *A = nd_api();
    unsigned char *p = A->malloc(64);
    if (!p)
        _exit(4);
    unsigned char *seg = (unsigned char *)((uintptr_t)p & ~(((uintptr_t)4 << 20) - 1));
    want("nodal: free(): invalid pointer (not the start of a block): %p", (void *)(seg + off));
    A->free(seg + off);
    for (int i = 0; i < 64; i++)
        if (A->malloc(64) == seg + off)
            let_through("free() of nodal's own segment header (%p); malloc(64) then returned it",
                        (void *)(seg + off));
    let_through("free() of nodal's own segment header (%p)", (void *)(seg + off));
}

static void free_of_a_segment_base_aborts_with_message(void)
{
    nd_api();
    expect_misuse("freeing the 4 MiB-aligned base of a segment (nodal's own header)", NULL,
                  "free_segment_header", 0);
    expect_misuse("freeing an address inside a segment's header", NULL, "free_segment_header",
                  4096);
}

/* ---- free-list poisoning: one 8-byte write into a freed block ----------- */

/* Where the attacker wants malloc to return: a global, zeroed. */
static uint64_t attacker_target[64] __attribute__((aligned(64)));

/* Allocates `size` n times; fails the child if malloc ever returns the
   attacker's address. */
static void malloc_until_target(size_t size, int n, void *poisoned)
{
    const struct nd_api *A = nd_api();
    for (int i = 0; i < n; i++) {
        unsigned char *q = A->malloc(size);
        if (q >= (unsigned char *)attacker_target &&
            q < (unsigned char *)attacker_target + sizeof attacker_target)
            let_through("one 8-byte write into the freed block %p made malloc(%zu) return "
                        "the attacker's address %p", poisoned, size, (void *)q);
    }
    fprintf(stderr, "the poisoned link of %p was never followed in %d mallocs: "
            "the test no longer reaches a free list\n", poisoned, n);
    _exit(5);
}

static void poison(void *p)
{
    uint64_t v = (uint64_t)(uintptr_t)attacker_target;
    memcpy(p, &v, sizeof v);
}

/* The block is freed by another thread (the page's remote-free list links
   through it), then written. */
static void sc_poison_remote(long size)
{
    const struct nd_api *A = nd_api();
    void *keep[256];
    for (int i = 0; i < 256; i++)
        keep[i] = A->malloc((size_t)size);
    void *p = A->malloc((size_t)size);
    if (!p || !keep[255])
        _exit(4);
    want("nodal: malloc(): corrupted free list: %p", p);
    free_by_another_thread(p);
    poison(p);
    malloc_until_target((size_t)size, 20000, p);
}

/* Frees blocks[from - 1] down to blocks[to], the newest first. */
static void free_down(void **blocks, int from, int to)
{
    for (int i = from - 1; i >= to; i--)
        nd_api()->free(blocks[i]);
}

/* The block goes back to its page's free list, then is written. p is the
   first of a long run of blocks. The last half of the run is freed first:
   the thread cache's overflows fill the transfer store of the class
   (transfer=2, xfer.h: at most 2,048 blocks), so that later overflows go
   to the pages. Then p is freed, then another quarter of the run: p is the
   oldest block in the thread cache when it overflows, and a flush returns
   it to its page (at once under check=2, which turns the caches off),
   while the rest of p's page stays in use. */
static void sc_poison_local(long size)
{
    const struct nd_api *A = nd_api();
    enum { N = 18000 };
    static void *blocks[N];
    for (int i = 0; i < N; i++)
        if (!(blocks[i] = A->malloc((size_t)size)))
            _exit(4);
    void *p = blocks[0];
    want("nodal: malloc(): corrupted free list: %p", p);
    free_down(blocks, N, N / 2);
    A->free(p);
    free_down(blocks, N / 2, N / 4);
    poison(p);
    malloc_until_target((size_t)size, 2 * N, p);
}

static void write_after_free_of_a_remotely_freed_block_is_caught(void)
{
    nd_api();
    expect_misuse("one 8-byte write into a 48-byte block freed by another thread", NULL,
                  "poison_remote", 48);
}

/* Under secure=1 the freeing thread keeps the block in its cache (secure=2:
   in quarantine); when it exits, the block goes back to its page's remote
   list, where the write lands on its link. */
static void write_after_free_of_a_remotely_freed_block_is_caught_under_secure_1(void)
{
    nd_api();
    expect_misuse("one 8-byte write into a 48-byte block freed by another thread", "secure=1",
                  "poison_remote", 48);
}

static void write_after_free_into_a_page_free_list_is_caught(void)
{
    nd_api();
    expect_misuse("one 8-byte write into a freed 48-byte block", NULL, "poison_local", 48);
}

static void write_after_free_into_a_page_free_list_is_caught_under_check_2(void)
{
    nd_api();
    expect_misuse("one 8-byte write into a freed 48-byte block", "check=2", "poison_local", 48);
}

/* secure=1: a block another thread freed waits in the transfer store of
   the kind (that thread's cache overflowed into it; the thread exited,
   its cache's blocks went home, the store's stayed), and is written: over
   its second word (arg 8: `s->len = 0` after free), or over its last
   word, the canary (arg -1: at its usable size, a write past the end of
   the freed block). This thread's cache takes the store's blocks, the
   newest first, when it runs dry; the block is checked as it comes out,
   before malloc can hand it out. (Without the store the block went home
   to its page: the cleared mark is a corrupted free list there, the
   canary is written anew at the next refill and the write goes unseen.) */
enum { STORED_N = 4000, STORED_SIZE = 48 };
static void *stored_blocks[STORED_N];
static void *free_stored_blocks(void *arg)
{
    (void)arg;
    nd_api()->free(nd_api()->malloc(STORED_SIZE));   /* the thread's cache (a thread without one frees to the pages) */
    for (int i = 0; i < STORED_N; i++)
        nd_api()->free(stored_blocks[i]);
    return NULL;
}

static void sc_write_into_a_stored_block(long at)
{
    const struct nd_api *A = nd_api();
    for (int i = 0; i < STORED_N; i++)
        if (!(stored_blocks[i] = A->malloc(STORED_SIZE)))
            _exit(4);
    unsigned char *p = stored_blocks[0];   /* the consumer's first free: the first block its cache sends away */
    size_t off = at >= 0 ? (size_t)at : A->usable_size(p);
    pthread_t consumer;
    if (pthread_create(&consumer, NULL, free_stored_blocks, NULL) != 0 || pthread_join(consumer, NULL) != 0)
        _exit(4);
    /* Caught where it next leaves the store: taken by this thread's refill
       (malloc), or, when a period passed first (a loaded machine delays
       this thread), sent to its page by the sweep of what sat untaken
       (xfer.h), which checks it too (free). */
    want("nodal: malloc(): free block modified after free: %p | nodal: free(): block modified after free: %p",
         (void *)p, (void *)p);
    uint64_t zero = 0;
    memcpy(p + off, &zero, sizeof zero);
    for (int i = 0; i < 2 * STORED_N; i++)
        if (A->malloc(STORED_SIZE) == p)
            let_through("malloc(%d) handed out %p after a write at its byte %zu while it was free", STORED_SIZE,
                        (void *)p, off);
    fprintf(stderr, "%p was not handed out again in %d mallocs\n", (void *)p, 2 * STORED_N);
    _exit(5);
}

static void write_into_a_block_waiting_in_the_transfer_store_is_caught_under_secure_1(void)
{
    nd_api();
    expect_misuse("a write over the second word of a 48-byte block waiting in the transfer store", "secure=1",
                  "write_into_a_stored_block", 8);
    expect_misuse("a write over the canary of a 48-byte block waiting in the transfer store", "secure=1",
                  "write_into_a_stored_block", -1);
}

/* ---- forging with what freed blocks reveal (a read after free) ---------- */

/* The attack of issue 23, as an attacker who can read and write freed
   blocks and write into a live one performs it against the XOR scheme
   (mark = secret ^ address, link = next ^ secret ^ address >> 4):
   reads the first two words of freed blocks of one page, takes the link
   secret as the most frequent word0 ^ b >> 4 ^ a over pairs of freed
   blocks (b, a) (a = NULL included) and the mark secret as word1 ^ b,
   dresses a target block T as a free block with them (an encoded NULL
   link and T's mark, as computed from the secret), and points the link
   of a freed block F on the page's free list at T. arg 0: T is a live
   block (malloc must never return it while it is live); arg 1: T is a
   block another thread freed, waiting in that thread's cache (malloc must
   not hand it out here while it waits there: it would be handed out
   twice). With marks and links that are keyed functions of the address,
   what was read computes neither for T: the forged link is reported when
   malloc follows it. */
static sem_t held;

/* Frees a block into this thread's cache, then keeps the thread (and its
   cache) alive. */
static void *free_and_hold(void *p)
{
    nd_api()->free(p);
    sem_post(&held);
    for (;;)
        pause();
    return NULL;
}

static void sc_forge_from_freed_words(long arg)
{
    sem_init(&held, 0, 0);
    const struct nd_api *A = nd_api();
    enum { N = 18000, SIZE = 48, FREED = 32 };
    static unsigned char *blocks[N];
    for (int i = 0; i < N; i++)
        if (!(blocks[i] = A->malloc(SIZE)))
            _exit(4);
    /* The last half of the run is freed (it fills the transfer store, as
       in poison_local), then every other block of the first FREED * 2,
       then another quarter of the run: the cache overflows and its oldest
       blocks, ours, go back to their page's free list. */
    free_down((void **)blocks, N, N / 2);
    for (int i = 0; i < 2 * FREED; i += 2)
        A->free(blocks[i]);
    free_down((void **)blocks, N / 2, N / 4);
    unsigned char *f = blocks[0];
    uintptr_t page = (uintptr_t)f >> 16;
    /* The secrets, as the XOR scheme gives them away. */
    uint64_t cand[FREED * (FREED + 1)];
    size_t nc = 0;
    for (int i = 0; i < 2 * FREED; i += 2) {
        uint64_t w0;
        memcpy(&w0, blocks[i], sizeof w0);
        for (int j = -2; j < 2 * FREED; j += 2)
            if (j != i)
                cand[nc++] = w0 ^ ((uintptr_t)blocks[i] >> 4) ^ (j < 0 ? 0 : (uintptr_t)blocks[j]);
    }
    uint64_t link_key = 0;
    size_t best = 0;
    for (size_t i = 0; i < nc; i++) {
        size_t n = 0;
        for (size_t j = 0; j < nc; j++)
            n += cand[j] == cand[i];
        if (n > best) {
            best = n;
            link_key = cand[i];
        }
    }
    uint64_t f1;
    memcpy(&f1, f + 8, sizeof f1);
    uint64_t mark_key = f1 ^ (uintptr_t)f;
    /* The target, on f's page. */
    unsigned char *t = arg == 0 ? blocks[1] : blocks[3];
    pthread_t holder;
    if (arg == 1 && pthread_create(&holder, NULL, free_and_hold, t) != 0)
        _exit(4);
    if (arg == 1)
        sem_wait(&held);   /* t waits in the holder's cache until this child exits */
    if ((uintptr_t)t >> 16 != page) {
        fprintf(stderr, "blocks[0] %p and the target %p are not on one 64 KiB page\n", (void *)f, (void *)t);
        _exit(6);
    }
    uint64_t t0 = link_key ^ ((uintptr_t)t >> 4), t1 = mark_key ^ (uintptr_t)t;
    memcpy(t, &t0, sizeof t0);
    memcpy(t + 8, &t1, sizeof t1);
    uint64_t fl = (uintptr_t)t ^ link_key ^ ((uintptr_t)f >> 4);
    /* secure=2 keeps F in a bin of its own with word 0 filled, not linked:
       the fill's check sees the forged word first. */
    const char *opts = getenv("NODAL_OPTIONS");
    if (opts && strstr(opts, "secure=2"))
        want("nodal: malloc(): corrupted free list: %p | nodal: malloc(): free block modified after free: %p",
             (void *)f, (void *)f);
    else
        want("nodal: malloc(): corrupted free list: %p", (void *)f);
    memcpy(f, &fl, sizeof fl);
    /* Allocate until the page's free list is reached. */
    static void *got[2 * N];
    for (int i = 0; i < 2 * N; i++) {
        got[i] = A->malloc(SIZE);
        if (arg == 0 && got[i] == t)
            let_through("a forged link made malloc(%d) return the live block %p (F = %p; %zu of %zu "
                        "link candidates agreed)", SIZE, (void *)t, (void *)f, best, nc);
        if (arg == 1 && got[i] == t)
            let_through("a forged link made malloc(%d) return the block %p, which waits in another "
                        "thread's cache (F = %p)", SIZE, (void *)t, (void *)f);
    }
    fprintf(stderr, "the forged link of %p was never followed in %d mallocs: the test no longer "
            "reaches a free list\n", (void *)f, 2 * N);
    _exit(5);
}

static void a_read_of_freed_blocks_does_not_forge_a_link_to_a_live_block(void)
{
    nd_api();
    expect_misuse("a link forged from the words of freed blocks, to a live block dressed as a free one",
                  NULL, "forge_from_freed_words", 0);
}

static void a_read_of_freed_blocks_does_not_forge_a_link_to_a_cached_block(void)
{
    nd_api();
    expect_misuse("a link forged from the words of freed blocks, to a block waiting in a thread cache",
                  NULL, "forge_from_freed_words", 1);
}

static void a_read_of_freed_blocks_does_not_forge_a_link_under_check_2_or_secure_1(void)
{
    nd_api();
    const char *opts[] = { "check=2", "secure=1", "secure=2" };
    for (int i = 0; i < 3; i++) {
        expect_misuse("a link forged from the words of freed blocks, to a live block dressed as a free one",
                      opts[i], "forge_from_freed_words", 0);
        expect_misuse("a link forged from the words of freed blocks, to a block waiting in a thread cache",
                      opts[i], "forge_from_freed_words", 1);
    }
}

/* ---- a double free with the second word cleared in between --------------- */

/* free(p); p[1] = 0; free(p): the common shape `s->len = 0` after free,
   which erases the freed mark. arg = size | other << 24 | between << 25:
   the second free is made by another thread when `other`; another block
   of the size is freed in between when `between` (p, write, q, p). */
static void sc_double_free_second_word_cleared(long arg)
{
    size_t size = (size_t)arg & 0xffffff;
    int other = (int)(arg >> 24) & 1, between = (int)(arg >> 25) & 1;
    const struct nd_api *A = nd_api();
    void *keep = A->malloc(size);
    long *p = A->malloc(size);
    void *q = A->malloc(size);
    if (!keep || !p || !q)
        _exit(4);
    /* The second free itself is seen by default; check=2 (the block is on
       its page's free list then) may see the list's damage at the next
       malloc, secure=2 the quarantined block's damage when it leaves. */
    const char *opts = getenv("NODAL_OPTIONS");
    if (opts && strstr(opts, "check=2"))
        want("nodal: free(): double free: %p | nodal: malloc(): corrupted free list: %p", (void *)p, (void *)p);
    else if (opts && strstr(opts, "secure=2"))
        want("nodal: free(): double free: %p | nodal: malloc(): free block modified after free: %p | "
             "nodal: free(): block modified after free: %p", (void *)p, (void *)p, (void *)p);
    else
        want("nodal: free(): double free: %p", (void *)p);
    A->free(p);
    p[1] = 0;
    if (between)
        A->free(q);
    if (other)
        free_by_another_thread(p);
    else
        A->free(p);
    expect_no_block_twice(size, "free(p); p[1] = 0; free(p)");
    let_through("free(p); p[1] = 0; %sfree(p) of a %zu-byte block%s", between ? "free(q); " : "", size,
                other ? ", the second by another thread" : "");
}

static long dfc(size_t size, int other) { return (long)(size | (size_t)other << 24); }
static long dfc_between(size_t size) { return (long)(size | (size_t)1 << 25); }

/* free(p); p[1] = 0; free(p) of blocks of each of sizes[0..n) under options. */
static void expect_second_word_cleared(const char *options, const size_t *sizes, size_t n)
{
    nd_api();
    for (size_t i = 0; i < n; i++)
        expect_misuse("free(p); p[1] = 0; free(p)", options, "double_free_second_word_cleared", dfc(sizes[i], 0));
}

static void double_free_with_the_second_word_cleared_in_between_aborts(void)
{
    static const size_t sizes[] = { 16, 48, 1000, 20000 };
    expect_second_word_cleared(NULL, sizes, 4);
}

/* The same with the block's bin full after the first free (every bin of
   one block: tcache_count=1; a medium class's bin starts so, tcache.c):
   the second free passes the fast path's check of the block the bin took
   last, and the slow path checks it (free.c: nd_free_checked). On main
   55f8196 it went through (the block handed out twice). */
static void double_free_with_the_second_word_cleared_into_a_full_bin_aborts(void)
{
    static const size_t sizes[] = { 16, 1000, 20000 };
    expect_second_word_cleared("tcache_count=1", sizes, 3);
}

/* (By another thread, check=2 lets it through, as the default does: the
   README's "what no level catches".) */
static void double_free_with_the_second_word_cleared_aborts_under_check_2(void)
{
    nd_api();
    expect_misuse("free(p); p[1] = 0; free(p)", "check=2", "double_free_second_word_cleared", dfc(48, 0));
}

/* secure=1 sees the same-thread shape as the default does (the block its
   bin took last); the other two shapes need secure=2's quarantine and
   fill (the README's "what no level catches" for the rest). */
static void double_free_with_the_second_word_cleared_aborts_under_secure_1(void)
{
    static const size_t sizes[] = { 48, 1000, 3000 };
    expect_second_word_cleared("secure=1", sizes, 3);
}

static void double_free_with_the_second_word_cleared_aborts_under_secure_2(void)
{
    nd_api();
    expect_misuse("free(p); p[1] = 0; free(p)", "secure=2", "double_free_second_word_cleared", dfc(48, 0));
    expect_misuse("free(p); p[1] = 0; free(p) by another thread", "secure=2", "double_free_second_word_cleared",
                  dfc(48, 1));
    expect_misuse("free(p); p[1] = 0; free(q); free(p)", "secure=2", "double_free_second_word_cleared",
                  dfc_between(48));
}

/* ---- overflows (secure=1) ------------------------------------------------- */

/* Two live neighbours a, b of `size`: b is the block that starts right
   after a's block (the blocks' stride apart: a's usable bytes, then under
   secure=1 a's canary). */
static int find_neighbours(size_t size, unsigned char **a, unsigned char **b)
{
    const struct nd_api *A = nd_api();
    static unsigned char *blk[512];
    for (int i = 0; i < 512; i++)
        if (!(blk[i] = A->malloc(size)))
            _exit(4);
    size_t stride = SIZE_MAX;
    for (int i = 0; i < 512; i++)
        for (int j = 0; j < 512; j++)
            if (blk[j] > blk[i] && (size_t)(blk[j] - blk[i]) < stride)
                stride = (size_t)(blk[j] - blk[i]);
    for (int i = 0; i < 512; i++)
        for (int j = 0; j < 512; j++)
            if (blk[j] == blk[i] + stride) {
                *a = blk[i];
                *b = blk[j];
                return 1;
            }
    return 0;
}

static void sc_overflow_into_free_neighbour(long size)
{
    const struct nd_api *A = nd_api();
    unsigned char *a, *b;
    if (!find_neighbours((size_t)size, &a, &b)) {
        fprintf(stderr, "no two adjacent blocks among 512 of %ld bytes\n", size);
        _exit(6);
    }
    want("nodal: malloc(): corrupted free list: %p | nodal: malloc(): free block modified after "
         "free: %p", (void *)b, (void *)b);
    A->free(b);
    size_t u = A->usable_size(a);
    memset(a + u, 0x41, (size_t)(b - a) - u + 16);   /* past a's end, through b's first 16 */
    for (int i = 0; i < 4096; i++)
        (void)A->malloc((size_t)size);
    let_through("an overflow from %p through the first 16 bytes of its free neighbour %p", (void *)a,
                (void *)b);
}

static void sc_overflow_into_live_neighbour(long size)
{
    const struct nd_api *A = nd_api();
    unsigned char *a = A->malloc((size_t)size);
    if (!a)
        _exit(4);
    want("nodal: free(): heap overflow past the end of the block: %p", (void *)a);
    memset(a + size, 0x41, 32);   /* 32 bytes past the requested end */
    A->free(a);
    let_through("a 32-byte overflow past the end of the %ld-byte block %p", size, (void *)a);
}

/* (secure=2: the neighbour's fill. Under secure=1 the overflowing block's
   canary is damaged, seen when it is freed; a block never freed is not.) */
static void overflow_into_a_free_neighbour_is_caught_under_secure_2(void)
{
    nd_api();
    expect_misuse("an overflow through the first 16 bytes of a free neighbour", "secure=2",
                  "overflow_into_free_neighbour", 48);
}

static void overflow_into_a_live_neighbour_is_caught_under_secure_1(void)
{
    nd_api();
    const char *opts[] = { "secure=1", "secure=2" };
    for (int i = 0; i < 2; i++)
        expect_misuse("a 32-byte overflow past the end of a 40-byte block", opts[i],
                      "overflow_into_live_neighbour", 40);
}

/* ---- more of secure=1 and secure=2 -------------------------------------------------------- */

/* A write into a freed block, past its link and mark (where the default
   checks do not look), at byte `off` of a `size`-byte block: reported when
   the block is checked again, by a later malloc. Blocks of the size come
   and go meanwhile, so the block leaves quarantine and is reused. */
static void sc_write_after_free(long arg)
{
    size_t size = (size_t)arg & 0xffffff, off = (size_t)arg >> 24;
    const struct nd_api *A = nd_api();
    unsigned char *p = A->malloc(size);
    void *keep = A->malloc(size);
    if (!p || !keep)
        _exit(4);
    want("nodal: malloc(): free block modified after free: %p", (void *)p);
    A->free(p);
    p[off] ^= 0x40;
    enum { LIVE = 16 };
    void *live[LIVE] = { 0 };
    for (int i = 0; i < 100000; i++) {
        A->free(live[i % LIVE]);
        live[i % LIVE] = A->malloc(size);
        if (live[i % LIVE] == p)
            let_through("a write into the freed %zu-byte block %p at byte %zu; malloc handed it out again",
                        size, (void *)p, off);
    }
    let_through("a write into the freed %zu-byte block %p at byte %zu", size, (void *)p, off);
}

static long waf(size_t size, size_t off) { return (long)(size | off << 24); }

/* (secure=2 only: secure=1 has no fill.) */
static void write_after_free_is_caught_at_reuse_under_secure_2(void)
{
    nd_api();
    /* In the first 64 bytes: seen by the quarantine's audit, soon. */
    expect_misuse("a 1-byte write at byte 24 of a freed 48-byte block", "secure=2", "write_after_free",
                  waf(48, 24));
    /* Further in (the fill covers a block's first 256 bytes): seen when the
       block is handed out again. */
    expect_misuse("a 1-byte write at byte 200 of a freed 500-byte block", "secure=2", "write_after_free",
                  waf(500, 200));
    expect_misuse("a 1-byte write at byte 255 of a freed 6000-byte block", "secure=2", "write_after_free",
                  waf(6000, 255));
}

/* One byte written just past the block's usable size: under secure=2 the
   request (into the block's slack, or onto the canary), under secure=1 the
   canary at the block's end. The byte written is the complement of the
   byte there: a fixed value would equal a random canary's byte once in 256
   runs (a fresh-clone run saw 0 go through at 1016 under secure=2). */
static void sc_overflow_by_one(long size)
{
    const struct nd_api *A = nd_api();
    unsigned char *a = A->malloc((size_t)size);
    if (!a)
        _exit(4);
    want("nodal: free(): heap overflow past the end of the block: %p", (void *)a);
    size_t end = A->usable_size(a);
    a[end] = (unsigned char)~a[end];
    A->free(a);
    let_through("a 1-byte overflow past the end of the %ld-byte block %p", size, (void *)a);
}

static void one_byte_overflow_is_caught_at_free_under_secure_1(void)
{
    nd_api();
    /* secure=2: 33 + the canary fit a 48-byte block: the byte lands in the
       slack; 40: no slack, it lands on the canary. secure=1: on the canary
       (1016 and 1024: the largest requests of the fast path's table and
       the first past it). 5000, 100000: medium classes. */
    long sizes[] = { 0, 33, 40, 1016, 1024, 5000, 100000 };
    const char *opts[] = { "secure=1", "secure=2" };
    for (int o = 0; o < 2; o++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            expect_misuse("a 1-byte overflow past the usable end of a block", opts[o], "overflow_by_one",
                          sizes[i]);
}

/* The overflow is found by the free of another thread. */
static void *free_arg(void *p)
{
    nd_api()->free(p);
    return NULL;
}

static void sc_overflow_then_remote_free(long size)
{
    const struct nd_api *A = nd_api();
    unsigned char *a = A->malloc((size_t)size);
    if (!a)
        _exit(4);
    want("nodal: free(): heap overflow past the end of the block: %p", (void *)a);
    memset(a + A->usable_size(a), 0x41, 8);   /* (secure=2: the request's end) */
    pthread_t t;
    if (pthread_create(&t, NULL, free_arg, a) != 0)
        _exit(4);
    pthread_join(t, NULL);
    let_through("an 8-byte overflow past the end of the %ld-byte block %p, freed by another thread",
                size, (void *)a);
}

static void overflow_is_caught_by_a_free_in_another_thread_under_secure_1(void)
{
    nd_api();
    const char *opts[] = { "secure=1", "secure=2" };
    for (int i = 0; i < 2; i++)
        expect_misuse("an 8-byte overflow past a 40-byte block freed by another thread", opts[i],
                      "overflow_then_remote_free", 40);
}

static void sc_realloc_overflowed(long size)
{
    const struct nd_api *A = nd_api();
    unsigned char *a = A->malloc((size_t)size);
    if (!a)
        _exit(4);
    want("nodal: realloc(): heap overflow past the end of the block: %p", (void *)a);
    memset(a + A->usable_size(a), 0x41, 4);   /* (secure=2: the request's end) */
    a = A->realloc(a, (size_t)size * 3);
    let_through("a 4-byte overflow past the end of a %ld-byte block, then realloc", size);
}

static void realloc_of_an_overflowed_block_is_caught_under_secure_1(void)
{
    nd_api();
    const char *opts[] = { "secure=1", "secure=2" };
    for (int i = 0; i < 2; i++)
        expect_misuse("realloc() of a 100-byte block written 4 bytes past its usable end", opts[i],
                      "realloc_overflowed", 100);
}

/* A double free whose first free was followed by a write over the block's
   first 16 bytes (its mark among them). */
static void sc_double_free_after_write(long size)
{
    const struct nd_api *A = nd_api();
    void *keep = A->malloc((size_t)size);
    unsigned char *p = A->malloc((size_t)size);
    if (!keep || !p)
        _exit(4);
    want("nodal: free(): double free: %p", (void *)p);
    A->free(p);
    memset(p, 0x41, 16);
    A->free(p);
    let_through("free(p), a write into p, free(p) of a %ld-byte block", size);
}

static void double_free_after_a_write_into_the_block_is_caught_under_secure_1(void)
{
    nd_api();
    expect_misuse("a 48-byte block freed, written, and freed again", "secure=1", "double_free_after_write",
                  48);
}

static void double_free_across_threads_is_caught_under_secure_1(void)
{
    nd_api();
    long sizes[] = { 32, 3000, 100000 };
    for (size_t i = 0; i < 3; i++) {
        expect_misuse("a block freed by its owner, then by another thread", "secure=1",
                      "double_free_owner_then_other", sizes[i]);
        expect_misuse("a block freed by another thread, then by its owner", "secure=1",
                      "double_free_other_then_owner", sizes[i]);
    }
    expect_misuse("freeing a 32-byte block p, then q, then p again", "secure=1", "double_free_p_q_p", 32);
}

/* Writes one byte past the usable end of p, a block of `what` (after
   saying which byte, for the parent's report); only a fault stops it. */
__attribute__((noreturn))
static void write_one_past(unsigned char *p, const char *what)
{
    size_t u = nd_api()->usable_size(p);
    printf("about to write byte %zu of the %s %p\n", u, what, (void *)p);
    fflush(stdout);
    ((volatile unsigned char *)p)[u] = 1;
    let_through("a 1-byte write past the usable end of the %s %p", what, (void *)p);
}

/* Writes one byte past the usable end of a block of `size` bytes. */
static void sc_write_past_usable(long size)
{
    const struct nd_api *A = nd_api();
    unsigned char *p = A->malloc((size_t)size);
    if (!p)
        _exit(4);
    char what[64];
    snprintf(what, sizeof what, "%ld-byte block", size);
    write_one_past(p, what);
}

/* Large blocks of other sizes come and go where the block will be (their
   guard pages stay behind, secure.h), then every usable byte of a block of
   `size` is written, then one past it. */
static void sc_write_past_reused_large(long size)
{
    const struct nd_api *A = nd_api();
    void *keep = A->malloc(64);
    long sizes[] = { 300L << 10, 150L << 10, size, 200L << 10, size + 8192, 140L << 10 };
    for (int i = 0; i < 6; i++)
        A->free(A->malloc((size_t)sizes[i]));
    unsigned char *p = A->malloc((size_t)size);
    if (!p || !keep)
        _exit(4);
    memset(p, 0x5a, A->usable_size(p));
    char what[64];
    snprintf(what, sizeof what, "%ld-byte block", size);
    write_one_past(p, what);
}

/* A large block of `size` bytes takes the run a freed block of up to twice
   its chunks left, up to that block's guard page (large.c), or a run whose
   guard pages inside must open: every usable byte is written, then one
   past it. */
static void sc_write_past_large_in_a_longer_run(long size)
{
    const struct nd_api *A = nd_api();
    void *keep = A->malloc(64);
    void *big = A->malloc((size_t)size * 2 - 8192);
    void *small[4];
    for (int i = 0; i < 4; i++)
        small[i] = A->malloc((size_t)size / 3);   /* their guard pages inside the next run */
    if (!keep || !big)
        _exit(4);
    A->free(big);
    for (int i = 0; i < 4; i++)
        A->free(small[i]);
    unsigned char *p = A->malloc((size_t)size);
    if (!p)
        _exit(4);
    memset(p, 0x5a, A->usable_size(p));
    char what[64];
    snprintf(what, sizeof what, "%ld-byte block", size);
    write_one_past(p, what);
}

/* Aligned large blocks of several sizes come and go, in segments that
   empty (kept with their guard pages, large.h) and fill again, then a
   block of `size` bytes aligned to 1 MiB (it takes its run up to the next
   multiple of its alignment, large.c): every usable byte is written, then
   one past it. */
static void sc_write_past_aligned_large(long size)
{
    const struct nd_api *A = nd_api();
    void *keep = A->malloc(64), *v[8] = { NULL };
    for (int round = 0; round < 40; round++) {
        size_t align = round % 3 == 0 ? (size_t)256 << 10 : (size_t)1 << 20;
        size_t n = ((size_t)520 << 10) + (size_t)(round * 37 % 16) * (30 << 10);
        int k = round * 5 % 8;
        A->free(v[k]);
        v[k] = NULL;
        if (A->posix_memalign(&v[k], align, n) != 0)
            _exit(4);
    }
    for (int k = 0; k < 8; k++)
        A->free(v[k]);
    unsigned char *p = NULL;
    if (A->posix_memalign((void **)&p, (size_t)1 << 20, (size_t)size) != 0 || !keep)
        _exit(4);
    memset(p, 0x5a, A->usable_size(p));
    char what[64];
    snprintf(what, sizeof what, "%ld-byte block aligned to 1 MiB", size);
    write_one_past(p, what);
}

/* A block grown by realloc from `from` bytes past `size` bytes, a quarter
   and `plus` bytes at a time (in place while its run holds it, else copied
   to another run), every usable byte written at each step; then one byte
   past it. */
static void grow_and_write_past(size_t from, size_t plus, long size)
{
    const struct nd_api *A = nd_api();
    size_t n = from;
    unsigned char *p = A->malloc(n);
    while (p != NULL && n < (size_t)size) {
        n += n / 4 + plus;
        p = A->realloc(p, n);
        if (p != NULL)
            memset(p, 0x5a, A->usable_size(p));
    }
    if (!p)
        _exit(4);
    char what[64];
    snprintf(what, sizeof what, "%zu-byte block grown from %zu B", n, from);
    write_one_past(p, what);
}

static void sc_write_past_realloc_grown_large(long size) { grow_and_write_past(20 << 10, 0, size); }

/* From 8 B by a quarter and 8 B, as bench/micro -m realloc grows a block. */
static void sc_write_past_realloc_grown_from_8(long size) { grow_and_write_past(8, 8, size); }

static void overflow_past_a_large_block_faults_under_secure_1(void)
{
    nd_api();
    long sizes[] = { 200L << 10, 256L << 10, (1L << 20) - 8192 };
    for (size_t i = 0; i < 3; i++)
        expect_fault("a write past the end of a large block", "secure=1", "write_past_usable", sizes[i]);
    expect_fault("a write past the end of a large block where others came and went", "secure=1",
                 "write_past_reused_large", 220L << 10);
    expect_fault("a write past the end of a large block in a run a longer block left", "secure=1",
                 "write_past_large_in_a_longer_run", 300L << 10);
    expect_fault("a write past the end of a large block grown by realloc", "secure=1",
                 "write_past_realloc_grown_large", 700L << 10);
    /* Grown past 12,789 B it is a large block (alloc.c: nd_malloc_grown),
       its guard page right after its usable bytes (h47v; on main a
       20 KiB medium block took the growth from 12,789 to 20,000 B, where
       the write only overwrites its canary). */
    expect_fault("a write past the end of a block grown by realloc from 8 B to 20,000 B", "secure=1",
                 "write_past_realloc_grown_from_8", 20000);
    expect_fault("a write past the end of a 1 MiB-aligned large block where others came and went", "secure=1",
                 "write_past_aligned_large", 600L << 10);
}

/* A huge block freed, then a block of another size that reuses its
   mapping, grown or trimmed (arg: first size in MiB << 16 | second size
   in MiB); a write past the end of the second. */
static void sc_write_past_reused_huge(long arg)
{
    const struct nd_api *A = nd_api();
    size_t first = (size_t)(arg >> 16) << 20, second = (size_t)(arg & 0xffff) << 20;
    void *keep = A->malloc(64);
    A->free(A->malloc(first));
    unsigned char *p = A->malloc(second);
    if (!p || !keep)
        _exit(4);
    char what[96];
    snprintf(what, sizeof what, "%zu-byte block (after a %zu-byte one)", second, first);
    write_one_past(p, what);
}

/* A block realloc resizes from `arg >> 16` MiB to `arg & 0xffff` MiB in
   steps of a tenth (grown or shrunk where it is, or moved, without a
   copy), its last byte written at each step; then one byte past it. */
static void sc_write_past_realloced_huge(long arg)
{
    const struct nd_api *A = nd_api();
    size_t from = (size_t)(arg >> 16) << 20, to = (size_t)(arg & 0xffff) << 20;
    void *keep = A->malloc(64);
    unsigned char *p = A->malloc(from);
    if (!p || !keep)
        _exit(4);
    for (size_t sz = from; sz != to;) {
        sz = to > from ? sz + sz / 10 : sz - sz / 10;
        if ((to > from && sz > to) || (to < from && sz < to))
            sz = to;
        p = A->realloc(p, sz);
        if (!p)
            _exit(4);
        p[sz - 1] = 1;
    }
    char what[96];
    snprintf(what, sizeof what, "%zu-byte block (resized by realloc from %zu bytes)", to, from);
    write_one_past(p, what);
}

static void overflow_past_a_huge_block_faults_under_secure_1(void)
{
    nd_api();
    expect_fault("a write past the end of an 8 MiB block", "secure=1", "write_past_usable", 8L << 20);
    expect_fault("a write past the end of a 5 MiB + 1 byte block", "secure=1", "write_past_usable",
                 (5L << 20) + 1);
    /* A freed mapping reused for a larger block (grown) and a much smaller
       one (trimmed): the guard page moves to the new end. */
    expect_fault("a write past the end of a 12 MiB block in a grown 8 MiB mapping", "secure=1",
                 "write_past_reused_huge", 8L << 16 | 12);
    expect_fault("a write past the end of a 6 MiB block in a trimmed 64 MiB mapping", "secure=1",
                 "write_past_reused_huge", 64L << 16 | 6);
    /* Resized by realloc without a copy (grown where it is or moved,
       shrunk where it is): the guard page is at the new end. */
    expect_fault("a write past the end of a block realloc grew from 2 MiB to 40 MiB", "secure=1",
                 "write_past_realloced_huge", 2L << 16 | 40);
    expect_fault("a write past the end of a block realloc shrank from 40 MiB to 3 MiB", "secure=1",
                 "write_past_realloced_huge", 40L << 16 | 3);
}

/* Blocks of `size` until one ends where the last page of its segment ends;
   a write just past it. */
static void sc_write_past_segment_end(long size)
{
    const struct nd_api *A = nd_api();
    const uintptr_t seg = (uintptr_t)4 << 20;
    for (int i = 0; i < 200000; i++) {
        unsigned char *p = A->malloc((size_t)size);
        if (!p)
            _exit(4);
        uintptr_t end = (uintptr_t)p + A->usable_size(p) + 8;   /* + its canary */
        if (seg - (end & (seg - 1)) <= 4096 && (end & (seg - 1)) != 0) {
            size_t gap = seg - (end & (seg - 1));
            printf("about to write %zu bytes past the end of the block %p, the last of its segment\n",
                   gap, (void *)p);
            fflush(stdout);
            memset(p + A->usable_size(p), 0x41, 8 + gap);
            let_through("an overflow past the last block %p of a segment", (void *)p);
        }
    }
    fprintf(stderr, "no block near the end of a segment among 200000\n");
    _exit(6);
}

static void overflow_past_the_last_block_of_a_segment_faults_under_secure_1(void)
{
    nd_api();
    expect_fault("an overflow past the last block of a segment", "secure=1", "write_past_segment_end", 56);
}

/* An overflow past the end of a block that ends where the next segment
   starts (here an 8 MiB huge block, whose mapping is exactly 8 MiB, next to
   another) lands in that segment's header: the free of the other block
   reports heap corruption, not a pointer nodal never returned, and does
   not crash on the damaged header. */
static void sc_overflow_into_next_segment(long arg)
{
    (void)arg;
    const struct nd_api *A = nd_api();
    const size_t seg = (size_t)4 << 20, size = 2 * seg - ((size_t)4 << 10);
    unsigned char *blk[24];
    for (int i = 0; i < 24; i++) {
        if (!(blk[i] = A->malloc(size)))
            _exit(4);
        for (int j = 0; j < i; j++) {
            unsigned char *lo = blk[i] < blk[j] ? blk[i] : blk[j];
            unsigned char *hi = blk[i] < blk[j] ? blk[j] : blk[i];
            uintptr_t hi_seg = (uintptr_t)hi & ~(uintptr_t)(seg - 1);
            if (lo + A->usable_size(lo) != (unsigned char *)hi_seg)
                continue;
            want("nodal: free(): heap corruption (segment header overwritten): %p", (void *)hi);
            memset(lo + A->usable_size(lo), 0x41, 64);
            A->free(hi);
            let_through("a 64-byte overflow past the block %p into the next segment", (void *)lo);
        }
    }
    fprintf(stderr, "no two blocks in adjacent mappings among 24\n");
    _exit(6);
}

/* A wild write over a segment header's first word (its cookie), then a
   free of a block of that segment. Under secure=1 a free into the
   thread's bin does not compare the cookie (the segment's guard page
   stops a linear overflow before the next segment's header,
   hardening.md); a free that takes the slow path does, as the default's
   does, before it trusts anything in the header: here every free, with
   thread caches of capacity 0 (tcache_count=0). */
static void sc_wild_write_over_a_segment_header(long arg)
{
    (void)arg;
    const struct nd_api *A = nd_api();
    unsigned char *p = A->malloc(40);
    if (!p)
        _exit(4);
    uintptr_t seg = (uintptr_t)p & ~(((uintptr_t)4 << 20) - 1);
    want("nodal: free(): heap corruption (segment header overwritten): %p", (void *)p);
    ((volatile uint64_t *)seg)[0] ^= 0x41;
    A->free(p);
    let_through("a free into a segment whose header was overwritten");
}

static void a_segment_header_overwritten_is_reported_by_the_slow_path_under_secure_1(void)
{
    nd_api();
    expect_misuse("a free into a segment whose header a wild write changed", "secure=1,tcache_count=0",
                  "wild_write_over_a_segment_header", 0);
    expect_misuse("a free into a segment whose header a wild write changed", "tcache_count=0",
                  "wild_write_over_a_segment_header", 0);
}

static void overflow_past_a_block_into_the_next_segment_is_reported_as_corruption(void)
{
    nd_api();
    /* The misuse cases may all run under secure=1 or 2 (NODAL_OPTIONS in
       the environment, which the scenario's child inherits): every block
       then ends before a guard page, a huge one too, so none ends where
       the next segment starts. */
    const char *opts = getenv("NODAL_OPTIONS"), *one = getenv("NODAL_SECURE");
    if ((opts != NULL && (strstr(opts, "secure=1") != NULL || strstr(opts, "secure=2") != NULL)) ||
        (one != NULL && one[0] != '\0' && strcmp(one, "0") != 0))
        SKIP("under secure=1 or 2 a block ends at a guard page, never where the next segment starts: "
             "overflow_past_a_huge_block_faults_under_secure_1 checks that such an overflow faults there");
    expect_misuse("a 64-byte overflow past a block into the next segment's header", NULL,
                  "overflow_into_next_segment", 0);
}

/* ---- realloc of a freed block ------------------------------------------- */

static void sc_realloc_freed(long size)
{
    const struct nd_api *A = nd_api();
    void *keep = A->malloc((size_t)size);
    void *p = A->malloc((size_t)size);
    void *keep2 = A->malloc((size_t)size);
    if (!keep || !p || !keep2)
        _exit(4);
    want("nodal: realloc(): invalid pointer (block not in use): %p", p);
    A->free(p);
    void *q = A->realloc(p, (size_t)size / 2);
    let_through("realloc(%p, %ld) of a freed %ld-byte block returned %p", p, size / 2, size, q);
}

/* A block realloc grew past 16 KiB to `size` bytes, freed: kept for the
   next grown block (large.h), in use for its pool; a realloc of it (or a
   second free: arg < 0) must abort all the same. */
static void sc_realloc_freed_grown(long arg)
{
    const struct nd_api *A = nd_api();
    size_t size = (size_t)(arg < 0 ? -arg : arg);
    unsigned char *p = A->malloc(8);
    for (size_t n = 8; p != NULL && n < size;) {
        n += n / 4 + 8;
        p = A->realloc(p, n);
    }
    if (!p)
        _exit(4);
    A->free(p);
    if (arg < 0) {
        want("nodal: free(): double free or invalid pointer (block not in use): %p", p);
        A->free(p);
        let_through("a second free of a freed block realloc grew to %zu bytes", size);
    }
    want("nodal: realloc(): invalid pointer (block not in use): %p", p);
    void *q = A->realloc(p, size * 2);
    let_through("realloc(%p, %zu) of a freed block realloc grew to %zu bytes returned %p", p, size * 2, size, q);
}

static void realloc_of_a_freed_large_block_aborts_with_message(void)
{
    nd_api();
    expect_misuse("realloc() of a freed 256 KiB block", NULL, "realloc_freed", 256L << 10);
    expect_misuse("realloc() of a freed block realloc grew to 40 KiB (kept)", NULL, "realloc_freed_grown",
                  40L << 10);
    expect_misuse("realloc() of a freed block realloc grew to 100 KiB (kept)", NULL, "realloc_freed_grown",
                  100L << 10);
    expect_misuse("a second free of a freed block realloc grew to 40 KiB (kept)", NULL, "realloc_freed_grown",
                  -(40L << 10));
}

static void realloc_of_a_freed_block_aborts_with_message_under_check_2(void)
{
    nd_api();
    expect_misuse("realloc() of a freed 100-byte block", "check=2", "realloc_freed", 100);
    expect_misuse("realloc() of a freed 3000-byte block", "check=2", "realloc_freed", 3000);
}

static const struct scenario scenarios[] = {
    { "double_free_p_q_p", sc_double_free_p_q_p },
    { "double_free_owner_then_other", sc_double_free_owner_then_other },
    { "double_free_other_then_owner", sc_double_free_other_then_owner },
    { "free_interior", sc_free_interior },
    { "free_global", sc_free_global },
    { "free_wild", sc_free_wild },
    { "free_segment_header", sc_free_segment_header },
    { "poison_remote", sc_poison_remote },
    { "poison_local", sc_poison_local },
    { "write_into_a_stored_block", sc_write_into_a_stored_block },
    { "overflow_into_free_neighbour", sc_overflow_into_free_neighbour },
    { "overflow_into_live_neighbour", sc_overflow_into_live_neighbour },
    { "overflow_into_next_segment", sc_overflow_into_next_segment },
    { "wild_write_over_a_segment_header", sc_wild_write_over_a_segment_header },
    { "realloc_freed", sc_realloc_freed },
    { "realloc_freed_grown", sc_realloc_freed_grown },
    { "write_after_free", sc_write_after_free },
    { "overflow_by_one", sc_overflow_by_one },
    { "overflow_then_remote_free", sc_overflow_then_remote_free },
    { "realloc_overflowed", sc_realloc_overflowed },
    { "double_free_after_write", sc_double_free_after_write },
    { "forge_from_freed_words", sc_forge_from_freed_words },
    { "double_free_second_word_cleared", sc_double_free_second_word_cleared },
    { "write_past_usable", sc_write_past_usable },
    { "write_past_segment_end", sc_write_past_segment_end },
    { "write_past_reused_huge", sc_write_past_reused_huge },
    { "write_past_realloced_huge", sc_write_past_realloced_huge },
    { "write_past_reused_large", sc_write_past_reused_large },
    { "write_past_large_in_a_longer_run", sc_write_past_large_in_a_longer_run },
    { "write_past_aligned_large", sc_write_past_aligned_large },
    { "write_past_realloc_grown_large", sc_write_past_realloc_grown_large },
    { "write_past_realloc_grown_from_8", sc_write_past_realloc_grown_from_8 },
};

static const struct scenario *find_scenario(const char *name)
{
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (strcmp(scenarios[i].name, name) == 0)
            return &scenarios[i];
    return NULL;
}

static const struct nd_case cases[] = {
    ND_CASE(free_of_stack_address_aborts_with_message),
    ND_CASE(free_of_pointer_into_foreign_mapping_aborts_with_message),
    ND_CASE(free_of_glibc_pointer_aborts_with_message),
    ND_CASE(double_free_of_small_block_aborts_with_message),
    ND_CASE(double_free_of_medium_block_aborts_with_message),
    ND_CASE(double_free_of_large_block_aborts_with_message),
    ND_CASE(double_free_of_huge_block_aborts_with_message),
    ND_CASE(double_free_of_a_kept_one_page_block_aborts_with_message),
    ND_CASE(double_free_by_another_thread_aborts_with_message),
    ND_CASE(double_free_p_q_p_by_another_thread_aborts_with_message),
    ND_CASE(double_free_by_another_thread_aborts_at_the_owners_exit),
    ND_CASE(double_free_p_q_p_of_small_block_aborts_with_message),
    ND_CASE(double_free_p_q_p_of_medium_block_aborts_with_message),
    ND_CASE(double_free_p_q_p_of_large_block_aborts_with_message),
    ND_CASE(double_free_p_q_p_of_huge_block_aborts_with_message),
    ND_CASE(double_free_by_owner_then_another_thread_aborts_with_message),
    ND_CASE(double_free_by_another_thread_then_owner_aborts_with_message),
    ND_CASE(check_2_validates_a_free_by_another_thread),
    ND_CASE(free_of_interior_pointer_of_small_block_aborts_with_message),
    ND_CASE(free_of_interior_pointer_of_medium_block_aborts_with_message),
    ND_CASE(free_of_interior_pointer_of_large_block_aborts_with_message),
    ND_CASE(free_of_interior_pointer_of_huge_block_aborts_with_message),
    ND_CASE(free_of_pointer_deep_inside_a_huge_block_aborts_with_message),
    ND_CASE(free_of_global_address_aborts_with_message),
    ND_CASE(free_of_unmapped_address_aborts_with_message),
    ND_CASE(free_of_a_segment_base_aborts_with_message),
    ND_CASE(write_after_free_of_a_remotely_freed_block_is_caught),
    ND_CASE(write_after_free_of_a_remotely_freed_block_is_caught_under_secure_1),
    ND_CASE(write_into_a_block_waiting_in_the_transfer_store_is_caught_under_secure_1),
    ND_CASE(write_after_free_into_a_page_free_list_is_caught),
    ND_CASE(write_after_free_into_a_page_free_list_is_caught_under_check_2),
    ND_CASE(overflow_into_a_free_neighbour_is_caught_under_secure_2),
    ND_CASE(overflow_into_a_live_neighbour_is_caught_under_secure_1),
    ND_CASE(write_after_free_is_caught_at_reuse_under_secure_2),
    ND_CASE(one_byte_overflow_is_caught_at_free_under_secure_1),
    ND_CASE(overflow_is_caught_by_a_free_in_another_thread_under_secure_1),
    ND_CASE(realloc_of_an_overflowed_block_is_caught_under_secure_1),
    ND_CASE(double_free_after_a_write_into_the_block_is_caught_under_secure_1),
    ND_CASE(double_free_across_threads_is_caught_under_secure_1),
    ND_CASE(overflow_past_a_large_block_faults_under_secure_1),
    ND_CASE(overflow_past_a_huge_block_faults_under_secure_1),
    ND_CASE(overflow_past_the_last_block_of_a_segment_faults_under_secure_1),
    ND_CASE(overflow_past_a_block_into_the_next_segment_is_reported_as_corruption),
    ND_CASE(a_segment_header_overwritten_is_reported_by_the_slow_path_under_secure_1),
    ND_CASE(realloc_of_a_freed_large_block_aborts_with_message),
    ND_CASE(realloc_of_a_freed_block_aborts_with_message_under_check_2),
    ND_CASE(a_read_of_freed_blocks_does_not_forge_a_link_to_a_live_block),
    ND_CASE(a_read_of_freed_blocks_does_not_forge_a_link_to_a_cached_block),
    ND_CASE(a_read_of_freed_blocks_does_not_forge_a_link_under_check_2_or_secure_1),
    ND_CASE(double_free_with_the_second_word_cleared_in_between_aborts),
    ND_CASE(double_free_with_the_second_word_cleared_into_a_full_bin_aborts),
    ND_CASE(double_free_with_the_second_word_cleared_aborts_under_check_2),
    ND_CASE(double_free_with_the_second_word_cleared_aborts_under_secure_1),
    ND_CASE(double_free_with_the_second_word_cleared_aborts_under_secure_2),
    ND_CASE(misuse_child),
};
ND_MAIN(cases)
