/*
 * unwind.c - the heap profile's own stack unwinder (x86-64, glibc 2.35 and
 * later): the call stack from the unwind tables every object carries
 * (.eh_frame, found through .eh_frame_hdr), without libgcc.
 *
 * Owns: nothing but code; it reads the loaded objects' unwind tables and
 * the calling thread's stack.
 *
 * Why: libgcc's unwinder (what glibc's backtrace() loads) costs a process
 * about 0.3 MB resident that the profile would otherwise not touch
 * (libgcc_s itself, the loader code that opens it and the parts of libc it
 * runs), more than the rest of the profile. The tables are the same ones
 * libgcc reads; this reader understands the subset compilers emit for
 * ordinary x86-64 functions:
 *
 *   - the frame's CFA is rsp + offset or rbp + offset (DW_CFA_def_cfa*);
 *   - the return address is at CFA - 8 (register 16 at offset -8), or
 *     undefined in the outermost frame (_start, clone), which ends the walk;
 *   - rbp is the same as in the callee or saved at CFA + offset.
 *
 * Anything else (a CFA or register given by a DWARF expression, as in the
 * signal return trampoline; an encoding it does not know; no table for an
 * address) ends the walk there: the stack is cut short, never misread.
 * Each frame's CFA must be above the previous one and 8-aligned. The object
 * of an address comes from _dl_find_object, which takes no lock and is
 * async-signal-safe, so this runs inside malloc and in signal handlers.
 */
#define _GNU_SOURCE
/* Small rather than fast: it runs only where the memo of stacks misses. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("Os")
#endif
#include "os.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(DLFO_EH_SEGMENT_TYPE)
#define ND_OWN_UNWIND 1
#else
#define ND_OWN_UNWIND 0
#endif

#if ND_OWN_UNWIND

/* DWARF pointer encodings (DW_EH_PE_*) this reader takes. */
#define PE_OMIT    0xff
#define PE_ABSPTR  0x00
#define PE_ULEB    0x01
#define PE_UDATA2  0x02
#define PE_UDATA4  0x03
#define PE_UDATA8  0x04
#define PE_SLEB    0x09
#define PE_SDATA2  0x0a
#define PE_SDATA4  0x0b
#define PE_SDATA8  0x0c
#define PE_PCREL   0x10
#define PE_DATAREL 0x30

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA  16

/* A cursor over unwind-table bytes; ok turns false on anything unknown or
   past end. */
typedef struct nd_uw_cur {
    const uint8_t *p, *end;
    bool ok;
} nd_uw_cur;

static nd_noinline uint64_t nd_uw_uleb(nd_uw_cur *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; c->p < c->end && shift < 64; shift += 7) {
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->ok = false;
    return 0;
}

static nd_noinline int64_t nd_uw_sleb(nd_uw_cur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (; c->p < c->end && shift < 64;) {
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= ~(uint64_t)0 << shift;
            return (int64_t)v;
        }
    }
    c->ok = false;
    return 0;
}

static nd_noinline uint64_t nd_uw_fixed(nd_uw_cur *c, size_t n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->ok = false;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, n);   /* little-endian */
    c->p += n;
    return v;
}

/* A pointer in encoding enc; datarel is relative to `data` (.eh_frame_hdr). */
static nd_noinline uintptr_t nd_uw_ptr(nd_uw_cur *c, uint8_t enc, uintptr_t data)
{
    uintptr_t at = (uintptr_t)c->p, v;
    switch (enc & 0x0f) {
    case PE_ABSPTR: v = (uintptr_t)nd_uw_fixed(c, 8); break;
    case PE_ULEB:   v = (uintptr_t)nd_uw_uleb(c); break;
    case PE_UDATA2: v = (uintptr_t)nd_uw_fixed(c, 2); break;
    case PE_UDATA4: v = (uintptr_t)nd_uw_fixed(c, 4); break;
    case PE_UDATA8: case PE_SDATA8: v = (uintptr_t)nd_uw_fixed(c, 8); break;
    case PE_SLEB:   v = (uintptr_t)nd_uw_sleb(c); break;
    case PE_SDATA2: v = (uintptr_t)(int64_t)(int16_t)nd_uw_fixed(c, 2); break;
    case PE_SDATA4: v = (uintptr_t)(int64_t)(int32_t)nd_uw_fixed(c, 4); break;
    default: c->ok = false; return 0;
    }
    switch (enc & 0x70) {
    case 0: break;
    case PE_PCREL: v += at; break;
    case PE_DATAREL: v += data; break;
    default: c->ok = false; return 0;
    }
    return v;
}

