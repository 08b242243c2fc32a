/*
 * kview.h - the kernel's view of NUMA, as nodal's tools and placement tests
 * read it: sysfs text (node lists, meminfo, distances) and where pages
 * really are (move_pages, and the physical frame behind a page when
 * move_pages cannot tell). Never nodal's own idea of where it put
 * something. Built into nodal-verify and the placement tests' support
 * library; not part of the allocator.
 */
#ifndef ND_KVIEW_H
#define ND_KVIEW_H

#include <stddef.h>

/* The whole text of a (sysfs or proc) file, terminated, at most len - 1
   bytes: its length, or -1 when it cannot be read. */
int  kv_read_text(const char *path, char *buf, size_t len);
/* A kernel list such as "0-3,8,10-11" into ids (at most max): their count. */
int  kv_parse_list(const char *s, int *out, int max);
/* A field of node `node`'s meminfo ("MemFree", "MemTotal") in KiB, or -1. */
long kv_meminfo_kib(int node, const char *field);
/* The kernel's distance from node `from` to node `to`, or -1. */
int  kv_distance(int from, int to);
/* Is p inside any mapping of this process? 1, 0, or -1 if unknown. */
int  kv_is_mapped(const void *p);
/* The node of the physical frame behind `page` (/proc/self/pagemap and the
   memory blocks /sys lists per node; frame numbers need root), or -1. */
int  kv_frame_node(void *page);
/* status[i] = the node of pages[i] (OS-page aligned), or a negative errno,
   as move_pages reports it; pages it cannot answer for at once (being
   migrated, split or collapsed; made PROT_NONE by NUMA balancing) are asked
   again, then looked up by physical frame, then touched once and asked a
   last time. n <= KV_QUERY_MAX. 0, or -1 when move_pages itself failed
   (errno set). */
#define KV_QUERY_MAX 4096
int  kv_query_pages(void **pages, int *status, size_t n);

#endif /* ND_KVIEW_H */
