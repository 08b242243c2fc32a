/*
 * verify.h - what the parts of nodal-verify share: the topology as nodal and
 * /sys report it, pinning, the clock, and the kernel's view of where pages
 * are. nodal-verify.c owns them; verify-matrix.c measures the NUMA matrix.
 */
#ifndef ND_VERIFY_H
#define ND_VERIFY_H

#include <stddef.h>
#include "nodal.h"

#define MAX_NODES NODAL_MAX_NODES

struct node {
    int id, has_cpus;
    int ncpus, *cpus;          /* CPUs this process may run on */
    char cpulist[256];
    long total_kib, free_kib;
};
extern struct node nodes[MAX_NODES];
extern int nnodes;                          /* nodes with memory, nodal's order */
extern int cpu_nodes[MAX_NODES], ncpu_nodes;   /* indexes into nodes[] of nodes with usable CPUs */
extern int page_size;

/* Monotonic clock, seconds. */
double now(void);
/* Pins the calling thread to one CPU; 0 on success. */
int pin(int cpu);
/* OS pages of [p, p+size) the kernel (move_pages) reports off `node` or not
   resident; the node (or -errno) of the first such page in *where. */
size_t pages_off_node(const void *p, size_t size, int node, int *where);

/* The memory tiers (verify-tiers.c): prints them per CPU node as the
   kernel and nodal see them and checks nodal's choices and placement; the
   number of failed checks. */
int tiers_run(void);

/* The matrix (verify-matrix.c): options and the run. */
struct matrix_opts {
    size_t size;            /* bytes per memory node */
    double seconds;         /* per measurement */
    int bw_threads;         /* 0 = every usable CPU of the CPU node */
    int json;               /* print JSON instead of the tables */
    const char *save;       /* write the values for the option tier_file here, or NULL */
};
/* Measures every (CPU node, memory node) pair; 0, or 1 if a buffer could not
   be had or was not on its node. */
int matrix_run(const struct matrix_opts *o);

#endif
