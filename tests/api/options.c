/*
 * options.c - NODAL_OPTIONS: every option is known and parses its valid
 * values; an invalid value prints one warning line naming nodal on stderr and
 * leaves the option at its default. Each setting is tried in a fresh process
 * (this program re-executed with NODAL_OPTIONS set), since options are read
 * once at start-up.
 *
 * OPTIONS-TABLE: the option names and the values tried are in `options`
 * below; adjust them there when the option table in src/options.c settles.
 */
#include <limits.h>

#include "check.h"
#include "nodal.h"
#include "proc.h"

enum kind {
    BOOL,     /* 0 / 1 */
    LEVEL,    /* small integer, 0 = off */
    NUMBER,   /* a count, a size or a delay */
    WORD,     /* one of two words; the first is the default */
};

struct option {
    const char *name;
    enum kind kind;
    const char *words[2];        /* WORD only */
};

static const struct option options[] = {
    { "stats",          BOOL,   { 0 } },
    { "verbose",        LEVEL,  { 0 } },
    { "check",          LEVEL,  { 0 } },
    { "purge_delay",    NUMBER, { 0 } },
    { "tcache_max",     NUMBER, { 0 } },
    { "tcache_count",   NUMBER, { 0 } },
    { "tcache_bytes",   NUMBER, { 0 } },
    { "node_fallback",  WORD,   { "strict", "preferred" } },
    { "huge_pages",     BOOL,   { 0 } },
    { "prefetch",       LEVEL,  { 0 } },
    { "cache_segments", NUMBER, { 0 } },
    { "reclaim_on_free", BOOL,  { 0 } },
};
#define N_OPTIONS (sizeof options / sizeof options[0])

/* Values no option of the kind may accept. */
static const char *const invalid_values[][3] = {
    [BOOL]   = { "banana", "maybe", NULL },
    [LEVEL]  = { "banana", "1x", NULL },
    [NUMBER] = { "banana", "12abc", "-5" },
    [WORD]   = { "banana", "strictly", "" },
};

/* Runs this program's print_options case with NODAL_OPTIONS = setting (and
   one more variable `extra`, "NAME=value", if not NULL) and reads back every
   option's value. */
static void run_with_env(const char *setting, const char *extra, long values[N_OPTIONS],
                         struct nd_child *c)
{
    static char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    EXPECT(n > 0, "/proc/self/exe to name this program");
    self[n] = '\0';
    char *argv[] = { self, (char *)"print_options", NULL };
    nd_run_exec(argv, setting, extra, 30, c);
    EXPECT(WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0,
           "a process with NODAL_OPTIONS=\"%s\" to run normally; it %s; stderr: \"%s\"",
           setting ? setting : "(unset)", nd_describe_status(c->status), c->err);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char key[64];
        snprintf(key, sizeof key, "\n%s=", options[i].name);
        char *at = strstr(c->out, key);
        EXPECT(at != NULL, "the child to print %s (NODAL_OPTIONS=\"%s\"), got \"%s\"",
               options[i].name, setting ? setting : "", c->out);
        values[i] = strtol(at + strlen(key), NULL, 10);
    }
}

static void run_with(const char *setting, long values[N_OPTIONS], struct nd_child *c)
{
    run_with_env(setting, NULL, values, c);
}

static size_t index_of(const char *name)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strcmp(options[i].name, name) == 0)
            return i;
    FAIL("option %s to be in this test's table", name);
}

static void every_option_is_known(void)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        errno = 0;
        long v = nodal_option_get(options[i].name);
        EXPECT(!(v == -1 && errno == ENOENT), "nodal_option_get(\"%s\") to know the option, "
               "it says ENOENT", options[i].name);
    }
}

static long alternative(const struct option *o, long dflt)
{
    if (o->kind == BOOL || o->kind == LEVEL)
        return dflt == 0 ? 1 : 0;
    return dflt >= 2 ? dflt / 2 : dflt + 1;
}

