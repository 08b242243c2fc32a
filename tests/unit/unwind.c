/*
 * unwind.c - unit tests of the heap profile's own unwinder
 * (src/os/unwind.c): from the unwind tables alone it finds the same return
 * addresses as libgcc's (glibc's backtrace()), through frames addressed
 * from rsp and from rbp (alloca), down to the outermost frame, the first
 * time (tables read) and the second (rules kept by return address); each CFA is
 * above the one before it; in a signal handler it stops at the signal
 * frame instead of misreading it.
 */
#include <alloca.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include "os.h"
#include "check.h"

#define MAXF 64

struct walk {
    uintptr_t ips[MAXF], cfas[MAXF];
    void *bt[MAXF];
    int n, nbt;
};

static volatile int sink;

/* Both walks from one frame: ours first (its ips[0] is the return address
   into this function), then backtrace() (its bt[0] is this function's own
   pc, bt[1] the return address into our caller; a sanitizer's backtrace()
   puts its own frames first). */
static __attribute__((noinline)) void walk_here(struct walk *w)
{
    w->n = nd_os_unwind_own(w->ips, w->cfas, MAXF);
    w->nbt = backtrace(w->bt, MAXF);
    sink++;
}

static __attribute__((noinline)) void with_alloca(struct walk *w, int depth)
{
    /* A frame addressed from rbp: its size is known only at run time. */
    volatile char *buf = alloca(64 + (size_t)depth * 48);
    buf[0] = (char)depth;
    if (depth > 0)
        with_alloca(w, depth - 1);
    else
        walk_here(w);
    sink += buf[0];
}

static __attribute__((noinline)) void plain(struct walk *w, int depth)
{
    if (depth > 0)
        plain(w, depth - 1);
    else
        with_alloca(w, 2);
    sink++;
}

/* Where backtrace()'s frames reach walk_here's caller: bt[k] == ips[1]. */
static int bt_start(const struct walk *w)
{
    for (int k = 1; k < w->nbt; k++)
        if ((uintptr_t)w->bt[k] == w->ips[1])
            return k;
    EXPECT(false, "backtrace() to find the return address into walk_here's caller 0x%lx", (unsigned long)w->ips[1]);
    return 0;
}

/* ours[1..] against backtrace's from there: the return addresses above
   walk_here's own frame. */
static void expect_same(const struct walk *w)
{
    EXPECT(w->n >= 8, "the own unwinder to find at least the 8 test frames, got %d", w->n);
    for (int i = 1; i < w->n; i++)
        EXPECT(w->cfas[i] > w->cfas[i - 1] && (w->cfas[i] & 7) == 0,
               "each CFA above the one before and 8-aligned: frame %d 0x%lx after 0x%lx", i,
               (unsigned long)w->cfas[i], (unsigned long)w->cfas[i - 1]);
    /* backtrace() may add the outermost frame's 0 or stop a frame later. */
    int nbt = w->nbt, k = bt_start(w);
    while (nbt > 0 && w->bt[nbt - 1] == NULL)
        nbt--;
    EXPECT(w->n - 1 == nbt - k, "as many frames as backtrace(): %d, backtrace %d", w->n - 1, nbt - k);
    for (int i = 1; i < w->n; i++)
        EXPECT((uintptr_t)w->bt[k + i - 1] == w->ips[i], "frame %d: 0x%lx, backtrace 0x%lx", i,
               (unsigned long)w->ips[i], (unsigned long)w->bt[k + i - 1]);
}

static void own_unwinder_finds_what_backtrace_finds(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
    struct walk w;
    memset(&w, 0, sizeof w);
    plain(&w, 3);
    expect_same(&w);
    /* Again: now from the rules it keeps by return address. */
    memset(&w, 0, sizeof w);
    plain(&w, 3);
    expect_same(&w);
}

static struct walk sig_walk;

static void handler(int sig)
{
    (void)sig;
    plain(&sig_walk, 1);
}

static void own_unwinder_stops_at_a_signal_frame(void)
{
    if (!nd_os_unwind_own_ok())
        SKIP("the own unwinder is x86-64 with glibc 2.35 or later only");
    memset(&sig_walk, 0, sizeof sig_walk);
    signal(SIGUSR1, handler);
    raise(SIGUSR1);
    const struct walk *w = &sig_walk;
    /* walk_here, 3 with_alloca, 2 plain, handler: then the signal frame. */
    int k = bt_start(w);
    EXPECT(w->n >= 7 && w->n - 1 < w->nbt - k, "a stack cut at the signal frame: %d frames, backtrace %d", w->n - 1,
           w->nbt - k);
    for (int i = 1; i < w->n; i++)
        EXPECT((uintptr_t)w->bt[k + i - 1] == w->ips[i], "frame %d: 0x%lx, backtrace 0x%lx", i,
               (unsigned long)w->ips[i], (unsigned long)w->bt[k + i - 1]);
}

static const struct nd_case cases[] = {
    ND_CASE(own_unwinder_finds_what_backtrace_finds),
    ND_CASE(own_unwinder_stops_at_a_signal_frame),
};
ND_MAIN(cases)
