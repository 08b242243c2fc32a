/*
 * sqlite.c - a real program's allocation pattern: SQLite (the system's
 * libsqlite3, which allocates through malloc/realloc/free, so the preloaded
 * allocator serves it) running a CPU-bound workload on an in-memory database.
 *
 * Each of -t threads (default 1) opens its own ":memory:" database and runs
 * -r rounds (default 3) of:
 *   - a transaction inserting -k rows (default 20,000) into a table with
 *     random text (8-200 characters) and blob (16 B-2 KiB) columns, through
 *     a prepared statement, and as many key/value rows into a second table;
 *   - creating two indexes, then range counts through them, a GROUP BY with
 *     ORDER BY, a join of the two tables, a LIKE scan, a sort of every row by
 *     its text, string building (group_concat, json_group_array: strings that
 *     grow by realloc), a recursive CTE;
 *   - updates that lengthen a tenth of the texts, deletes of half the rows,
 *     and dropping everything.
 * The work is the same under every allocator (fixed seeds).
 *
 * Reported: CPU seconds of the process over the workload (user + system,
 * the figure to compare), wall seconds, user and system seconds, and peak
 * RSS (MiB).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct cfg {
    int rounds;
    long long rows;
};

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        die("sqlite: %s: %s", sql, err ? err : "?");
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        die("sqlite: %s: %s", sql, sqlite3_errmsg(db));
    return st;
}

/* Steps a statement to the end; returns a checksum of the first column. */
static long long drain(sqlite3_stmt *st)
{
    long long sum = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        sum += sqlite3_column_int64(st, 0) + sqlite3_column_bytes(st, 0);
    if (rc != SQLITE_DONE)
        die("sqlite step: %s", sqlite3_errmsg(sqlite3_db_handle(st)));
    sqlite3_reset(st);
    return sum;
}

static long long query(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = prepare(db, sql);
    long long sum = drain(st);
    sqlite3_finalize(st);
    return sum;
}

static void random_text(uint64_t *rng, char *buf, size_t len)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyz      ";
    for (size_t i = 0; i < len; i++)
        buf[i] = letters[rng_below(rng, sizeof letters - 1)];
    buf[len] = 0;
}

