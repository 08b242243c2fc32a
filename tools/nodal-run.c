/*
 * nodal-run.c - runs a program with nodal as its malloc (LD_PRELOAD), nodal
 * options set from flags, and statistics printed when it exits.
 *
 *   nodal-run [FLAGS] [--] PROGRAM [ARGS...]
 *
 * Every flag is checked against the option table before the program starts,
 * by the library's own code (src/support/options.c is linked in): an unknown name or
 * an invalid value is an error with the same words the library would print,
 * and nodal-run exits with status 2. Options already in the environment
 * (NODAL_OPTIONS, NODAL_<NAME>) are checked the same way and kept; flags win
 * over them (each flag becomes a NODAL_<NAME> variable).
 *
 * The library is found relative to this program (ND_RUN_LIB, e.g.
 * "../lib/libnodal.so.0"), so an installed tree can be moved; --lib overrides.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "options-doc.h"

#ifndef ND_RUN_LIB
#error "ND_RUN_LIB (the library's path relative to this program) must be defined"
#endif
#ifndef ND_VERSION
#error "ND_VERSION must be defined"
#endif

#define EXIT_USAGE 2

static const char usage_text[] =
    "usage: nodal-run [FLAGS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with nodal as its malloc (LD_PRELOAD) and prints nodal's\n"
    "statistics on stderr when it exits.\n"
    "\n"
    "  --stats[=text|json|summary|off]\n"
    "                           statistics at exit (default: text; summary: the\n"
    "                           one line per process, for a build's many processes)\n"
    "  --no-stats               no statistics\n"
    "  --stats-file=PATH        statistics to PATH instead of stderr; %p in PATH\n"
    "                           becomes the process id (one file per process)\n"
    "  --profile[=RATE]         heap profile: sample one allocation per RATE\n"
    "                           bytes (default 512k) with its call stack; the\n"
    "                           profile and a leak report are written at exit\n"
    "                           (nodal-run says where; see docs/profiling.md)\n"
    "  --stats-every[=]SECONDS  statistics of the running program every SECONDS\n"
    "                           (10, 10s, 2m) on stderr, as --stats chooses\n"
    "  --NAME=VALUE             set nodal option NAME, dashes or underscores:\n"
    "                           --tcache-count=256 --node-fallback=preferred\n"
    "  --NAME, --no-NAME        set a switch on or off: --huge-pages\n"
    "  --lib=PATH               preload this libnodal.so instead of the one\n"
    "                           installed with nodal-run\n"
    "  --list-options           the options, their defaults and values\n"
    "  --version                nodal-run's version and the library it uses\n"
    "                           (with --lib=PATH: that one)\n"
    "  -h, --help               this text\n"
    "\n"
    "Flags are checked before PROGRAM starts: an unknown option or an invalid\n"
    "value is an error (exit status 2). Options already in the environment\n"
    "(NODAL_OPTIONS, NODAL_<NAME>) are checked too and kept; flags win.\n"
    "Exit status: PROGRAM's; 2 usage error; 126/127 PROGRAM cannot be run.\n"
    "See nodal-run(1) and nodal(3).\n";

/* nodal-run's own flags, for suggestions. */
static const char *const own_flags[] = {
    "help", "version", "list-options", "lib", "stats", "no-stats", "stats-file",
    "profile", "stats-every",
};
#define N_OWN (sizeof own_flags / sizeof own_flags[0])

static __attribute__((format(printf, 1, 2))) _Noreturn void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "nodal-run: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: nodal-run [FLAGS] [--] PROGRAM [ARGS...]   (nodal-run --help lists the flags)\n");
    exit(EXIT_USAGE);
}

/* The library next to this program, or NULL with a reason in why. */
static const char *default_lib(char *buf, size_t len, char *why, size_t wlen)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(why, wlen, "cannot find where nodal-run is (/proc/self/exe)");
        return NULL;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash != NULL)
        *slash = '\0';
    char guess[PATH_MAX + 64];
    snprintf(guess, sizeof guess, "%s/%s", self, ND_RUN_LIB);
    if (realpath(guess, buf) == NULL || strlen(buf) >= len) {
        snprintf(why, wlen, "the library %.3000s is missing (reinstall nodal, or name one with --lib=PATH)",
                 guess);
        return NULL;
    }
    return buf;
}

