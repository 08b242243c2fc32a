/*
 * tight.c - the cells of tight slabs (see tight.h): near an address-space
 * limit, blocks of a request rounded up to 256 bytes, many to a large
 * block.
 *
 * Locks: a node's tight lock (lock.h: tight) is held for no call that
 * takes another lock: a slab is made (nd_large_alloc, which may map, and
 * on a refusal sweeps the slabs) and given back (nd_large_free) with it
 * released.
 */
#include "tight.h"

#include "large.h"
#include "lock.h"
#include "page.h"
#include "topo.h"

/* Per node, the slabs with a free cell, by cell size (under the node's
   tight lock). */
static nd_tight_slab *nd_tight_lists[ND_MAX_NODES][ND_TIGHT_BUCKETS];
/* Per node and list, the cell size asked for last and how many times in a
   row (under the node's tight lock): a new slab is made only for a size
   asked for twice in a row at least, with as many cells as the size was
   asked for (tight.h). */
typedef struct nd_tight_seen {
    uint32_t cell;
    uint32_t times;
} nd_tight_seen;
static nd_tight_seen nd_tight_seens[ND_MAX_NODES][ND_TIGHT_BUCKETS];
/* Slabs that exist, over every node (atomic): the sweep's test. */
uint32_t nd_tight_count;

static inline nd_lock_t *nd_tight_lock(int node) { return ND_LOCK(tight, node); }

static nd_tight_slab **nd_tight_list(int node, size_t cell)
{
    return &nd_tight_lists[node][(cell / ND_TIGHT_GRAIN) % ND_TIGHT_BUCKETS];
}

static uint64_t nd_tight_full(const nd_tight_slab *sl)
{
    return sl->ncells >= 64 ? UINT64_MAX : ((uint64_t)1 << sl->ncells) - 1;
}

static uint8_t *nd_tight_cells(nd_tight_slab *sl) { return (uint8_t *)sl + ND_TIGHT_GRAIN; }

static void nd_tight_link(nd_tight_slab **head, nd_tight_slab *sl)
{
    sl->prev = NULL;
    sl->next = *head;
    if (*head != NULL)
        (*head)->prev = sl;
    *head = sl;
    sl->listed = 1;
}

static void nd_tight_unlink(nd_tight_slab **head, nd_tight_slab *sl)
{
    if (sl->prev != NULL)
        sl->prev->next = sl->next;
    else
        *head = sl->next;
    if (sl->next != NULL)
        sl->next->prev = sl->prev;
    sl->next = sl->prev = NULL;
    sl->listed = 0;
}

/* The descriptors of the chunks of large block `base`'s run: sampled set
   to `sampled`, prof_slot to the run's first chunk. */
static void nd_tight_tag(void *base, uint8_t sampled)
{
    nd_segment *s = nd_seg_base(base);
    nd_page *pg = nd_page_of(s, base);
    unsigned first = nd_seg_page_index(s, pg);
    for (unsigned i = first; i < first + pg->reserved; i++) {
        nd_seg_desc_touch(s, &s->pages[i]);
        s->pages[i].prof_slot = first;
        nd_store_release(&s->pages[i].sampled, sampled);
    }
}

/* A free cell of slab sl: its lowest, or under secure=1 a random one. */
static unsigned nd_tight_pick(nd_tight_slab *sl, bool sealed)
{
    uint64_t avail = ~sl->used & nd_tight_full(sl);
    if (sealed) {
        uint64_t x = sl->rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        sl->rng = x;
        unsigned r = (unsigned)(x % sl->ncells);
        uint64_t rot = (avail >> r) | (r != 0 ? avail << (64 - r) : 0);   /* free cells from r on, wrapped */
        return (r + (unsigned)__builtin_ctzll(rot)) % 64;
    }
    return (unsigned)__builtin_ctzll(avail);
}

/* Takes a free cell of sl (its list's head), which leaves the list when
   that was its last. Under the lock. */
static void *nd_tight_take(nd_tight_slab **head, nd_tight_slab *sl, bool sealed)
{
    unsigned i = nd_tight_pick(sl, sealed);
    sl->used |= (uint64_t)1 << i;
    sl->taken = 1;
    if (sl->used == nd_tight_full(sl))
        nd_tight_unlink(head, sl);
    uint8_t *p = nd_tight_cells(sl) + (size_t)i * sl->cell;
    if (sealed)
        nd_block_seal(p, sl->cell);
    return p;
}

