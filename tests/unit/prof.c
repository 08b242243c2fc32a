/*
 * prof.c - unit tests of the heap profile's table of live samples
 * (src/thread/prof.h): a few live samples stay in the first table (one OS
 * page); a sample examines at most 8 slots of each table but the last, so
 * a crowded first table is not walked whole by every sample (with 64 or
 * more live samples, the first table full, each one read all 64 slots,
 * 64 cache lines, before going on); every sample recorded is found in its
 * slot, and a forgotten one leaves it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "page.h"
#include "prof.h"

#define FIRST 64u     /* slots of the first table (prof.c) */
#define WINDOW 8u     /* slots a sample examines in each table but the last */
#define SAMPLES 400

static nd_page pages[SAMPLES];

/* A fake sampled block's address: OS pages of a 4 GiB range, distinct, in
   a scrambled order (an odd multiply and a xor-shift of 20 bits, both
   one-to-one), so that their probe paths crowd some stretches of a table
   as real blocks' can (blocks at a steady stride spread evenly). */
static uintptr_t addr_of(int i)
{
    uint32_t x = ((uint32_t)i * 0x5bd1e995u) & 0xfffffu;
    x ^= x >> 7;
    return (uintptr_t)0x7f0000000000ull + (uintptr_t)x * 4096;
}

/* The first slot of block a's probe path in the first table: prof.c's
   nd_prof_slot_hash, the same multiply and shift. */
static unsigned home_of(uintptr_t a) { return (unsigned)(((uint64_t)a * 0x9e3779b97f4a7c15ull) >> 40) & (FIRST - 1); }

static void start(void)
{
    EXPECT(nd_prof_start(512 * 1024), "profiling to start");
    memset(pages, 0, sizeof pages);
}

static void record(int i)
{
    nd_prof_record((void *)addr_of(i), &pages[i], 64, 4096, 0, false);
    EXPECT(pages[i].sampled == 1, "sample %d to be recorded (dropped %lu)", i,
           (unsigned long)nd_prof_dropped());
    nd_prof_live v;
    EXPECT(nd_prof_live_copy(pages[i].prof_slot, &v) && v.addr == addr_of(i),
           "sample %d's slot %u to hold it", i, pages[i].prof_slot);
}

/* 16 live samples: all in the first table, whose slots lie on one OS page. */
static void a_few_live_samples_stay_in_the_first_table(void)
{
    start();
    for (int i = 0; i < 16; i++) {
        record(i);
        EXPECT(pages[i].prof_slot < FIRST, "sample %d of 16 to be in the first table, it is in slot %u", i,
               pages[i].prof_slot);
    }
}

/* 400 live samples: each takes the first free slot of the 8 its address
   starts at in the first table, or, when all 8 are taken, goes on to a
   later table, however many slots of the first are still free. */
static void a_sample_examines_eight_slots_of_a_crowded_table(void)
{
    start();
    bool taken[FIRST] = { false };
    int first = 0, on = 0, first_at_spill = -1;
    for (int i = 0; i < SAMPLES; i++) {
        unsigned home = home_of(addr_of(i)), want = FIRST;
        for (unsigned k = 0; k < WINDOW && want == FIRST; k++)
            if (!taken[(home + k) & (FIRST - 1)])
                want = (home + k) & (FIRST - 1);
        record(i);
        unsigned slot = pages[i].prof_slot;
        if (want < FIRST) {
            EXPECT(slot == want, "sample %d to take slot %u, the first free of the 8 from %u; it took %u", i, want,
                   home, slot);
            taken[slot] = true;
            first++;
        } else {
            EXPECT(slot >= FIRST, "sample %d, whose 8 slots from %u are taken, to go on to the next table; it "
                   "took slot %u of the first (%d of 64 taken)", i, home, slot, first);
            if (on++ == 0)
                first_at_spill = first;
        }
    }
    EXPECT(on > 0 && first_at_spill < (int)FIRST,
           "the first table to send a sample on before it is full: %d on, the first when it held %d", on,
           first_at_spill);
    EXPECT(nd_prof_dropped() == 0, "no sample to be dropped, %lu were", (unsigned long)nd_prof_dropped());
}

/* A forgotten sample leaves its slot, and the next sample there may take it. */
static void a_forgotten_sample_leaves_its_slot(void)
{
    start();
    for (int i = 0; i < 100; i++)
        record(i);
    int64_t live = nd_prof_live_bytes();
    for (int i = 0; i < 100; i += 2) {
        unsigned slot = pages[i].prof_slot;
        nd_prof_forget((void *)addr_of(i), &pages[i]);
        nd_prof_live v;
        EXPECT(pages[i].sampled == 0 && !nd_prof_live_copy(slot, &v), "sample %d's slot %u to be empty", i, slot);
    }
    EXPECT(nd_prof_live_bytes() < live, "the live estimate to fall");
    for (int i = 100; i < 200; i++)
        record(i);
}

static const struct nd_case cases[] = {
    ND_CASE(a_few_live_samples_stay_in_the_first_table),
    ND_CASE(a_sample_examines_eight_slots_of_a_crowded_table),
    ND_CASE(a_forgotten_sample_leaves_its_slot),
};
ND_MAIN(cases)
