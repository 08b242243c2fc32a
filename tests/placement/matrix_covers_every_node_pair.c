/*
 * matrix_covers_every_node_pair - `nodal-verify --matrix --json` measures
 * every pair the machine has: one row per node with memory and CPUs this
 * process may use, one column per node with memory (memory-only nodes are
 * columns, never rows), in the kernel's order; its distances are the
 * kernel's (nodeN/distance); every latency and bandwidth is a positive
 * number; every node's buffer was on its node (misplaced_pages all 0); and
 * it exits 0.
 *
 * Options: --verify PATH (default: tools/nodal-verify of this build, found
 * from /proc/self/exe), --size BYTES and --time SECONDS passed on (default
 * 8m and 0.05: small and quick; the values are checked for sign, not size).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "placement.h"

#define MAXV (PT_MAX_NODES * PT_MAX_NODES)

/* Parses the JSON value of "key" when it is a number array of one or two
   dimensions into out (row-major); *rows and *cols give the shape (a 1-D array
   is one row). Returns the count, or -1 if the key is missing or the value
   is not such an array (or rows differ in length). */
static int json_numbers(const char *json, const char *key, double *out, int max, int *rows, int *cols)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *s = strstr(json, pat);
    if (s == NULL)
        return -1;
    s += strlen(pat);
    if (*s != '[')
        return -1;
    int depth = 0, n = 0, r = 0, c = 0, width = -1, twod = s[1] == '[';
    for (; *s; s++) {
        if (*s == '[') {
            depth++;
            c = 0;
        } else if (*s == ']') {
            if (twod && depth == 2) {
                if (width >= 0 && c != width)
                    return -1;
                width = c;
                r++;
            }
            if (--depth == 0)
                break;
        } else if (*s == ',' || *s == ' ') {
            continue;
        } else {
            char *end;
            double v = strtod(s, &end);
            if (end == s || n >= max || depth != (twod ? 2 : 1))
                return -1;
            out[n++] = v;
            c++;
            s = end - 1;
        }
    }
    if (depth != 0)
        return -1;
    *rows = twod ? r : 1;
    *cols = twod ? (width < 0 ? 0 : width) : n;
    return n;
}

static char *run_capture(const char *cmd, int *status)
{
    FILE *f = popen(cmd, "r");
    if (f == NULL)
        pt_die("popen(%s): %s", cmd, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += got;
        if (cap - len < 4096 && (buf = realloc(buf, cap *= 2)) == NULL)
            break;
    }
    if (buf == NULL)
        pt_die("out of memory");
    buf[len] = '\0';
    *status = pclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    argc = pt_begin(argc, argv, "matrix_covers_every_node_pair",
                    "nodal-verify --matrix --json: a row per CPU node with memory, a column per node "
                    "with memory, the kernel's distances, positive latency and bandwidth, buffers on "
                    "their nodes");
    char verify[4096] = "", self[4096];
    const char *size = "8m", *secs = "0.05";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verify") && i + 1 < argc)
            snprintf(verify, sizeof verify, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--size") && i + 1 < argc)
            size = argv[++i];
        else if (!strcmp(argv[i], "--time") && i + 1 < argc)
            secs = argv[++i];
        else
            pt_die("unknown argument %s (--verify PATH, --size BYTES, --time SECONDS)", argv[i]);
    }
    if (!verify[0]) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            pt_die("cannot read /proc/self/exe: %s", strerror(errno));
        self[n] = '\0';
        snprintf(verify, sizeof verify, "%s/../../tools/nodal-verify", dirname(self));
    }
    if (access(verify, X_OK) != 0)
        pt_die("%s: %s (build the tools, or pass --verify PATH)", verify, strerror(errno));

    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' --matrix --json --size %s --time %s", verify, size, secs);
    pt_info("running %s", cmd);
    int status;
    char *out = run_capture(cmd, &status);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        pt_fail("nodal-verify --matrix exited with status %d; expected 0 (output: %.300s)",
                WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out);
    const char *json = strstr(out, "{\"version\"");
    if (json == NULL) {
        pt_fail("no JSON object in the output of nodal-verify --matrix --json: %.300s", out);
        free(out);
        return pt_end();
    }

    /* what the kernel says the matrix must cover */
    const pt_topo *t = pt_topology();
    int want_rows[PT_MAX_NODES], nrows = 0;
    for (int i = 0; i < t->ncpunode; i++) {
        const pt_node *nd = pt_node_get(t->cpunode[i]);
        if (nd && nd->has_memory)
            want_rows[nrows++] = nd->id;
    }
    static double v[MAXV];
    int r, c, n;

    n = json_numbers(json, "cpu_nodes", v, MAXV, &r, &c);
    if (n != nrows)
        pt_fail("cpu_nodes has %d entries; expected %d (nodes with memory and usable CPUs)", n, nrows);
    for (int i = 0; i < n && i < nrows; i++)
        if ((int)v[i] != want_rows[i])
            pt_fail("cpu_nodes[%d] = %d; expected node %d", i, (int)v[i], want_rows[i]);
    n = json_numbers(json, "mem_nodes", v, MAXV, &r, &c);
    if (n != t->nmem)
        pt_fail("mem_nodes has %d entries; expected %d (/sys/devices/system/node/has_memory)", n, t->nmem);
    for (int i = 0; i < n && i < t->nmem; i++)
        if ((int)v[i] != t->mem[i])
            pt_fail("mem_nodes[%d] = %d; expected node %d", i, (int)v[i], t->mem[i]);

    static const char *const metrics[] = { "latency_ns", "read_gbs", "write_gbs" };
    for (size_t k = 0; k < sizeof metrics / sizeof metrics[0]; k++) {
        n = json_numbers(json, metrics[k], v, MAXV, &r, &c);
        if (n < 0 || r != nrows || c != t->nmem) {
            pt_fail("%s is %d x %d; expected %d rows (CPU nodes) x %d columns (memory nodes)", metrics[k],
                    n < 0 ? 0 : r, n < 0 ? 0 : c, nrows, t->nmem);
            continue;
        }
        for (int i = 0; i < r; i++)
            for (int j = 0; j < c; j++)
                if (!(v[i * c + j] > 0))
                    pt_fail("%s from CPU node %d to memory node %d is %g; expected a positive value",
                            metrics[k], want_rows[i], t->mem[j], v[i * c + j]);
    }
    n = json_numbers(json, "distance", v, MAXV, &r, &c);
    if (n < 0 || r != nrows || c != t->nmem) {
        pt_fail("distance is %d x %d; expected %d x %d", n < 0 ? 0 : r, n < 0 ? 0 : c, nrows, t->nmem);
    } else {
        for (int i = 0; i < r; i++)
            for (int j = 0; j < c; j++) {
                int want = pt_sys_distance(want_rows[i], t->mem[j]);
                if (want >= 0 && (int)v[i * c + j] != want)
                    pt_fail("distance from node %d to node %d is %d; expected %d (nodeN/distance)",
                            want_rows[i], t->mem[j], (int)v[i * c + j], want);
            }
    }
    n = json_numbers(json, "misplaced_pages", v, MAXV, &r, &c);
    if (n != t->nmem)
        pt_fail("misplaced_pages has %d entries; expected %d", n, t->nmem);
    for (int i = 0; i < n; i++)
        if (v[i] != 0)
            pt_fail("%g OS page(s) of the node-%d buffer were off their node; expected 0", v[i],
                    i < t->nmem ? t->mem[i] : -1);
    pt_info("%d row(s) x %d column(s)", nrows, t->nmem);
    free(out);
    return pt_end();
}