void *nd_tight_alloc(int node, size_t cell, bool sealed, bool *no_room)
{
    *no_room = false;
    nd_lock_may_take(ND_LOCK_ID_tight);
    nd_tight_slab **head = nd_tight_list(node, cell);
    nd_tight_seen *seen = &nd_tight_seens[node][(cell / ND_TIGHT_GRAIN) % ND_TIGHT_BUCKETS];
    nd_lock(nd_tight_lock(node));
    if (seen->cell != cell) {
        seen->cell = (uint32_t)cell;
        seen->times = 0;
    }
    if (seen->times < ND_TIGHT_CELLS)
        seen->times++;
    unsigned n = 0;
    for (nd_tight_slab *sl = *head; sl != NULL && n < ND_TIGHT_SCAN; sl = sl->next, n++)
        if (sl->cell == cell) {
            if (sl != *head) {   /* to the front: the next malloc of its size finds it first */
                nd_tight_unlink(head, sl);
                nd_tight_link(head, sl);
            }
            void *p = nd_tight_take(head, sl, sealed);
            nd_unlock(nd_tight_lock(node));
            return p;
        }
    /* A new slab, for a size asked for twice in a row at least: as many
       cells as it was asked for, up to ND_TIGHT_SLAB_BYTES. */
    size_t cells = seen->times;
    nd_unlock(nd_tight_lock(node));
    if (cells < 2)
        return NULL;
    size_t most = (ND_TIGHT_SLAB_BYTES - ND_TIGHT_GRAIN) / cell;
    cells = cells > most ? most : cells;
    cells = cells < 2 ? 2 : cells;
    size_t bytes;
    nd_tight_slab *sl;
    /* Fewer cells when the pool has no room for that many (the limit's
       last blocks). */
    while ((sl = nd_large_alloc(node, false, ND_TIGHT_GRAIN + cells * cell, 0, &bytes)) == NULL)
        if ((cells /= 2) < 2) {
            *no_room = true;
            return NULL;
        }
    sl->cookie = (uintptr_t)sl ^ nd_seg_secret;
    sl->used = 0;
    sl->rng = (nd_block_canary_key[0] ^ (uintptr_t)sl) | 1;
    sl->cell = (uint32_t)cell;
    sl->ncells = (uint16_t)cells;
    sl->taken = 0;
    nd_add_relaxed(&nd_tight_count, 1);
    nd_lock(nd_tight_lock(node));
    nd_tight_tag(sl, ND_TIGHT_SLAB);
    nd_tight_link(head, sl);
    void *p = nd_tight_take(head, sl, sealed);
    nd_unlock(nd_tight_lock(node));
    return p;
}

/* The slab whose run holds chunk descriptor pg of s, or NULL (no longer a
   tight slab's chunk; *why: a header overwritten). Under the lock. */
static nd_tight_slab *nd_tight_slab_of(nd_segment *s, const nd_page *pg, int *why)
{
    *why = ND_TIGHT_NOT_START;
    uint32_t first = pg->prof_slot;
    if (nd_load_relaxed(&pg->sampled) != ND_TIGHT_SLAB || first >= s->page_count)
        return NULL;
    const nd_page *start = &s->pages[first];
    if (!nd_load_relaxed(&start->in_use) || nd_load_relaxed(&start->sampled) != ND_TIGHT_SLAB)
        return NULL;
    nd_tight_slab *sl = (nd_tight_slab *)start->start;
    if (sl->cookie != ((uintptr_t)sl ^ nd_seg_secret)) {
        *why = ND_TIGHT_CORRUPT;
        return NULL;
    }
    return sl;
}

/* The index of p's cell in slab sl when p starts a live one, else -1 with
   *why set. Under the lock. */
static int nd_tight_find(nd_tight_slab *sl, const void *p, int *why)
{
    uintptr_t off = (uintptr_t)p - (uintptr_t)nd_tight_cells(sl);
    if ((uintptr_t)p < (uintptr_t)nd_tight_cells(sl) || off >= (uintptr_t)sl->ncells * sl->cell ||
        off % sl->cell != 0) {
        *why = ND_TIGHT_NOT_START;
        return -1;
    }
    unsigned i = (unsigned)(off / sl->cell);
    if (!((sl->used >> i) & 1)) {
        *why = ND_TIGHT_NOT_LIVE;
        return -1;
    }
    return (int)i;
}

