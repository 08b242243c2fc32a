/*
 * prefetch.c - seed 003's example, the case made for prefetching the next
 * free object: many objects allocated in a short time, each written right
 * after malloc returns (a constructor-like copy), then all freed; repeated.
 *
 * A round: allocate an array of -c pointers (default 80,000), allocate -c
 * objects of -s bytes (default 208) copying a template into each, free them
 * in allocation order, free the array. -r rounds, single thread.
 * Reported: wall and CPU ns per object (allocate + write + free) and total
 * seconds. Page faults count: an allocator that returns the memory to the
 * OS after each round pays for faulting it back in during the next.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char template_obj[4096];

static void one_round(size_t count, size_t size)
{
    void **array = malloc(sizeof(void *) * count);
    for (size_t i = 0; i < count; i++) {
        array[i] = malloc(size);
        memcpy(array[i], template_obj, size);
    }
    for (size_t i = 0; i < count; i++)
        free(array[i]);
    free(array);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    long long count = 80000, rounds = 300, size = 208;
    int opt;
    while ((opt = getopt(argc, argv, "c:r:s:P")) != -1) {
        switch (opt) {
        case 'c': count = parse_size(optarg); break;
        case 'r': rounds = parse_size(optarg); break;
        case 's': size = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: prefetch [-c objects] [-r rounds] [-s size] [-P]\n");
            return 2;
        }
    }
    if (size < 1 || size > (long long)sizeof template_obj || count < 1)
        die("size must be 1..%zu and count >= 1", sizeof template_obj);
    for (size_t i = 0; i < sizeof template_obj; i++)
        template_obj[i] = (unsigned char)(i * 7 + (size_t)argc);
    bench_pin_self(bench_cpu(0));
    one_round((size_t)count, (size_t)size);    /* warm-up */
    uint64_t t0 = now_ns(), c0 = thread_cpu_ns();
    for (long long r = 0; r < rounds; r++)
        one_round((size_t)count, (size_t)size);
    uint64_t t1 = now_ns(), c1 = thread_cpu_ns();
    double n = (double)(count * rounds);
    bench_result("prefetch", "size=%lld count=%lld ns_obj=%.2f cpu_ns_obj=%.2f wall_s=%.3f",
                 size, count, (double)(t1 - t0) / n, (double)(c1 - c0) / n, (double)(t1 - t0) / 1e9);
    return 0;
}