/* The rules of one frame at one address: what the walk needs of them. */
typedef struct nd_uw_rules {
    uint8_t cfa_reg;      /* REG_RSP or REG_RBP; anything else is unusable */
    int64_t cfa_off;
    uint8_t rbp_how;      /* 0 same value, 1 saved at CFA + rbp_off, 2 unusable */
    int64_t rbp_off;
    uint8_t ra_how;       /* 1 at CFA + ra_off, 2 unusable, 3 undefined (outermost) */
    int64_t ra_off;
} nd_uw_rules;

#define ND_UW_STATES 8    /* DW_CFA_remember_state depth */

/* Sets the rule of register reg: how 1 (at CFA + off), 0 (same), 2, 3. */
static nd_noinline void nd_uw_set(nd_uw_rules *r, uint64_t reg, uint8_t how, int64_t off)
{
    if (reg == REG_RBP) {
        r->rbp_how = how == 3 ? 2 : how;
        r->rbp_off = off;
    } else if (reg == REG_RA) {
        r->ra_how = how == 0 ? 2 : how;
        r->ra_off = off;
    }
}

/* Runs CFA instructions [c) for addresses up to target (pc advancing from
   *loc; target = UINTPTR_MAX runs them all); init: the rules after the
   CIE's instructions (DW_CFA_restore). False on anything unknown. */
static bool nd_uw_run(nd_uw_cur *c, uintptr_t *loc, uintptr_t target, uint64_t caf, int64_t daf,
                      uint8_t fde_enc, nd_uw_rules *r, const nd_uw_rules *init)
{
    nd_uw_rules saved[ND_UW_STATES];
    unsigned depth = 0;
    while (c->ok && c->p < c->end) {
        uint8_t op = *c->p++, low = op & 0x3f;
        uint64_t reg, adv = UINT64_MAX;
        switch (op >> 6) {
        case 1: adv = low * caf; break;
        case 2: nd_uw_set(r, low, 1, (int64_t)nd_uw_uleb(c) * daf); continue;
        case 3:
            if (init == NULL)
                return false;
            if (low == REG_RBP) { r->rbp_how = init->rbp_how; r->rbp_off = init->rbp_off; }
            if (low == REG_RA) { r->ra_how = init->ra_how; r->ra_off = init->ra_off; }
            continue;
        default: break;
        }
        if (adv == UINT64_MAX) {
            switch (op) {
            case 0x00: break;                                            /* nop */
            case 0x01: {                                                 /* set_loc */
                uintptr_t to = nd_uw_ptr(c, fde_enc, 0);
                if (to > target)
                    return true;
                *loc = to;
                break;
            }
            case 0x02: adv = nd_uw_fixed(c, 1) * caf; break;             /* advance_loc1 */
            case 0x03: adv = nd_uw_fixed(c, 2) * caf; break;             /* advance_loc2 */
            case 0x04: adv = nd_uw_fixed(c, 4) * caf; break;             /* advance_loc4 */
            case 0x05: reg = nd_uw_uleb(c); nd_uw_set(r, reg, 1, (int64_t)nd_uw_uleb(c) * daf); break;
            case 0x06:                                                   /* restore_extended */
                reg = nd_uw_uleb(c);
                if (init == NULL)
                    return false;
                if (reg == REG_RBP) { r->rbp_how = init->rbp_how; r->rbp_off = init->rbp_off; }
                if (reg == REG_RA) { r->ra_how = init->ra_how; r->ra_off = init->ra_off; }
                break;
            case 0x07: nd_uw_set(r, nd_uw_uleb(c), 3, 0); break;         /* undefined */
            case 0x08: nd_uw_set(r, nd_uw_uleb(c), 0, 0); break;         /* same_value */
            case 0x09: reg = nd_uw_uleb(c); nd_uw_uleb(c); nd_uw_set(r, reg, 2, 0); break;   /* register */
            case 0x0a:                                                   /* remember_state */
                if (depth == ND_UW_STATES)
                    return false;
                saved[depth++] = *r;
                break;
            case 0x0b:                                                   /* restore_state */
                if (depth == 0)
                    return false;
                *r = saved[--depth];
                break;
            case 0x0c: r->cfa_reg = (uint8_t)nd_uw_uleb(c); r->cfa_off = (int64_t)nd_uw_uleb(c); break;
            case 0x0d: r->cfa_reg = (uint8_t)nd_uw_uleb(c); break;
            case 0x0e: r->cfa_off = (int64_t)nd_uw_uleb(c); break;
            case 0x0f: r->cfa_reg = 0xff; c->p += nd_uw_uleb(c); break;  /* def_cfa_expression */
            case 0x10: case 0x16:                                        /* (val_)expression */
                reg = nd_uw_uleb(c);
                nd_uw_set(r, reg, 2, 0);
                c->p += nd_uw_uleb(c);
                break;
            case 0x11: reg = nd_uw_uleb(c); nd_uw_set(r, reg, 1, nd_uw_sleb(c) * daf); break;
            case 0x12: r->cfa_reg = (uint8_t)nd_uw_uleb(c); r->cfa_off = nd_uw_sleb(c) * daf; break;
            case 0x13: r->cfa_off = nd_uw_sleb(c) * daf; break;
            case 0x14: reg = nd_uw_uleb(c); nd_uw_uleb(c); nd_uw_set(r, reg, 2, 0); break;   /* val_offset */
            case 0x15: reg = nd_uw_uleb(c); nd_uw_sleb(c); nd_uw_set(r, reg, 2, 0); break;
            case 0x2e: nd_uw_uleb(c); break;                             /* GNU_args_size */
            case 0x2f: reg = nd_uw_uleb(c); nd_uw_set(r, reg, 1, -(int64_t)nd_uw_uleb(c) * daf); break;
            default: return false;
            }
            if (c->p > c->end)
                return false;
        }
        if (adv != UINT64_MAX) {
            if (*loc + adv > target)
                return true;   /* the rules at target are these */
            *loc += adv;
        }
    }
    return c->ok;
}

