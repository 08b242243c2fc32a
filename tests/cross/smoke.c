/*
 * smoke.c - a small end-to-end check run on other architectures (aarch64
 * under qemu-user): threads allocate blocks of every kind, fill them with a
 * pattern, pass half to a neighbour thread to free, verify and free the
 * rest; node 0 and aligned allocations too. Exit 0 when everything held.
 */
#include <nodal.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 2000
static void *handoff[4][N];

static size_t size_of(unsigned i) { return (i % 7 == 0) ? 70000 + i * 13 : (i % 97 == 0) ? (5u << 20) : 1 + (i * 37) % 3000; }

static void *worker(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < N; i++) {
        size_t s = size_of(i + t);
        unsigned char *p = i % 5 ? malloc(s) : nodal_malloc_node(s, 0);
        if (p == NULL) {
            fprintf(stderr, "smoke: allocation of %zu bytes failed: %m\n", s);
            exit(1);
        }
        memset(p, (int)(i & 0xff), s);
        handoff[t][i] = p;
    }
    return NULL;
}

static void *freer(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < N; i++) {
        unsigned char *p = handoff[t][i];
        size_t s = size_of(i + t);
        if (p[0] != (unsigned char)(i & 0xff) || p[s - 1] != (unsigned char)(i & 0xff))
            return (void *)1;
        free(p);
    }
    return NULL;
}

int main(void)
{
    pthread_t th[4];
    void *rc;
    int bad = 0;
    for (uintptr_t t = 0; t < 4; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], &rc), bad |= rc != NULL;
    for (uintptr_t t = 0; t < 4; t++)   /* freed by threads that did not allocate them */
        pthread_create(&th[t], NULL, freer, (void *)((t + 1) % 4));
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], &rc), bad |= rc != NULL;
    for (size_t a = 16; a <= ((size_t)1 << 22); a <<= 1) {
        void *p = aligned_alloc(a, 100);
        bad |= p == NULL || ((uintptr_t)p & (a - 1)) != 0;
        free(p);
    }
    void *z = calloc(1000, 1000);
    for (size_t i = 0; z && i < 1000000; i++)
        bad |= ((unsigned char *)z)[i] != 0;
    free(z);
    printf("%s: %s\n", nodal_version(), bad ? "FAILED" : "ok");
    return bad;
}
