/*
 * list.h - the one intrusive doubly linked list nodal uses: page queues and
 * segment lists of a heap, a large-block pool's segments, a node's segment
 * caches and abandoned segments, and the list of thread records.
 *
 * An element is any struct with `next` and `prev` pointers to its own type;
 * a list is { first, last, count } of that type (ND_LIST). The operations
 * are macros so that one definition serves every element type; each
 * evaluates its arguments once.
 *
 * Invariants: first == NULL <=> last == NULL <=> count == 0; first->prev and
 * last->next are NULL; an element is on at most one list through these
 * links, and its links are NULL when it is on none.
 */
#ifndef ND_LIST_H
#define ND_LIST_H

#include <stddef.h>

#define ND_LIST(T) struct { T *first, *last; size_t count; }

#define nd_list_init(l) do { (l)->first = (l)->last = NULL; (l)->count = 0; } while (0)

#define nd_list_push_front(l, e)                                               \
    do {                                                                       \
        __typeof__(l) l_ = (l);                                                \
        __typeof__(e) e_ = (e);                                                \
        e_->prev = NULL;                                                       \
        e_->next = l_->first;                                                  \
        if (l_->first)                                                         \
            l_->first->prev = e_;                                              \
        else                                                                   \
            l_->last = e_;                                                     \
        l_->first = e_;                                                        \
        l_->count++;                                                           \
    } while (0)

#define nd_list_push_back(l, e)                                                \
    do {                                                                       \
        __typeof__(l) l_ = (l);                                                \
        __typeof__(e) e_ = (e);                                                \
        e_->next = NULL;                                                       \
        e_->prev = l_->last;                                                   \
        if (l_->last)                                                          \
            l_->last->next = e_;                                               \
        else                                                                   \
            l_->first = e_;                                                    \
        l_->last = e_;                                                         \
        l_->count++;                                                           \
    } while (0)

#define nd_list_remove(l, e)                                                   \
    do {                                                                       \
        __typeof__(l) l_ = (l);                                                \
        __typeof__(e) e_ = (e);                                                \
        if (e_->prev)                                                          \
            e_->prev->next = e_->next;                                         \
        else                                                                   \
            l_->first = e_->next;                                              \
        if (e_->next)                                                          \
            e_->next->prev = e_->prev;                                         \
        else                                                                   \
            l_->last = e_->prev;                                               \
        e_->next = e_->prev = NULL;                                            \
        l_->count--;                                                           \
    } while (0)

/* Inserts e into list l just before `at`, an element of l. */
#define nd_list_insert_before(l, at, e)                                        \
    do {                                                                       \
        __typeof__(l) l_ = (l);                                                \
        __typeof__(e) at_ = (at);                                              \
        __typeof__(e) e_ = (e);                                                \
        e_->next = at_;                                                        \
        e_->prev = at_->prev;                                                  \
        if (at_->prev)                                                         \
            at_->prev->next = e_;                                              \
        else                                                                   \
            l_->first = e_;                                                    \
        at_->prev = e_;                                                        \
        l_->count++;                                                           \
    } while (0)

/* Moves e from list `from` to the front of list `to`. */
#define nd_list_move_front(from, to, e)                                        \
    do {                                                                       \
        __typeof__(e) m_ = (e);                                                \
        nd_list_remove((from), m_);                                            \
        nd_list_push_front((to), m_);                                          \
    } while (0)

/* Walks a list whose elements may be removed during the walk. */
#define nd_list_foreach_safe(l, e, tmp)                                        \
    for ((e) = (l)->first; (e) != NULL && ((tmp) = (e)->next, 1); (e) = (tmp))

#endif /* ND_LIST_H */