/* The rules of the frame executing at pc (for a return address, pc is the
   call instruction: the address minus one). False when there are none this
   reader can use. */
static bool nd_uw_rules_at(uintptr_t pc, nd_uw_rules *out)
{
    struct dl_find_object fo;
    if (_dl_find_object((void *)pc, &fo) != 0 || fo.dlfo_eh_frame == NULL)
        return false;
    /* .eh_frame_hdr: version 1, the encodings, then a table of
       (initial address, FDE) sorted by address, both datarel sdata4. */
    const uint8_t *hdr = fo.dlfo_eh_frame;
    if (hdr[0] != 1 || hdr[3] != (PE_DATAREL | PE_SDATA4))
        return false;
    nd_uw_cur c = { hdr + 4, hdr + 4 + 16, true };
    nd_uw_ptr(&c, hdr[1], (uintptr_t)hdr);                       /* .eh_frame itself: not needed */
    uint64_t count = nd_uw_ptr(&c, hdr[2], (uintptr_t)hdr);
    if (!c.ok || hdr[2] == PE_OMIT || count == 0)
        return false;
    const int32_t *tab = (const int32_t *)(const void *)c.p;
    uint64_t lo = 0, hi = count;   /* the last entry whose address is <= pc */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)hdr + (intptr_t)tab[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if ((uintptr_t)hdr + (intptr_t)tab[2 * lo] > pc)
        return false;
    const uint8_t *fde = hdr + (intptr_t)tab[2 * lo + 1];

    /* The FDE: length, CIE pointer, its address range, instructions. */
    uint32_t flen, cie_off;
    memcpy(&flen, fde, 4);
    memcpy(&cie_off, fde + 4, 4);
    if (flen == 0 || flen == 0xffffffffu || cie_off == 0)
        return false;
    const uint8_t *cie = fde + 4 - cie_off, *fde_end = fde + 4 + flen;
    uint32_t clen, cid;
    memcpy(&clen, cie, 4);
    memcpy(&cid, cie + 4, 4);
    if (clen == 0 || clen == 0xffffffffu || cid != 0)
        return false;
    nd_uw_cur cc = { cie + 8, cie + 4 + clen, true };
    uint8_t version = (uint8_t)nd_uw_fixed(&cc, 1);
    const char *aug = (const char *)cc.p;
    size_t auglen = strnlen(aug, (size_t)(cc.end - cc.p));
    cc.p += auglen + 1;
    if ((version != 1 && version != 3) || aug[0] != 'z' || cc.p > cc.end)
        return false;   /* no augmentation data: not what compilers emit for .eh_frame */
    uint64_t caf = nd_uw_uleb(&cc);
    int64_t daf = nd_uw_sleb(&cc);
    uint64_t ra = version == 1 ? nd_uw_fixed(&cc, 1) : nd_uw_uleb(&cc);
    uint64_t adlen = nd_uw_uleb(&cc);
    const uint8_t *ad = cc.p, *ad_end = cc.p + adlen;
    uint8_t fde_enc = PE_ABSPTR;
    nd_uw_cur ac = { ad, ad_end, true };
    for (size_t i = 1; i < auglen && ac.ok; i++) {
        if (aug[i] == 'R')
            fde_enc = (uint8_t)nd_uw_fixed(&ac, 1);
        else if (aug[i] == 'L')
            nd_uw_fixed(&ac, 1);
        else if (aug[i] == 'P') {
            uint8_t penc = (uint8_t)nd_uw_fixed(&ac, 1);
            nd_uw_ptr(&ac, penc & 0x7f, 0);
        } else if (aug[i] != 'S')
            return false;   /* S: a signal frame's; its rules are read as any */
    }
    if (!cc.ok || !ac.ok || ra != REG_RA || ad_end > cc.end)
        return false;
    cc.p = ad_end;

    nd_uw_cur fc = { fde + 8, fde_end, true };
    uintptr_t begin = nd_uw_ptr(&fc, fde_enc, 0);
    uintptr_t range = nd_uw_ptr(&fc, fde_enc & 0x0f, 0);
    uint64_t fadlen = nd_uw_uleb(&fc);
    fc.p += fadlen;
    if (!fc.ok || fc.p > fc.end || pc < begin || pc - begin >= range)
        return false;

    nd_uw_rules r = { .cfa_reg = 0xff, .rbp_how = 0, .ra_how = 2 };
    uintptr_t loc = begin;
    if (!nd_uw_run(&cc, &loc, UINTPTR_MAX, caf, daf, fde_enc, &r, NULL))
        return false;
    nd_uw_rules init = r;
    loc = begin;
    if (!nd_uw_run(&fc, &loc, pc, caf, daf, fde_enc, &r, &init))
        return false;
    *out = r;
    return true;
}

