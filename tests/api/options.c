/*
 * options.c - NODAL_OPTIONS: every option is known and parses its valid
 * values; an invalid value prints one warning line naming nodal on stderr and
 * leaves the option at its default. Each setting is tried in a fresh process
 * (this program re-executed with NODAL_OPTIONS set), since options are read
 * once at start-up.
 *
 * OPTIONS-TABLE: the option names and the values tried are in `options`
 * below; adjust them there when the option table in src/support/options.c settles.
 */

#include "check.h"
#include "nodal.h"
#include "proc.h"

enum kind {
    BOOL,     /* 0 / 1 */
    LEVEL,    /* small integer, 0 = off */
    NUMBER,   /* a count, a size or a delay */
    WORD,     /* one of two words; the first is the default */
    TEXT,     /* a file name; nodal_option_get says 1 when set, 0 when not */
};

struct option {
    const char *name;
    enum kind kind;
    const char *words[2];        /* WORD only */
};

static const struct option options[] = {
    { "stats",          BOOL,   { 0 } },
    { "stats_file",     TEXT,   { 0 } },
    { "verbose",        LEVEL,  { 0 } },
    { "check",          LEVEL,  { 0 } },
    { "purge_delay",    NUMBER, { 0 } },
    { "tcache_max",     NUMBER, { 0 } },
    { "tcache_count",   NUMBER, { 0 } },
    { "tcache_bytes",   NUMBER, { 0 } },
    { "node_fallback",  WORD,   { "strict", "preferred" } },
    { "huge_pages",     BOOL,   { 0 } },
    { "cache_segments", NUMBER, { 0 } },
    { "reclaim_on_free", BOOL,  { 0 } },
    { "secure",         LEVEL,  { 0 } },
};
#define N_OPTIONS (sizeof options / sizeof options[0])

/* Values no option of the kind may accept. */
static const char *const invalid_values[][3] = {
    [BOOL]   = { "banana", "maybe", NULL },
    [LEVEL]  = { "banana", "1x", NULL },
    [NUMBER] = { "banana", "12abc", "-5" },
    [WORD]   = { "banana", "strictly", "" },
    [TEXT]   = { "/tmp/nodal.%d", "", "/tmp/100%" },
};

/* Runs this program's print_options case with NODAL_OPTIONS = setting (and
   one more variable `extra`, "NAME=value", if not NULL) and reads back every
   option's value. */