/* Whether the program execvp would run for name is a statically linked ELF
   executable: no PT_INTERP, so no dynamic loader runs and LD_PRELOAD has no
   effect. False when it cannot tell (not found, not ELF: a script's
   interpreter is what runs). */
static bool is_static_elf(const char *name)
{
    char path[PATH_MAX];
    const char *found = NULL;
    if (strchr(name, '/') != NULL) {
        found = name;
    } else {
        const char *dirs = getenv("PATH");
        for (const char *d = dirs ? dirs : "/usr/local/bin:/usr/bin:/bin"; found == NULL && *d;) {
            const char *end = strchr(d, ':');
            size_t len = end ? (size_t)(end - d) : strlen(d);
            if (snprintf(path, sizeof path, "%.*s%s%s", (int)len, d, len ? "/" : "", name) < (int)sizeof path &&
                access(path, X_OK) == 0)
                found = path;
            d += len + (end != NULL);
        }
    }
    if (found == NULL)
        return false;
    int fd = open(found, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    Elf64_Ehdr eh;
    bool is_static = false;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && (eh.e_type == ET_EXEC || eh.e_type == ET_DYN) &&
        eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum < 4096) {
        is_static = true;
        for (unsigned k = 0; k < eh.e_phnum && is_static; k++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)k * sizeof ph)) != (ssize_t)sizeof ph)
                is_static = false;                /* cannot tell */
            else if (ph.p_type == PT_INTERP)
                is_static = false;
        }
        /* a shared library (ET_DYN without PT_INTERP and not executable) is not
           a program: execvp fails on it and says so */
        if (is_static && eh.e_type == ET_DYN && eh.e_entry == 0)
            is_static = false;
    }
    close(fd);
    return is_static;
}

/* "--tcache-count" -> "tcache_count" in buf. */
static void option_name(const char *flag, size_t len, char *buf, size_t blen)
{
    size_t i = 0;
    for (; i < len && i + 1 < blen; i++)
        buf[i] = flag[i] == '-' ? '_' : flag[i];
    buf[i] = '\0';
}

/* Suggestions for a flag that is neither one of ours nor an option: names
   that begin with it, else the nearest ones. */
static void suggest(const char *word, char *out, size_t olen)
{
    const char *cand[N_OWN + ND_OPT_COUNT];
    char dashed[ND_OPT_COUNT][48];
    size_t n = 0;
    for (size_t i = 0; i < N_OWN; i++)
        cand[n++] = own_flags[i];
    for (int i = 0; i < ND_OPT_COUNT; i++) {
        option_name(nd_opt_table[i].name, strlen(nd_opt_table[i].name), dashed[i], sizeof dashed[i]);
        for (char *c = dashed[i]; *c; c++)
            if (*c == '_')
                *c = '-';
        cand[n++] = dashed[i];
    }
    size_t wlen = strlen(word);
    const char *pick[3];
    size_t picks = 0;
    for (size_t i = 0; i < n && wlen > 0; i++)
        if (strncmp(cand[i], word, wlen) == 0 && picks < 3)
            pick[picks++] = cand[i];
    if (picks == 0) {
        int best = 1000;
        for (size_t i = 0; i < n; i++) {
            int d = nd_opt_distance(word, wlen, cand[i]);
            if (d < best) {
                best = d;
                picks = 0;
            }
            if (d == best && picks < 3)
                pick[picks++] = cand[i];
        }
        int limit = (int)wlen / 3 > 2 ? (int)wlen / 3 : 2;
        if (best > limit)
            picks = 0;
    }
    out[0] = '\0';
    for (size_t i = 0; i < picks; i++) {
        size_t used = strlen(out);
        snprintf(out + used, olen - used, "%s--%s", i == 0 ? "; did you mean " : i + 1 == picks ? " or " : ", ",
                 pick[i]);
    }
    if (picks > 0) {
        size_t used = strlen(out);
        snprintf(out + used, olen - used, "?");
    }
}

/* ---- the environment ------------------------------------------------------ */

static int env_errors;
static unsigned char set_by_env[ND_OPT_COUNT];

static void check_env_setting(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen)
{
    const char *source = ctx;
    char msg[1024];
    int id;
    long v;
    if (nd_opt_check(name, nlen, value, vlen, source, "", &id, &v, msg, sizeof msg) != 0) {
        fprintf(stderr, "nodal-run: %s\n", msg);
        env_errors++;
    } else {
        set_by_env[id] = 1;
    }
}