static long long round_of_work(sqlite3 *db, const struct cfg *c, uint64_t *rng)
{
    long long sum = 0;
    char text[256], blob[2048];
    exec(db, "CREATE TABLE t1(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL, d BLOB);"
             "CREATE TABLE t2(k TEXT PRIMARY KEY, v TEXT, n INTEGER);");
    exec(db, "BEGIN");
    sqlite3_stmt *ins1 = prepare(db, "INSERT INTO t1(a, b, c, d) VALUES (?, ?, ?, ?)");
    sqlite3_stmt *ins2 = prepare(db, "INSERT OR REPLACE INTO t2(k, v, n) VALUES (?, ?, ?)");
    for (long long i = 0; i < c->rows; i++) {
        size_t tl = 8 + (size_t)rng_below(rng, 193), bl = 16 + (size_t)rng_below(rng, 2033);
        random_text(rng, text, tl);
        for (size_t k = 0; k < bl; k++)
            blob[k] = (char)rng_next(rng);
        sqlite3_bind_int64(ins1, 1, (sqlite3_int64)rng_below(rng, 100000));
        sqlite3_bind_text(ins1, 2, text, (int)tl, SQLITE_TRANSIENT);
        sqlite3_bind_double(ins1, 3, (double)rng_below(rng, 1000000) / 7.0);
        sqlite3_bind_blob(ins1, 4, blob, (int)bl, SQLITE_TRANSIENT);
        drain(ins1);
        char key[32];
        snprintf(key, sizeof key, "key%llu", (unsigned long long)rng_below(rng, (uint64_t)c->rows * 2));
        sqlite3_bind_text(ins2, 1, key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins2, 2, text, (int)(tl / 2 + 1), SQLITE_TRANSIENT);
        sqlite3_bind_int64(ins2, 3, (sqlite3_int64)i);
        drain(ins2);
    }
    sqlite3_finalize(ins1);
    sqlite3_finalize(ins2);
    exec(db, "COMMIT");
    exec(db, "CREATE INDEX t1a ON t1(a); CREATE INDEX t1b ON t1(b);");

    sqlite3_stmt *range = prepare(db, "SELECT count(*), sum(c) FROM t1 WHERE a BETWEEN ? AND ?");
    for (int i = 0; i < 2000; i++) {
        sqlite3_int64 lo = (sqlite3_int64)rng_below(rng, 100000);
        sqlite3_bind_int64(range, 1, lo);
        sqlite3_bind_int64(range, 2, lo + 500);
        sum += drain(range);
    }
    sqlite3_finalize(range);
    sum += query(db, "SELECT a % 100 AS g, count(*), avg(c), max(length(b)) FROM t1 GROUP BY g ORDER BY 3 DESC");
    sum += query(db, "SELECT count(*) FROM t1 JOIN t2 ON t2.n = t1.id WHERE length(t2.v) > 20");
    sum += query(db, "SELECT count(*) FROM t1 WHERE b LIKE '%ab%c%'");
    sum += query(db, "SELECT b, id FROM t1 ORDER BY b, c LIMIT 100000");
    sum += query(db, "SELECT length(group_concat(b, ',')) FROM t1 WHERE a < 50000");
    sum += query(db, "SELECT length(json_group_array(json_object('id', id, 'b', b))) FROM t1 WHERE a % 3 = 0");
    sum += query(db, "WITH RECURSIVE r(x, s) AS (SELECT 1, '' UNION ALL SELECT x + 1, substr(s || x, -64) "
                     "FROM r WHERE x < 100000) SELECT count(*), max(length(s)) FROM r");
    exec(db, "UPDATE t1 SET b = b || upper(b) WHERE a % 10 = 0");
    exec(db, "DELETE FROM t1 WHERE a % 2 = 1");
    sum += query(db, "SELECT count(*), sum(length(d)) FROM t1");
    exec(db, "DROP INDEX t1a; DROP INDEX t1b; DROP TABLE t1; DROP TABLE t2;");
    return sum;
}

static void worker(bench_thread *t)
{
    const struct cfg *c = t->arg;
    sqlite3 *db = NULL;
    bench_sync(t);
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        die("sqlite3_open failed");
    long long sum = 0;
    for (int r = 0; r < c->rounds; r++)
        sum += round_of_work(db, c, &t->rng);
    sqlite3_close(db);
    escape(&sum);
    t->ops = (uint64_t)c->rounds;
}

int main(int argc, char **argv)
{
    bench_init(argc, argv);
    struct cfg c = { .rounds = 3, .rows = 20000 };
    int threads = 1, opt;
    while ((opt = getopt(argc, argv, "t:r:k:P")) != -1) {
        switch (opt) {
        case 't': threads = (int)parse_size(optarg); break;
        case 'r': c.rounds = (int)parse_size(optarg); break;
        case 'k': c.rows = parse_size(optarg); break;
        case 'P': bench_pinning = 0; break;
        default:
            fprintf(stderr, "usage: sqlite [-t threads] [-r rounds] [-k rows] [-P]\n");
            return 2;
        }
    }
    if (threads < 1 || c.rounds < 1 || c.rows < 1)
        die("need -t, -r, -k >= 1");
    bench_team r;
    bench_team_run(threads, worker, &c, &r);
    bench_result("sqlite", "threads=%d rows=%lld rounds=%d cpu_s=%.3f wall_s=%.3f user_s=%.3f sys_s=%.3f peak_rss_mib=%.1f",
                 threads, c.rows, c.rounds, r.user_s + r.sys_s, (double)r.wall_ns / 1e9, r.user_s, r.sys_s,
                 bench_peak_rss_kib() / 1024.0);
    return 0;
}