static void run_with_env(const char *setting, const char *extra, long values[N_OPTIONS],
                         struct nd_child *c)
{
    nd_run_case("print_options", setting, extra, 30, c);
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
        if (o->kind == TEXT) {
            snprintf(setting, sizeof setting, "%s=/tmp/nodal-stats.%%p", o->name);
            run_with(setting, got, &c);
            EXPECT(dflt[i] == 0 && got[i] == 1, "NODAL_OPTIONS=\"%s\" to set %s (0 unset, 1 set), "
                   "got %ld (default %ld)", setting, o->name, got[i], dflt[i]);
            continue;
        }
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

/* What a warning line must contain for one bad setting. */
struct warning_case {
    const char *options;         /* NODAL_OPTIONS, or NULL */
    const char *extra;           /* one more NAME=value variable, or NULL */
    const char *want[3];         /* pieces of the one warning line */
};

static void expect_one_warning(const struct warning_case *w)
{
    static struct nd_child c;
    long got[N_OPTIONS];
    run_with_env(w->options, w->extra, got, &c);
    const char *what = w->options ? w->options : w->extra;
    int lines = nd_count_lines_with(c.err, "nodal:");
    EXPECT(lines == 1, "\"%s\" to give exactly one warning line, got %d in \"%s\"", what, lines, c.err);
    for (int k = 0; k < 3 && w->want[k]; k++)
        EXPECT(strstr(c.err, w->want[k]) != NULL, "the warning for \"%s\" to contain \"%s\", got \"%s\"",
               what, w->want[k], c.err);
}

/* An invalid value's warning says which option, where the setting came
   from, what is valid (the range, or the names of a choice) and which
   default is kept, by name for a choice. */
static void invalid_value_warning_names_source_valid_values_and_default(void)
{
    static const struct warning_case cases[] = {
        { "tcache_max=1g", NULL, { "invalid value '1g' for tcache_max (from NODAL_OPTIONS)",
                                   "valid: 0..128k", "using the default 128k" } },
        { NULL, "NODAL_TCACHE_MAX=1g", { "(from NODAL_TCACHE_MAX)", "valid: 0..128k", "128k" } },
        { "tcache_count=lots", NULL, { "not a number", "valid: 0..65536", "using the default 2048" } },
        { "node_fallback=loose", NULL, { "for node_fallback (from NODAL_OPTIONS)",
                                         "valid: strict, preferred", "using the default strict" } },
        { "stats=xml", NULL, { "valid: off, text, json", "using the default off", NULL } },
        { "huge_pages=maybe", NULL, { "valid: 0..1", "yes/no", NULL } },
        { "stats_file=/tmp/x.%d", NULL, { "for stats_file", "%p", NULL } },
        { "tcache_count", NULL, { "option tcache_count (from NODAL_OPTIONS) needs a value",
                                  "valid: 0..65536", NULL } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_one_warning(&cases[i]);
}

/* An unknown name is ignored with one line that names the closest option
   (dashes for underscores, missing or swapped letters), or lists them all
   when none is close. */
static void unknown_option_warning_suggests_the_closest_name(void)
{
    static const struct warning_case cases[] = {
        { "tcache-count=256", NULL, { "unknown option 'tcache-count' (from NODAL_OPTIONS) is ignored",
                                      "did you mean tcache_count?", NULL } },
        { "tcache_cnt=5", NULL, { "did you mean tcache_count?", NULL, NULL } },
        { "purge_dealy=0", NULL, { "did you mean purge_delay?", NULL, NULL } },
        { "hugepages", NULL, { "did you mean huge_pages?", NULL, NULL } },
        { "colour=blue", NULL, { "the options are stats, stats_file, verbose", "reclaim_on_free", NULL } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_one_warning(&cases[i]);
}

/* verbose=1 prints every option, a choice by its name, with where its value
   came from. */
static void verbose_prints_every_option_by_name_with_its_source(void)
{
    static struct nd_child c;
    long got[N_OPTIONS];
    run_with_env("verbose=1,node_fallback=preferred,stats_file=/tmp/x.%p", "NODAL_PURGE_DELAY=7",
                 got, &c);
    static const char *const want[] = {
        "nodal: option node_fallback = preferred (from NODAL_OPTIONS)\n",
        "nodal: option stats = off (default)\n",
        "nodal: option stats_file = /tmp/x.%p (from NODAL_OPTIONS)\n",
        "nodal: option purge_delay = 7 (from NODAL_PURGE_DELAY)\n",
        "nodal: option verbose = 1 (from NODAL_OPTIONS)\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        EXPECT(strstr(c.err, want[i]) != NULL, "verbose=1 to print \"%.*s\", got \"%s\"",
               (int)strlen(want[i]) - 1, want[i], c.err);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char key[64];
        snprintf(key, sizeof key, "nodal: option %s = ", options[i].name);
        EXPECT(nd_count_lines_with(c.err, key) == 1, "verbose=1 to print one line \"%s...\", got \"%s\"",
               key, c.err);
    }
}

/* The spellings the option documentation promises (ND_OPT_SPELLINGS). */
static void documented_spellings_are_accepted(void)
{
    static const struct { const char *setting, *name; long want; } cases[] = {
        { "stats=yes", "stats", 1 },          { "stats=json", "stats", 2 },
        { "stats=2", "stats", 2 },            { "stats", "stats", 1 },
        { "huge_pages", "huge_pages", 1 },    { "Huge_Pages=On", "huge_pages", 1 },
        { "reclaim_on_free=off", "reclaim_on_free", 0 }, { "check=no", "check", 0 },
        { "verbose=true", "verbose", 1 },     { "tcache_max=64k", "tcache_max", 65536 },
        { "tcache_bytes=1m", "tcache_bytes", 1048576 }, { "tcache_bytes=1g", "tcache_bytes", 1L << 30 },
        { "node_fallback=PREFERRED", "node_fallback", 1 }, { "node_fallback=1", "node_fallback", 1 },
        { "secure", "secure", 1 },            { "secure=2", "secure", 2 },
        { "check", "check", 1 },
    };
    static struct nd_child c;
    long got[N_OPTIONS];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_with(cases[i].setting, got, &c);
        size_t k = index_of(cases[i].name);
        EXPECT(got[k] == cases[i].want, "NODAL_OPTIONS=\"%s\" to set %s to %ld, got %ld",
               cases[i].setting, cases[i].name, cases[i].want, got[k]);
        EXPECT(strstr(c.err, "invalid") == NULL && strstr(c.err, "unknown") == NULL &&
               strstr(c.err, "needs a value") == NULL,
               "NODAL_OPTIONS=\"%s\" to be accepted silently, got \"%s\"", cases[i].setting, c.err);
    }
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
    ND_CASE(invalid_value_warning_names_source_valid_values_and_default),
    ND_CASE(unknown_option_warning_suggests_the_closest_name),
    ND_CASE(verbose_prints_every_option_by_name_with_its_source),
    ND_CASE(documented_spellings_are_accepted),
    ND_CASE(print_options),
};
ND_MAIN(cases)