size_t nd_tight_free(nd_segment *s, const nd_page *pg, void *p, bool sealed, int *why, size_t *cell)
{
    nd_lock_may_take(ND_LOCK_ID_tight);
    int node = s->node;
    *cell = 0;
    nd_lock(nd_tight_lock(node));
    nd_tight_slab *sl = nd_tight_slab_of(s, pg, why);
    int i = sl != NULL ? nd_tight_find(sl, p, why) : -1;
    if (i >= 0) {
        *cell = sl->cell;
        if (sealed && !nd_block_is_sealed(p, sl->cell)) {
            *why = ND_TIGHT_OVERFLOW;
            i = -1;
        }
    }
    if (i >= 0) {
        if (!sl->listed)
            nd_tight_link(nd_tight_list(node, sl->cell), sl);
        sl->used &= ~((uint64_t)1 << i);
    }
    nd_unlock(nd_tight_lock(node));
    return i >= 0 ? *cell : 0;
}

size_t nd_tight_cell_size(nd_segment *s, const nd_page *pg, const void *p)
{
    nd_lock_may_take(ND_LOCK_ID_tight);
    int why;
    nd_lock(nd_tight_lock(s->node));
    nd_tight_slab *sl = nd_tight_slab_of(s, pg, &why);
    size_t bytes = sl != NULL && nd_tight_find(sl, p, &why) >= 0 ? sl->cell : 0;
    nd_unlock(nd_tight_lock(s->node));
    return bytes;
}

/* Unlinks the empty slabs of list *head (those not taken from since the
   last sweep, or all when force) onto *gone. Under the lock. */
static void nd_tight_sweep_list(nd_tight_slab **head, bool force, nd_tight_slab **gone)
{
    nd_tight_slab *next;
    for (nd_tight_slab *sl = *head; sl != NULL; sl = next) {
        next = sl->next;
        if (sl->used == 0 && (force || !sl->taken)) {
            nd_tight_unlink(head, sl);
            nd_tight_tag(sl, 0);
            sl->cookie = 0;
            sl->next = *gone;
            *gone = sl;
        } else {
            sl->taken = 0;
        }
    }
}

void nd_tight_sweep_slow(bool force)
{
    nd_lock_may_take(ND_LOCK_ID_tight);
    for (int n = 0; n < nd_topo.mem_count; n++) {
        int node = nd_topo.mem_ids[n];
        nd_tight_slab *gone = NULL;
        nd_lock(nd_tight_lock(node));
        for (unsigned b = 0; b < ND_TIGHT_BUCKETS; b++)
            nd_tight_sweep_list(&nd_tight_lists[node][b], force, &gone);
        nd_unlock(nd_tight_lock(node));
        while (gone != NULL) {
            nd_tight_slab *sl = gone;
            gone = sl->next;
            nd_sub_relaxed(&nd_tight_count, 1);
            nd_segment *s = nd_seg_base(sl);
            nd_large_free(s, nd_page_of(s, sl), sl);
        }
    }
}

bool nd_tight_is_valid(void)
{
    bool ok = true;
    for (int n = 0; n < nd_topo.mem_count && ok; n++) {
        int node = nd_topo.mem_ids[n];
        nd_lock(nd_tight_lock(node));
        for (unsigned b = 0; b < ND_TIGHT_BUCKETS && ok; b++) {
            const nd_tight_slab *prev = NULL;
            for (nd_tight_slab *sl = nd_tight_lists[node][b]; sl != NULL && ok; prev = sl, sl = sl->next) {
                nd_segment *s = nd_seg_base(sl);
                const nd_page *pg = nd_page_of(s, sl);
                ok = sl->prev == prev && sl->listed && sl->cookie == ((uintptr_t)sl ^ nd_seg_secret) &&
                     s->kind == ND_SEG_LARGE && !s->bound && s->node == node && nd_load_relaxed(&pg->in_use) &&
                     pg->start == (uint8_t *)sl && sl->cell % ND_TIGHT_GRAIN == 0 && sl->cell > ND_TIGHT_MIN &&
                     (sl->cell / ND_TIGHT_GRAIN) % ND_TIGHT_BUCKETS == b && sl->ncells >= 1 &&
                     sl->ncells <= ND_TIGHT_CELLS &&
                     ND_TIGHT_GRAIN + (size_t)sl->ncells * sl->cell <= pg->block_size &&
                     (sl->used & ~nd_tight_full(sl)) == 0 && sl->used != nd_tight_full(sl);
                unsigned first = nd_seg_page_index(s, pg);
                for (unsigned i = first; ok && i < first + pg->reserved; i++)
                    ok = s->pages[i].sampled == ND_TIGHT_SLAB && s->pages[i].prof_slot == first;
            }
        }
        nd_unlock(nd_tight_lock(node));
    }
    return ok;
}
