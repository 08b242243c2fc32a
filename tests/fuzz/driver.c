/*
 * driver.c - runs the fuzz target (fuzz_ops.c) without libFuzzer: replays
 * saved inputs (the seed corpus, crash regressions) and generates random
 * inputs, with any compiler. libFuzzer builds link its own main instead.
 *
 *   fuzz_replay PATH...                    run each file; a directory runs
 *                                          its files in name order
 *   fuzz_replay --random=N [--seed=S] [--max-len=L]
 *                                          N random inputs of up to L bytes
 *   fuzz_replay --seconds=T [--seed=S]     random inputs for T seconds
 *
 * The process state carries over from one input to the next, as it does
 * under libFuzzer. When an input fails (the target aborts), the input being
 * run (abort, SIGSEGV, SIGBUS) is written to $ND_FUZZ_ARTIFACTS (default: the current directory) as
 * crash-SEED-INDEX and its path printed, so random finds can be replayed:
 * replay the same --seed up to that input, or the file alone (most finds
 * reproduce from the file alone).
 *
 * Ends with one line "fuzz_replay: N passed, 0 failed" (a failure aborts).
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_INPUT_MAX (1 << 20)

static uint8_t *cur_data;
static size_t cur_len;
static uint64_t cur_seed, cur_index;
static int cur_random;
static char crash_path[4096];

/* On abort: save the input that was running (async-signal-safe calls). */
static void on_abort(int sig)
{
    if (cur_random && cur_data) {
        int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            size_t off = 0;
            while (off < cur_len) {
                ssize_t w = write(fd, cur_data + off, cur_len - off);
                if (w <= 0)
                    break;
                off += (size_t)w;
            }
            close(fd);
            static const char msg[] = "fuzz_replay: the failing input is saved as ";
            ssize_t ignored = write(2, msg, sizeof msg - 1);
            ignored = write(2, crash_path, strlen(crash_path));
            ignored = write(2, "\n", 1);
            (void)ignored;
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        exit(2);
    }
    static uint8_t buf[FZ_INPUT_MAX];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    cur_data = buf;
    cur_len = n;
    LLVMFuzzerTestOneInput(buf, n);
    return 1;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz_replay: no such file or directory: %s\n", path);
        exit(2);
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "fuzz_replay: cannot read directory %s\n", path);
        exit(2);
    }
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
        }
        names[count++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof *names, name_cmp);
    size_t runs = 0;
    for (size_t i = 0; i < count; i++) {
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, names[i]);
        runs += run_file(full);
        free(names[i]);
    }
    free(names);
    return runs;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Random inputs: N of them, or as many as fit in `seconds`. */
static size_t run_random(uint64_t seed, uint64_t n, double seconds, size_t max_len)
{
    static uint8_t buf[FZ_INPUT_MAX];
    const char *dir = getenv("ND_FUZZ_ARTIFACTS");
    double end = now_s() + seconds;
    uint64_t s = seed;
    cur_random = 1;
    cur_seed = seed;
    for (cur_index = 0; seconds > 0 ? now_s() < end : cur_index < n; cur_index++) {
        s += 0x9e3779b97f4a7c15ULL;
        size_t len = 1 + mix64(s) % max_len;
        for (size_t i = 0; i < len; i += 8) {
            s += 0x9e3779b97f4a7c15ULL;
            uint64_t w = mix64(s);
            memcpy(buf + i, &w, len - i < 8 ? len - i : 8);
        }
        snprintf(crash_path, sizeof crash_path, "%s/crash-%" PRIu64 "-%" PRIu64,
                 dir && *dir ? dir : ".", cur_seed, cur_index);
        cur_data = buf;
        cur_len = len;
        LLVMFuzzerTestOneInput(buf, len);
    }
    return cur_index;
}

int main(int argc, char **argv)
{
    uint64_t seed = 0, random_n = 0;
    double seconds = 0;
    size_t max_len = 2048, runs = 0;
    int have_seed = 0, random_mode = 0;
    signal(SIGABRT, on_abort);
    signal(SIGSEGV, on_abort);
    signal(SIGBUS, on_abort);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--random=", 9) == 0) {
            random_n = strtoull(a + 9, NULL, 0);
            random_mode = 1;
        } else if (strncmp(a, "--seconds=", 10) == 0) {
            seconds = strtod(a + 10, NULL);
            random_mode = 1;
        } else if (strncmp(a, "--seed=", 7) == 0) {
            seed = strtoull(a + 7, NULL, 0);
            have_seed = 1;
        } else if (strncmp(a, "--max-len=", 10) == 0) {
            max_len = strtoull(a + 10, NULL, 0);
            if (max_len == 0 || max_len > FZ_INPUT_MAX)
                max_len = FZ_INPUT_MAX;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "fuzz_replay: unknown option %s\n", a);
            return 2;
        }
    }
    int paths = 0;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-' || argv[i][1] != '-') {
            runs += run_path(argv[i]);
            paths++;
        }
    if (random_mode) {
        if (!have_seed) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            seed = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32)) % 1000000000ULL;
        }
        printf("fuzz_replay: random inputs, seed=%" PRIu64 " (rerun with --seed=%" PRIu64 ")\n",
               seed, seed);
        runs += run_random(seed, random_n, seconds, max_len);
    }
    if (paths == 0 && !random_mode) {
        fprintf(stderr, "usage: %s PATH... | --random=N | --seconds=T [--seed=S] [--max-len=L]\n",
                argv[0]);
        return 2;
    }
    printf("fuzz_replay: %zu passed, 0 failed\n", runs);
    return 0;
}
