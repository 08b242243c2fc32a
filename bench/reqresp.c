/*
 * reqresp.c - request/response through a thread pool, with random sizes: the
 * shape of an RPC or web server whose requests are allocated by the thread
 * that receives them and freed by the worker that serves them, and whose
 * responses go the other way.
 *
 * -c client threads (default 2) each send -n / c requests and keep up to -q
 * (default 64) of them outstanding. A request is a malloc'ed block of 16 B ..
 * 4 KiB (log-uniform) that the client fills; it goes into one shared queue
 * (a mutex and a condition variable, as in a typical pool). One of -t worker
 * threads (default 2) takes it, parses it into 1-8 temporaries of 8-256 B,
 * allocates a response of 16 B .. 32 KiB (log-uniform, chosen by the client),
 * writes one byte per 64 B of it, frees the temporaries and the request, and
 * hands the response to the client's completion queue; the client reads it
 * and frees it. So every request and every response is freed by another
 * thread than the one that allocated it.
 *
 * Requests and responses move through the queues in batches of up to -b
 * (default 8; one lock round trip and at most one wake-up per batch), as a
 * server does with what one poll returns; otherwise the queues' futex calls,
 * which cost the same under every allocator, would be most of the time.
 * -b 1 hands over one at a time.
 *
 * Reported: core-normalised wall ns per request (clients and workers
 * counted), CPU ns per request (all threads; it includes the queues' locking
 * and wake-ups), million requests per second, the process's user and system
 * seconds, and peak RSS.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A bounded FIFO of pointers under one mutex; never full by construction
   (capacity >= everything that can be outstanding). */
struct queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int waiters;
    size_t head, tail, cap;
    void **items;
};

struct request {
    int client;
    size_t len, resp_len;
    unsigned char data[];
};

struct response {
    size_t len;
    unsigned char data[];
};

#define MAX_BATCH 64

struct cfg {
    int clients, workers, window, batch;
    long long per_client;
    struct queue requests;
    struct queue *done;         /* one per client */
    _Atomic int clients_left;
};

static void queue_init(struct queue *q, size_t cap)
{
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->waiters = 0;
    q->head = q->tail = 0;
    q->cap = cap;
    q->items = calloc(cap, sizeof *q->items);
}

static void queue_destroy(struct queue *q)
{
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    free(q->items);
}