static void check_environment(void)
{
    const char *all = getenv("NODAL_OPTIONS");
    if (all != NULL)
        nd_opt_scan(all, check_env_setting, (void *)"NODAL_OPTIONS");
    for (int i = 0; i < ND_OPT_COUNT; i++) {
        char var[64];
        nd_opt_var_name((nd_opt_id)i, var, sizeof var);
        const char *v = getenv(var);
        if (v != NULL)
            check_env_setting(var, nd_opt_table[i].name, strlen(nd_opt_table[i].name), v, strlen(v));
    }
    if (env_errors > 0) {
        fprintf(stderr, "nodal-run: fix or unset %s in the environment\n",
                env_errors == 1 ? "that setting" : "those settings");
        exit(EXIT_USAGE);
    }
}

/* ---- flags ------------------------------------------------------------------ */

struct setting {
    int id;
    const char *value;    /* NULL: the name alone */
};

int main(int argc, char **argv)
{
    static struct setting settings[256];
    size_t nsettings = 0;
    const char *lib_flag = NULL;
    bool stats_flag = false, version = false, profile = false;
    int i = 1;

    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')   /* the program ("-" alone is one too) */
            break;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(a, "--version") == 0) {   /* answered once --lib is known */
            version = true;
            continue;
        }
        if (strcmp(a, "--list-options") == 0) {
            nd_options_doc(stdout, "text");
            return 0;
        }
        if (a[1] != '-') {                 /* -v, -x ...: not ours */
            char hint[256];
            suggest(a + 1, hint, sizeof hint);
            usage_error("unknown flag '%s'%s (flags are long, --name or --name=value, and "
                        "come before the program)", a, hint);
        }
        const char *body = a + 2;
        const char *eq = strchr(body, '=');
        size_t blen = eq ? (size_t)(eq - body) : strlen(body);
        const char *value = eq ? eq + 1 : NULL;
        if (blen == 3 && strncmp(body, "lib", 3) == 0) {
            if (value == NULL || *value == '\0')
                usage_error("%s needs a path: --lib=PATH", a);
            lib_flag = value;
            continue;
        }
        if (blen == 7 && strncmp(body, "profile", 7) == 0) {
            /* --profile[=RATE]: prof=1 (and prof_rate=RATE) */
            if (nsettings + 2 > sizeof settings / sizeof settings[0])
                usage_error("too many flags");
            settings[nsettings].id = ND_OPT_prof;
            settings[nsettings++].value = "1";
            if (value != NULL) {
                char msg[1024];
                int id;
                long v;
                if (nd_opt_check("prof_rate", 9, value, strlen(value), "--profile", "", &id, &v, msg, sizeof msg) != 0) {
                    fprintf(stderr, "nodal-run: %s\n", msg);
                    return EXIT_USAGE;
                }
                settings[nsettings].id = id;
                settings[nsettings++].value = value;
            }
            profile = true;
            continue;
        }
        if ((blen == 11 && strncmp(body, "stats-every", 11) == 0) ||
            (blen == 11 && strncmp(body, "stats_every", 11) == 0)) {
            /* --stats-every=10s or --stats-every 10s */
            if (value == NULL) {
                if (i + 1 >= argc)
                    usage_error("%s needs a time: --stats-every 10s", a);
                value = argv[++i];
            }
            char *end;
            errno = 0;
            long secs = strtol(value, &end, 10);
            if (*end == 'm' && end[1] == '\0' && secs < 1440)
                secs *= 60;
            else if (*end == 's' && end[1] == '\0')
                ;
            else if (*end != '\0')
                secs = -1;
            if (end == value || errno != 0 || secs <= 0 || secs > 86400)
                usage_error("%s: '%s' is not a time from 1s to 86400s (10, 10s, 2m)", a, value);
            static char every[32];
            snprintf(every, sizeof every, "%ld", secs);
            if (nsettings == sizeof settings / sizeof settings[0])
                usage_error("too many flags");
            settings[nsettings].id = ND_OPT_stats_every;
            settings[nsettings++].value = every;
            continue;
        }
        if ((blen == 8 && strncmp(body, "no-stats", 8) == 0) ||
            (blen == 8 && strncmp(body, "no_stats", 8) == 0)) {
            if (value != NULL)
                usage_error("%s takes no value", a);
            body = "stats";
            blen = 5;
            value = "off";
        } else if (blen > 3 && (strncmp(body, "no-", 3) == 0 || strncmp(body, "no_", 3) == 0)) {
            char name[64];
            option_name(body + 3, blen - 3, name, sizeof name);
            if (nd_opt_find(name, strlen(name)) >= 0) {
                if (value != NULL)
                    usage_error("%s takes no value (it sets the option to off)", a);
                body += 3;
                blen -= 3;
                value = "off";
            }
        }
        char name[64];
        option_name(body, blen, name, sizeof name);
        if (nd_opt_find(name, strlen(name)) < 0) {
            /* One of our own flags, misspelled? */
            for (size_t k = 0; k < N_OWN; k++)
                if (nd_opt_distance(body, blen, own_flags[k]) <= 2) {
                    char hint[128];
                    snprintf(hint, sizeof hint, "; did you mean --%s?", own_flags[k]);
                    usage_error("unknown flag '%s'%s", a, hint);
                }
        }
        char source[96];
        snprintf(source, sizeof source, "%.*s", (int)(blen + 2 < 90 ? blen + 2 : 90), a);
        char msg[1024];
        int id;
        long v;
        if (nd_opt_check(name, strlen(name), value, value ? strlen(value) : 0, source, "",
                         &id, &v, msg, sizeof msg) != 0) {
            fprintf(stderr, "nodal-run: %s\n", msg);
            return EXIT_USAGE;
        }
        if (nsettings == sizeof settings / sizeof settings[0])
            usage_error("too many flags");
        settings[nsettings].id = id;
        settings[nsettings].value = value;
        nsettings++;
        if (id == ND_OPT_stats)
            stats_flag = true;
    }
    char lib[PATH_MAX];
    if (version) {
        char why[PATH_MAX + 128];
        const char *l;
        if (lib_flag == NULL) {
            l = default_lib(lib, sizeof lib, why, sizeof why);
        } else {
            l = realpath(lib_flag, lib);
            if (l == NULL)
                snprintf(why, sizeof why, "%.3000s: %s", lib_flag, strerror(errno));
        }
        printf("nodal-run %s\nlibrary: %s\n", ND_VERSION, l ? l : why);
        return l ? 0 : EXIT_USAGE;
    }
    if (i >= argc)
        usage_error("no program given");

    check_environment();

    if (lib_flag != NULL) {
        if (realpath(lib_flag, lib) == NULL)
            usage_error("--lib=%s: %s", lib_flag, strerror(errno));
    } else {
        char why[PATH_MAX + 128];
        if (default_lib(lib, sizeof lib, why, sizeof why) == NULL) {
            fprintf(stderr, "nodal-run: %s\n", why);
            return EXIT_USAGE;
        }
    }

    for (size_t k = 0; k < nsettings; k++) {
        char var[64];
        nd_opt_var_name((nd_opt_id)settings[k].id, var, sizeof var);
        /* A name alone means 1, as in NODAL_OPTIONS. */
        setenv(var, settings[k].value ? settings[k].value : "1", 1);
    }
    if (!stats_flag && !set_by_env[ND_OPT_stats])
        setenv("NODAL_STATS", "text", 1);

    const char *old = getenv("LD_PRELOAD");
    size_t plen = strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
    char *preload = malloc(plen);
    if (preload == NULL) {
        perror("nodal-run");
        return EXIT_USAGE;
    }
    snprintf(preload, plen, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);

    /* The program runs anyway: it just does not get nodal. */
    if (is_static_elf(argv[i]))
        fprintf(stderr, "nodal-run: '%s' is statically linked: no dynamic loader runs for it, so "
                        "nodal cannot be preloaded and there is no report (link it with libnodal.a)\n",
                argv[i]);

    if (profile) {
        /* The program keeps this process's id (exec). */
        const char *pre = getenv("NODAL_PROF_PREFIX");
        char where[PATH_MAX + 64];
        if (pre == NULL || *pre == '\0')
            pre = "nodal-prof.%p";
        size_t n = nd_opt_expand_path(pre, (long)getpid(), where, sizeof where);
        if (n < sizeof where)
            fprintf(stderr, "nodal-run: the heap profile goes to %s.exit.heap and %s.exit.txt at exit "
                            "(%s.N.* for dumps before); view: google-pprof --text %s %s.exit.heap\n",
                    where, where, where, argv[i], where);
    }

    execvp(argv[i], argv + i);
    int e = errno;
    fprintf(stderr, "nodal-run: cannot run '%s': %s\n", argv[i], strerror(e));
    return e == ENOENT ? 127 : 126;
}
