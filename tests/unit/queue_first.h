/*
 * queue_first.h - for the unit tests: takes the oldest waiting queue entry, as an agent with
 * room for every job would (queue_waiting, then queue_take). 1 with *it, 0 when none waits or
 * another taker won, or a negative error.
 */
#ifndef TY_TEST_QUEUE_FIRST_H
#define TY_TEST_QUEUE_FIRST_H

#include "queue.h"

static inline int queue_first(struct store *s, const char *agent, struct queue_item *it,
                              struct ty_err *err)
{
    struct queue_item w[1];
    size_t n = 0;
    int rc = queue_waiting(s, 1, NULL, w, &n, NULL, 0, err);
    if (rc < 0 || n == 0)
        return rc;
    rc = queue_take(s, agent, &w[0], NULL, err);
    if (rc == 1)
        *it = w[0];
    return rc;
}

#endif