__attribute__((no_sanitize("address")))
int nd_os_unwind_own(uintptr_t *ips, uintptr_t *cfas, int max)
{
    /* This frame: its CFA, the return address into the caller below it,
       the caller's rbp saved at its frame address. */
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    uintptr_t cfa = fp + 2 * sizeof(uintptr_t);
    uintptr_t pc = (uintptr_t)__builtin_return_address(0);
    uintptr_t rbp = *(const uintptr_t *)fp;
    int n = 0;
    while (n < max && pc != 0) {
        ips[n] = pc;
        cfas[n] = cfa;
        n++;
        nd_uw_rules r;
        if (!nd_uw_rules_at(pc - 1, &r) || r.ra_how != 1)
            break;   /* no rules, or the outermost frame (its return address undefined) */
        uintptr_t base = r.cfa_reg == REG_RSP ? cfa : r.cfa_reg == REG_RBP ? rbp : 0;
        if (base == 0 || r.rbp_how == 2)
            break;
        uintptr_t next = base + (uintptr_t)r.cfa_off;
        if (next <= cfa || (next & 7) != 0)
            break;   /* a stack grows down: the caller's frame is above */
        uintptr_t ra_at = next + (uintptr_t)r.ra_off;
        if (r.rbp_how == 1)
            rbp = *(const uintptr_t *)(next + (uintptr_t)r.rbp_off);
        pc = *(const uintptr_t *)ra_at;
        cfa = next;
    }
    return n;
}

bool nd_os_unwind_own_ok(void) { return true; }

#else

int nd_os_unwind_own(uintptr_t *ips, uintptr_t *cfas, int max)
{
    (void)ips;
    (void)cfas;
    (void)max;
    return -1;
}

bool nd_os_unwind_own_ok(void) { return false; }

#endif
