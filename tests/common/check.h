/*
 * check.h - what every nodal test program shares: the EXPECT/SKIP macros,
 * the case table and its command line, and the seeded random generator.
 *
 * A test program is a table of cases, each named after the property it
 * checks. ctest runs one case per process:
 *
 *     prog CASE                 run one case (exit 0 pass, 1 fail, 77 skip)
 *     prog                      run every case, each in a child process
 *     prog --list               print the case names
 *     prog --check-list A B ..  fail unless A B .. are exactly the cases
 *                               (CMake registers names; this catches drift)
 *     prog --seed=N             replay a randomized run
 *     prog --variant=NAME       which names to call (see api.h)
 *     prog --KEY=VALUE          a tuning knob the program reads with
 *                               nd_opt_long("KEY", default)
 *
 * A failure prints one line: the case, the place, what was expected and what
 * happened, and the seed if the case drew random numbers; then the process
 * exits 1 at once (_exit: other threads may still be running). A skip prints
 * "SKIP: why" and exits 77; it is never reported as a pass.
 */
#ifndef ND_TEST_CHECK_H
#define ND_TEST_CHECK_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ND_SKIP_CODE 77

struct nd_case {
    const char *name;
    void (*run)(void);
};

/* State of the running program (one case at a time). */
static const char *nd_case_name = "?";
static const char *nd_variant = NULL;
static uint64_t nd_seed;
static int nd_seed_drawn;          /* print the seed on failure only if used */
#define ND_MAX_OPTS 16
static const char *nd_opt_keys[ND_MAX_OPTS];
static const char *nd_opt_vals[ND_MAX_OPTS];
static int nd_opt_count;

__attribute__((noreturn, format(printf, 3, 4), unused))
static void nd_fail_at(const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (nd_seed_drawn)
        fprintf(stderr, "FAIL %s (%s:%d): expected %s [seed=%" PRIu64
                ", rerun with --seed=%" PRIu64 "]\n",
                nd_case_name, file, line, msg, nd_seed, nd_seed);
    else
        fprintf(stderr, "FAIL %s (%s:%d): expected %s\n",
                nd_case_name, file, line, msg);
    fflush(stdout);
    _exit(1);
}

/* EXPECT(cond, "what should hold, with %d values", ...): the message reads
   after the word "expected". */
#define EXPECT(cond, ...)                                                    \
    do {                                                                     \
        if (!(cond))                                                         \
            nd_fail_at(__FILE__, __LINE__, __VA_ARGS__);                     \
    } while (0)

#define FAIL(...) nd_fail_at(__FILE__, __LINE__, __VA_ARGS__)

__attribute__((noreturn, format(printf, 1, 2), unused))
static void nd_skip(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "SKIP %s: ", nd_case_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stdout);
    _exit(ND_SKIP_CODE);
}
#define SKIP(...) nd_skip(__VA_ARGS__)

/* A knob given as --KEY=VALUE, or `dflt`. */
__attribute__((unused))
static long nd_opt_long(const char *key, long dflt)
{
    for (int i = 0; i < nd_opt_count; i++)
        if (strcmp(nd_opt_keys[i], key) == 0)
            return strtol(nd_opt_vals[i], NULL, 0);
    return dflt;
}

__attribute__((unused))
static int nd_opt_has(const char *key)
{
    for (int i = 0; i < nd_opt_count; i++)
        if (strcmp(nd_opt_keys[i], key) == 0)
            return 1;
    return 0;
}

/* ---- random numbers ------------------------------------------------------ */
/* splitmix64: small, fast, good enough for choosing sizes and operations. */
struct nd_rng {
    uint64_t s;
};

static inline uint64_t nd_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t nd_rng_next(struct nd_rng *r)
{
    r->s += 0x9e3779b97f4a7c15ULL;
    return nd_mix64(r->s);
}

/* Uniform in [0, n) (n > 0; the tiny modulo bias does not matter here). */
static inline uint64_t nd_rng_below(struct nd_rng *r, uint64_t n)
{
    return nd_rng_next(r) % n;
}

/* The run's seed: --seed=N, else $ND_TEST_SEED, else time and pid. Printed
   on stdout when first drawn and in every failure message after that. */
__attribute__((unused))
static uint64_t nd_test_seed(void)
{
    if (!nd_seed_drawn) {
        const char *env = getenv("ND_TEST_SEED");
        const char *given = NULL;
        for (int i = 0; i < nd_opt_count; i++)
            if (strcmp(nd_opt_keys[i], "seed") == 0)
                given = nd_opt_vals[i];
        if (!given && env && *env)
            given = env;
        if (given) {
            nd_seed = strtoull(given, NULL, 0);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            nd_seed = nd_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20)
                               ^ ((uint64_t)getpid() << 40)) % 1000000000ULL;
        }
        nd_seed_drawn = 1;
        printf("%s: seed=%" PRIu64 "\n", nd_case_name, nd_seed);
        fflush(stdout);
    }
    return nd_seed;
}

