/*
 * meta.c - the metadata allocator (see meta.h). One lock (ND_LOCK(meta, 0),
 * the last row of lock.h's table), taken only when a thread starts or ends,
 * or a heap is created: never on an allocation fast path.
 */
#include "meta.h"

#include <stdbool.h>
#include <string.h>
#include "atomic.h"
#include "lock.h"
#include "os.h"

#define ND_META_CHUNK   (1 * ND_MiB)
#define ND_META_CLASSES 16

typedef struct nd_meta_free_obj { struct nd_meta_free_obj *next; } nd_meta_free_obj;

/* Free lists keyed by exact (rounded) size; sizes in use are few (tld, heap). */
static struct { size_t size; nd_meta_free_obj *head; } nd_meta_lists[ND_META_CLASSES];
static char  *nd_meta_bump, *nd_meta_end;
static size_t nd_meta_total;

/* A new mapping of metadata opts out of transparent huge pages where the
   kernel gives them unasked (segment.h: nd_seg_thp_opt_out): a thread's
   cache writes a page or two of its own, not 2 MiB around them. */
static void nd_meta_thp_opt_out(void *p, size_t size)
{
    if (p != NULL && nd_os_thp_always())
        (void)nd_os_advise_nohugepage(p, size);
}

static size_t nd_meta_round(size_t size) { return (size + ND_CACHE_LINE - 1) & ~(size_t)(ND_CACHE_LINE - 1); }

nd_hot void *nd_meta_alloc(size_t size)
{
    return nd_meta_alloc_head(size, size);
}

/* The allocation; `touch`: a fresh object's zeroed head is written page
   by page (below), else left as the mapping's untouched zero pages. */
static nd_hot void *nd_meta_take(size_t size, size_t zero, bool touch)
{
    nd_lock_may_take(ND_LOCK_ID_meta);
    size = nd_meta_round(size);
    void *p = NULL;
    nd_lock(ND_LOCK(meta, 0));
    for (int i = 0; i < ND_META_CLASSES; i++) {
        if (nd_meta_lists[i].size == size && nd_meta_lists[i].head != NULL) {
            nd_meta_free_obj *o = nd_meta_lists[i].head;
            nd_meta_lists[i].head = o->next;
            p = o;
            break;
        }
    }
    if (p == NULL) {
        if (size > ND_META_CHUNK / 4) {
            /* Big objects get their own mapping (never returned). */
            p = nd_os_map_aligned((size + 4095) & ~(size_t)4095, ND_CACHE_LINE);
            nd_meta_thp_opt_out(p, (size + 4095) & ~(size_t)4095);
            if (p != NULL)
                nd_add_relaxed(&nd_meta_total, (size + 4095) & ~(size_t)4095);
        } else {
            if (nd_meta_bump == NULL || (size_t)(nd_meta_end - nd_meta_bump) < size) {
                /* A chunk; when address space is short (RLIMIT_AS), half
                   of one and so on, down to the object's own pages, so
                   that a thread can still start. */
                size_t least = (size + 4095) & ~(size_t)4095;
                for (size_t want = ND_META_CHUNK;; want /= 2) {
                    if (want < least)
                        want = least;
                    char *chunk = nd_os_map_aligned(want, ND_CACHE_LINE);
                    nd_meta_thp_opt_out(chunk, want);
                    if (chunk != NULL) {
                        nd_meta_bump = chunk;
                        nd_meta_end = chunk + want;
                        nd_add_relaxed(&nd_meta_total, want);
                        break;
                    }
                    if (want == least)
                        break;
                }
            }
            if (nd_meta_bump != NULL && (size_t)(nd_meta_end - nd_meta_bump) >= size) {
                p = nd_meta_bump;
                nd_meta_bump += size;
            }
        }
        nd_unlock(ND_LOCK(meta, 0));
        /* Fresh mappings are zero. Its first `zero` bytes (what the caller
           uses at once: a cache's counters and bins) are written now, page
           by page: a page whose first access is a load maps the shared zero
           page, and the store after it then costs a copy and a TLB
           shootdown on every CPU running the process (found with the
           kernel's tlb_flush tracepoint in node-heavy programs). */
        if (p != NULL && touch)
            for (size_t off = 0; off < zero && off < size; off += 4096)
                nd_store_relaxed((char *)p + off, (char)0);
        return p;
    }
    nd_unlock(ND_LOCK(meta, 0));
    memset(p, 0, zero < size ? zero : size);
    return p;
}

nd_hot void *nd_meta_alloc_head(size_t size, size_t zero) { return nd_meta_take(size, zero, true); }
nd_hot void *nd_meta_alloc_untouched(size_t size, size_t zero) { return nd_meta_take(size, zero, false); }

nd_hot void nd_meta_free(void *p, size_t size)
{
    nd_lock_may_take(ND_LOCK_ID_meta);
    if (p == NULL)
        return;
    size = nd_meta_round(size);
    nd_lock(ND_LOCK(meta, 0));
    int slot = -1;
    for (int i = 0; i < ND_META_CLASSES; i++) {
        if (nd_meta_lists[i].size == size) {
            slot = i;
            break;
        }
        if (slot < 0 && nd_meta_lists[i].size == 0)
            slot = i;
    }
    if (slot >= 0) {
        nd_meta_lists[slot].size = size;
        nd_meta_free_obj *o = p;
        o->next = nd_meta_lists[slot].head;
        nd_meta_lists[slot].head = o;
    }
    /* else: more distinct sizes than slots; the object is leaked (cannot happen
       with nodal's fixed set of metadata types). */
    nd_unlock(ND_LOCK(meta, 0));
}

size_t nd_meta_mapped(void) { return nd_load_relaxed(&nd_meta_total); }

