/*
 * kview.c - the kernel's view of NUMA (see kview.h).
 */
#define _GNU_SOURCE
#include "kview.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int kv_read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f || len == 0) {
        if (f)
            fclose(f);
        return -1;
    }
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (int)n;
}

int kv_parse_list(const char *s, int *out, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        long lo = strtol(s, &end, 10), hi;
        if (end == s)
            break;
        hi = lo;
        s = end;
        if (*s == '-') {
            hi = strtol(s + 1, &end, 10);
            s = end;
        }
        for (long v = lo; v <= hi && n < max; v++)
            out[n++] = (int)v;
        while (*s == ',' || *s == '\n' || *s == ' ')
            s++;
    }
    return n;
}

long kv_meminfo_kib(int node, const char *field)
{
    char path[128], line[256], key[64];
    long v, found = -1;
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node);
    snprintf(key, sizeof key, "%s:", field);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        /* "Node 0 MemFree:   123 kB" */
        char *k = strstr(line, key);
        if (k && sscanf(k + strlen(key), "%ld", &v) == 1) {
            found = v;
            break;
        }
    }
    fclose(f);
    return found;
}

int kv_distance(int from, int to)
{
    char path[128], buf[4096], online[1024];
    int ids[1024];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/distance", from);
    if (kv_read_text(path, buf, sizeof buf) < 0 ||
        kv_read_text("/sys/devices/system/node/online", online, sizeof online) < 0)
        return -1;
    /* One distance per online node, in id order, separated by spaces. */
    int n = kv_parse_list(online, ids, 1024), k = 0;
    for (char *s = buf, *end; k < n; s = end, k++) {
        long v = strtol(s, &end, 10);
        if (end == s)
            return -1;
        if (ids[k] == to)
            return (int)v;
    }
    return -1;
}

int kv_is_mapped(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    if (!f)
        return -1;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2)
            found = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    }
    fclose(f);
    return found;
}

/* Which node each memory block (block_size_bytes of physical memory)
   belongs to: /sys/devices/system/node/nodeN/memoryM. Read once. */
static int *kv_block_node;         /* block index -> node, -1 unknown */
static size_t kv_nblocks;
static uint64_t kv_block_pages;    /* OS pages per memory block */
static pthread_once_t kv_block_once = PTHREAD_ONCE_INIT;

static void kv_read_memory_blocks(void)
{
    char buf[4096];
    int ids[1024];
    uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
    if (kv_read_text("/sys/devices/system/memory/block_size_bytes", buf, sizeof buf) <= 0)
        return;
    kv_block_pages = strtoull(buf, NULL, 16) / ps;
    if (kv_block_pages == 0 || kv_read_text("/sys/devices/system/node/online", buf, sizeof buf) < 0)
        return;
    int n = kv_parse_list(buf, ids, 1024);
    for (int i = 0; i < n; i++) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d", ids[i]);
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            char *end;
            if (strncmp(e->d_name, "memory", 6) != 0)
                continue;
            unsigned long m = strtoul(e->d_name + 6, &end, 10);
            if (end == e->d_name + 6 || *end)
                continue;
            if (m >= kv_nblocks) {
                size_t grow = m + 1024;
                int *nb = realloc(kv_block_node, grow * sizeof *nb);
                if (!nb)
                    break;
                for (size_t k = kv_nblocks; k < grow; k++)
                    nb[k] = -1;
                kv_block_node = nb;
                kv_nblocks = grow;
            }
            kv_block_node[m] = ids[i];
        }
        if (d)
            closedir(d);
    }
}

int kv_frame_node(void *page)
{
    uint64_t entry = 0;
    pthread_once(&kv_block_once, kv_read_memory_blocks);
    if (!kv_block_pages || !kv_block_node)
        return -1;
    int fd = open("/proc/self/pagemap", O_RDONLY);   /* a rare path: opened each time */
    off_t off = (off_t)((uintptr_t)page / (uintptr_t)sysconf(_SC_PAGESIZE) * 8);
    ssize_t got = fd < 0 ? -1 : pread(fd, &entry, sizeof entry, off);
    if (fd >= 0)
        close(fd);
    uint64_t pfn = entry & ((1ULL << 55) - 1);
    if (got != (ssize_t)sizeof entry || !(entry >> 63 & 1) || pfn == 0 ||   /* absent, or frame hidden */
        pfn / kv_block_pages >= kv_nblocks)
        return -1;
    return kv_block_node[pfn / kv_block_pages];
}

static long kv_move_pages_query(unsigned long count, void **pages, int *status)
{
    return syscall(SYS_move_pages, 0, count, pages, NULL, status, 0);
}

int kv_query_pages(void **pages, int *status, size_t n)
{
    static __thread void *again[KV_QUERY_MAX];
    static __thread int st[KV_QUERY_MAX];
    static __thread size_t where[KV_QUERY_MAX];
    if (n > KV_QUERY_MAX || kv_move_pages_query(n, pages, status) != 0)
        return -1;
    /* Asked again together, up to 5 times over about 60 ms. */
    size_t m = 0;
    for (int wait_us = 2000; wait_us <= 32000; wait_us *= 2) {
        m = 0;
        for (size_t i = 0; i < n; i++)
            if (status[i] < 0) {
                where[m] = i;
                again[m++] = pages[i];
            }
        if (m == 0)
            return 0;
        usleep((useconds_t)wait_us);
        if (kv_move_pages_query(m, again, st) != 0)
            return -1;
        for (size_t k = 0; k < m; k++)
            status[where[k]] = st[k];
    }
    /* Still unanswered: NUMA balancing's PROT_NONE pages read as EFAULT
       until touched. The frame says where they are; else one read access
       and a last query. */
    for (size_t k = 0; k < m; k++) {
        size_t i = where[k];
        if (status[i] >= 0)
            continue;
        int node = kv_frame_node(pages[i]);
        if (node >= 0) {
            status[i] = node;
        } else if (kv_is_mapped(pages[i]) == 1) {
            (void)*(volatile const char *)pages[i];
            if (kv_move_pages_query(1, &pages[i], &status[i]) != 0)
                return -1;
        }
    }
    return 0;
}