static void every_option_accepts_valid_values(void)
{
    static struct nd_child c;
    long dflt[N_OPTIONS], got[N_OPTIONS];
    run_with(NULL, dflt, &c);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const struct option *o = &options[i];
        char setting[128];
        if (o->kind == WORD) {
            snprintf(setting, sizeof setting, "%s=%s", o->name, o->words[0]);
            run_with(setting, got, &c);
            EXPECT(got[i] == dflt[i], "NODAL_OPTIONS=\"%s\" to give the default %ld, got %ld",
                   setting, dflt[i], got[i]);
            snprintf(setting, sizeof setting, "%s=%s", o->name, o->words[1]);
            run_with(setting, got, &c);
            EXPECT(got[i] != dflt[i], "NODAL_OPTIONS=\"%s\" to change %s from its default %ld",
                   setting, o->name, dflt[i]);
            continue;
        }
        long want[2] = { dflt[i], alternative(o, dflt[i]) };
        for (int k = 0; k < 2; k++) {
            snprintf(setting, sizeof setting, "%s=%ld", o->name, want[k]);
            run_with(setting, got, &c);
            EXPECT(got[i] == want[k], "NODAL_OPTIONS=\"%s\" to set %s to %ld, got %ld",
                   setting, o->name, want[k], got[i]);
            for (size_t j = 0; j < N_OPTIONS; j++)
                EXPECT(j == i || got[j] == dflt[j], "NODAL_OPTIONS=\"%s\" to leave %s at its "
                       "default %ld, got %ld", setting, options[j].name, dflt[j], got[j]);
        }
    }
}

static void invalid_option_values_warn_once_and_keep_the_default(void)
{
    static struct nd_child c;
    long dflt[N_OPTIONS], got[N_OPTIONS];
    run_with(NULL, dflt, &c);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const struct option *o = &options[i];
        for (int k = 0; k < 3 && invalid_values[o->kind][k]; k++) {
            char setting[128];
            snprintf(setting, sizeof setting, "%s=%s", o->name, invalid_values[o->kind][k]);
            run_with(setting, got, &c);
            EXPECT(got[i] == dflt[i], "NODAL_OPTIONS=\"%s\" (invalid) to leave %s at its default "
                   "%ld, got %ld", setting, o->name, dflt[i], got[i]);
            int lines = nd_count_lines_with(c.err, "nodal");
            EXPECT(lines == 1, "NODAL_OPTIONS=\"%s\" (invalid) to print one warning line "
                   "containing \"nodal\" on stderr, found %d in \"%s\"", setting, lines, c.err);
        }
    }
}

/* NODAL_OPTIONS holds "name=value,name=value": every one of them applies. */
static void several_options_in_one_variable_all_apply(void)
{
    static struct nd_child c;
    long dflt[N_OPTIONS], got[N_OPTIONS];
    run_with(NULL, dflt, &c);
    size_t a = index_of("purge_delay"), b = index_of("verbose"), d = index_of("node_fallback");
    long want_a = alternative(&options[a], dflt[a]), want_b = alternative(&options[b], dflt[b]);
    char setting[160];
    snprintf(setting, sizeof setting, "purge_delay=%ld,verbose=%ld,node_fallback=preferred",
             want_a, want_b);
    run_with(setting, got, &c);
    EXPECT(got[a] == want_a && got[b] == want_b && got[d] != dflt[d],
           "NODAL_OPTIONS=\"%s\" to set all three (purge_delay %ld, verbose %ld, node_fallback "
           "changed), got %ld, %ld, %ld", setting, want_a, want_b, got[a], got[b], got[d]);
}

/* A NODAL_<NAME> variable wins over the same option in NODAL_OPTIONS. */
static void nodal_name_variables_win_over_nodal_options(void)
{
    static struct nd_child c;
    long dflt[N_OPTIONS], got[N_OPTIONS];
    run_with(NULL, dflt, &c);
    size_t a = index_of("purge_delay");
    long in_options = alternative(&options[a], dflt[a]);
    long in_variable = alternative(&options[a], in_options);
    if (in_variable == dflt[a] || in_variable == in_options)
        in_variable = dflt[a] + 2;
    char setting[64], extra[64];
    snprintf(setting, sizeof setting, "purge_delay=%ld", in_options);
    snprintf(extra, sizeof extra, "NODAL_PURGE_DELAY=%ld", in_variable);
    run_with_env(setting, extra, got, &c);
    EXPECT(got[a] == in_variable, "%s to win over NODAL_OPTIONS=\"%s\", got purge_delay %ld",
           extra, setting, got[a]);
}

/* Not a property: the child side of the cases above. Prints each option as
   "\nname=value" and leaves with _exit so no exit-time report mixes in. */
static void print_options(void)
{
    printf("\n");
    for (size_t i = 0; i < N_OPTIONS; i++)
        printf("%s=%ld\n", options[i].name, nodal_option_get(options[i].name));
    fflush(stdout);
    _exit(0);
}

static const struct nd_case cases[] = {
    ND_CASE(every_option_is_known),
    ND_CASE(every_option_accepts_valid_values),
    ND_CASE(invalid_option_values_warn_once_and_keep_the_default),
    ND_CASE(several_options_in_one_variable_all_apply),
    ND_CASE(nodal_name_variables_win_over_nodal_options),
    ND_CASE(print_options),
};
ND_MAIN(cases)
