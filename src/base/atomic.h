/*
 * atomic.h - atomic helpers; the memory order is part of every name.
 *
 * Owns nothing but these wrappers over the GCC __atomic builtins, used on
 * plain (non-_Atomic) fields so that hot structs keep their natural layout.
 */
#ifndef ND_ATOMIC_H
#define ND_ATOMIC_H

#include <stdbool.h>

#define nd_load_relaxed(p)        __atomic_load_n((p), __ATOMIC_RELAXED)
#define nd_load_acquire(p)        __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define nd_store_relaxed(p, v)    __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define nd_store_release(p, v)    __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define nd_exchange_acq_rel(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define nd_fetch_add_relaxed(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
/* Weak CAS: on failure *expected is reloaded. Success publishes (release) and
   observes (acquire); failure only reloads (relaxed is enough to retry). */
#define nd_cas_weak_acq_rel(p, expected, desired) \
    __atomic_compare_exchange_n((p), (expected), (desired), true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)
#define nd_cas_strong_acq_rel(p, expected, desired) \
    __atomic_compare_exchange_n((p), (expected), (desired), false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
/* Counters that only need eventual totals (statistics gauges). */
#define nd_add_relaxed(p, v)      ((void)__atomic_add_fetch((p), (v), __ATOMIC_RELAXED))
#define nd_sub_relaxed(p, v)      ((void)__atomic_sub_fetch((p), (v), __ATOMIC_RELAXED))

#if defined(__x86_64__) || defined(__i386__)
#define nd_cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define nd_cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define nd_cpu_relax() ((void)0)
#endif

#endif /* ND_ATOMIC_H */