/* A generator for stream `stream` (one per thread) of this run's seed. */
__attribute__((unused))
static struct nd_rng nd_rng_for(uint64_t stream)
{
    struct nd_rng r = { nd_mix64(nd_test_seed() * 0x2545f4914f6cdd1dULL + stream) };
    return r;
}

/* ---- the case table's command line ----------------------------------- */
__attribute__((unused))
static const struct nd_case *nd_find_case(const struct nd_case *cases, size_t n,
                                          const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cases[i].name, name) == 0)
            return &cases[i];
    return NULL;
}

/* Runs every case in a child of its own; returns the exit code of the run. */
__attribute__((unused))
static int nd_run_all(const char *prog, const struct nd_case *cases, size_t n)
{
    int failed = 0, skipped = 0, passed = 0;
    for (size_t i = 0; i < n; i++) {
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            nd_case_name = cases[i].name;
            cases[i].run();
            fflush(stdout);
            exit(0);
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        const char *verdict;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            verdict = "PASS", passed++;
        else if (WIFEXITED(st) && WEXITSTATUS(st) == ND_SKIP_CODE)
            verdict = "SKIP", skipped++;
        else
            verdict = "FAIL", failed++;
        printf("%s %s\n", verdict, cases[i].name);
    }
    printf("%s: %d passed, %d failed, %d skipped\n", prog, passed, failed, skipped);
    if (failed)
        return 1;
    if (passed == 0 && skipped > 0)
        return ND_SKIP_CODE;
    return 0;
}

__attribute__((unused))
static int nd_main(int argc, char **argv, const struct nd_case *cases, size_t n)
{
    const char *names[1024];
    int nnames = 0, list = 0, check_list = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--list") == 0) {
            list = 1;
        } else if (strcmp(a, "--check-list") == 0) {
            check_list = 1;
        } else if (strncmp(a, "--variant=", 10) == 0) {
            nd_variant = a + 10;
        } else if (strncmp(a, "--", 2) == 0 && strchr(a, '=') && nd_opt_count < ND_MAX_OPTS) {
            static char keybuf[ND_MAX_OPTS][64];
            size_t k = (size_t)(strchr(a, '=') - (a + 2));
            if (k >= sizeof keybuf[0])
                k = sizeof keybuf[0] - 1;
            memcpy(keybuf[nd_opt_count], a + 2, k);
            keybuf[nd_opt_count][k] = '\0';
            nd_opt_keys[nd_opt_count] = keybuf[nd_opt_count];
            nd_opt_vals[nd_opt_count] = strchr(a, '=') + 1;
            nd_opt_count++;
        } else if (strncmp(a, "--", 2) == 0) {
            fprintf(stderr, "%s: unknown option %s\n", argv[0], a);
            return 2;
        } else if (nnames < (int)(sizeof names / sizeof names[0])) {
            names[nnames++] = a;
        } else {
            fprintf(stderr, "%s: more than %zu case names\n", argv[0], sizeof names / sizeof names[0]);
            return 2;
        }
    }
    if (list) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    if (check_list) {
        int bad = 0;
        for (int i = 0; i < nnames; i++)
            if (!nd_find_case(cases, n, names[i])) {
                fprintf(stderr, "FAIL: CMake registers case %s, which %s does not have\n",
                        names[i], argv[0]);
                bad = 1;
            }
        for (size_t i = 0; i < n; i++) {
            int found = 0;
            for (int j = 0; j < nnames; j++)
                found |= strcmp(names[j], cases[i].name) == 0;
            if (!found) {
                fprintf(stderr, "FAIL: case %s of %s is not registered with ctest "
                        "(add it to its tier's CMakeLists.txt under tests/)\n", cases[i].name, argv[0]);
                bad = 1;
            }
        }
        return bad;
    }
    if (nnames == 0)
        return nd_run_all(argv[0], cases, n);
    if (nnames > 1) {
        fprintf(stderr, "%s: give one case name (or none for all)\n", argv[0]);
        return 2;
    }
    const struct nd_case *c = nd_find_case(cases, n, names[0]);
    if (!c) {
        fprintf(stderr, "FAIL: %s has no case named %s (see --list)\n", argv[0], names[0]);
        return 1;
    }
    nd_case_name = c->name;
    c->run();
    fflush(stdout);
    return 0;
}

#define ND_CASE(fn) { #fn, fn }
#define ND_MAIN(table)                                                       \
    int main(int argc, char **argv)                                          \
    {                                                                        \
        return nd_main(argc, argv, table, sizeof(table) / sizeof(table[0])); \
    }

#endif /* ND_TEST_CHECK_H */