static void queue_push(struct queue *q, void **items, int n)
{
    pthread_mutex_lock(&q->mu);
    if (q->tail - q->head + (size_t)n > q->cap)
        die("queue overflow");
    for (int i = 0; i < n; i++)
        q->items[q->tail++ % q->cap] = items[i];
    if (q->waiters)
        pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Waits for at least one item; takes up to max. */
static int queue_pop(struct queue *q, void **items, int max)
{
    pthread_mutex_lock(&q->mu);
    while (q->head == q->tail) {
        q->waiters++;
        pthread_cond_wait(&q->cv, &q->mu);
        q->waiters--;
    }
    int n = 0;
    while (n < max && q->head != q->tail)
        items[n++] = q->items[q->head++ % q->cap];
    /* more left and someone else waiting: pass the wake-up on */
    if (q->head != q->tail && q->waiters)
        pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return n;
}

static void client(bench_thread *t, struct cfg *c)
{
    int me = t->id;
    long long sent = 0, received = 0;
    long sum = 0;
    void *batch[MAX_BATCH];
    while (received < c->per_client) {
        while (sent < c->per_client && sent - received < c->window) {
            int n = 0;
            while (n < c->batch && sent < c->per_client && sent - received < c->window) {
                size_t len = rng_log_uniform(&t->rng, 16, 4096);
                struct request *rq = malloc(sizeof *rq + len);
                rq->client = me;
                rq->len = len;
                rq->resp_len = rng_log_uniform(&t->rng, 16, 32768);
                memset(rq->data, (int)sent, len);
                batch[n++] = rq;
                sent++;
            }
            queue_push(&c->requests, batch, n);
        }
        int n = queue_pop(&c->done[me], batch, c->batch);
        for (int i = 0; i < n; i++) {
            struct response *rs = batch[i];
            sum += rs->data[0] + rs->data[rs->len - 1];
            free(rs);
        }
        received += n;
    }
    escape(&sum);
    t->ops = (uint64_t)received;
    if (atomic_fetch_sub(&c->clients_left, 1) == 1) {
        void *stop[1] = { NULL };
        for (int i = 0; i < c->workers; i++)
            queue_push(&c->requests, stop, 1);     /* stop the workers */
    }
}

static struct response *serve(bench_thread *t, struct request *rq)
{
    char *tmp[8];
    int ntmp = 1 + (int)rng_below(&t->rng, 8);
    size_t at = 0;
    for (int i = 0; i < ntmp; i++) {
        size_t sz = rng_log_uniform(&t->rng, 8, 256);
        tmp[i] = malloc(sz);
        size_t n = sz < rq->len - at ? sz : rq->len - at;
        memcpy(tmp[i], rq->data + at, n);
        tmp[i][sz - 1] = 0;
        at = (at + n) % rq->len;
    }
    size_t len = rq->resp_len > 0 ? rq->resp_len : 1;
    struct response *rs = malloc(sizeof *rs + len);
    rs->len = len;
    for (size_t off = 0; off < len; off += 64)
        rs->data[off] = (unsigned char)tmp[off % (size_t)ntmp][0];
    rs->data[len - 1] = 1;
    for (int i = 0; i < ntmp; i++)
        free(tmp[i]);
    return rs;
}

static void worker_loop(bench_thread *t, struct cfg *c)
{
    void *in[MAX_BATCH], *out[MAX_BATCH];
    int to[MAX_BATCH];
    for (;;) {
        int n = queue_pop(&c->requests, in, c->batch), stops = 0;
        for (int i = 0; i < n; i++) {
            struct request *rq = in[i];
            if (!rq) {
                stops++;
                to[i] = -1;
                continue;
            }
            out[i] = serve(t, rq);
            to[i] = rq->client;
            free(rq);
        }
        /* hand each client its responses in one go */
        for (int i = 0; i < n; i++) {
            if (to[i] < 0)
                continue;
            int client = to[i], m = 0;
            void *mine[MAX_BATCH];
            for (int k = i; k < n; k++)
                if (to[k] == client) {
                    mine[m++] = out[k];
                    to[k] = -1;
                }
            queue_push(&c->done[client], mine, m);
        }
        if (stops) {
            /* one stop is this worker's; the others belong to the rest */
            void *stop[1] = { NULL };
            for (int i = 1; i < stops; i++)
                queue_push(&c->requests, stop, 1);
            return;
        }
    }
}

static void thread_main(bench_thread *t)
{
    struct cfg *c = t->arg;
    bench_sync(t);
    if (t->id < c->clients)
        client(t, c);
    else
        worker_loop(t, c);
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .clients = 2, .workers = 2, .window = 64, .batch = 8 };
    long long total = 400000;
    int opt;
    while ((opt = getopt(argc, argv, "t:c:n:q:b:P")) != -1) {
        switch (opt) {
        case 't': c.workers = (int)parse_size(optarg); break;
        case 'c': c.clients = (int)parse_size(optarg); break;
        case 'n': total = parse_size(optarg); break;
        case 'q': c.window = (int)parse_size(optarg); break;
        case 'b': c.batch = (int)parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: reqresp [-t workers] [-c clients] [-n requests] [-q outstanding per client]\n"
                            "               [-b batch] [-P]\n");
            return 2;
        }
    }
    if (c.workers < 1 || c.clients < 1 || c.window < 1 || total < c.clients || c.batch < 1 || c.batch > MAX_BATCH)
        die("need -t, -c, -q >= 1, -n >= -c and 1 <= -b <= %d", MAX_BATCH);
    c.per_client = total / c.clients;
    queue_init(&c.requests, (size_t)c.clients * (size_t)c.window + (size_t)c.workers);
    c.done = calloc((size_t)c.clients, sizeof *c.done);
    for (int i = 0; i < c.clients; i++)
        queue_init(&c.done[i], (size_t)c.window);
    atomic_store(&c.clients_left, c.clients);

    int threads = c.clients + c.workers;
    bench_team r;
    bench_team_run(threads, thread_main, &c, &r);
    bench_result("reqresp", "threads=%d clients=%d window=%d batch=%d ns_req=%.1f cpu_ns_req=%.1f mops=%.4f user_s=%.3f "
                 "sys_s=%.3f peak_rss_mib=%.1f",
                 c.workers, c.clients, c.window, c.batch, bench_ns_per_op(&r, threads), bench_cpu_ns_per_op(&r),
                 (double)r.ops / ((double)r.wall_ns / 1e9) / 1e6, r.user_s, r.sys_s, bench_peak_rss_kib() / 1024.0);
    queue_destroy(&c.requests);
    for (int i = 0; i < c.clients; i++)
        queue_destroy(&c.done[i]);
    free(c.done);
    return 0;
}
