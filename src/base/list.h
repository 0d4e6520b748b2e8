/* list.h - the one doubly linked list: intrusive (a gm_list link lives inside the listed object,
 * which gm_list_entry finds again from it), circular around a head, so linking and unlinking
 * never allocate, cannot fail and take constant time. The daemon's loop keeps its connections,
 * parked requests and WebSocket clients on such lists. An unlinked link points at itself (or is
 * all zero, as calloc leaves it): gm_list_linked tells, and unlinking it again does nothing. */
#ifndef GM_LIST_H
#define GM_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gm_list {
    struct gm_list *prev, *next;
} gm_list;

/* The object of type `type` whose member `member` is the link l. */
#define gm_list_entry(l, type, member) ((type *)(void *)((char *)(l)-offsetof(type, member)))

/* Every link of head's list, first to last; the loop's body may unlink `it` (its successor was
 * read before), but no other link. */
#define gm_list_each(it, nx, head) \
    for (gm_list *it = (head)->next, *nx = it->next; it != (head); it = nx, nx = it->next)

/* An empty list (a head), or an unlinked link. */
static inline void gm_list_init(gm_list *l)
{
    l->prev = l->next = l;
}

static inline bool gm_list_empty(const gm_list *head)
{
    return head->next == head;
}

/* True while l is on a list. */
static inline bool gm_list_linked(const gm_list *l)
{
    return l->next && l->next != l;
}

/* Puts l (unlinked) last on head's list. */
static inline void gm_list_push_back(gm_list *head, gm_list *l)
{
    l->prev = head->prev;
    l->next = head;
    head->prev->next = l;
    head->prev = l;
}

/* Puts l (unlinked) first on head's list. */
static inline void gm_list_push_front(gm_list *head, gm_list *l)
{
    l->prev = head;
    l->next = head->next;
    head->next->prev = l;
    head->next = l;
}

/* Takes l off its list, if it is on one. */
static inline void gm_list_remove(gm_list *l)
{
    if (!gm_list_linked(l))
        return;
    l->prev->next = l->next;
    l->next->prev = l->prev;
    gm_list_init(l);
}

/* The first link of head's list, NULL when it is empty. */
static inline gm_list *gm_list_first(const gm_list *head)
{
    return gm_list_empty(head) ? NULL : head->next;
}

#endif
