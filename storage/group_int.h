/*
 * group_int.h - the parts of a thread-safe handle shared by group.c (the
 * locks, the queue, the leader) and group_tx.c (what a leader runs).
 */
#ifndef RLS_GROUP_INT_H
#define RLS_GROUP_INT_H

#include <pthread.h>
#include "db.h"

/* The most checks one group transaction decides: bounds the wait of a
 * group's first member and the transaction's length. */
#define GROUP_MAX 64
#define RLS_GROUP_ERRMSG 512
/* Key contexts (keyctx.h, about 29 kB each) a group's members leave for
 * the next group's (group_tx.c): a malloc and a free per member otherwise. */
#define GROUP_POOL 8

/* A check waiting in the queue, on its caller's stack. */
struct group_member {
    struct check_call *call;
    int64_t t0;                    /* the monotonic clock at its entry (metrics.c:
                                    * the latency, the queue's wait included) */
    int rc;                        /* out: the call's code */
    int done;                      /* decided (under q) */
    char errmsg[RLS_GROUP_ERRMSG]; /* out: the call's error detail */
    pthread_cond_t cv;             /* done, or lead the next group */
    struct group_member *next;
};

struct rls_group {
    pthread_mutex_t lock;          /* the handle lock (recursive) */
    void *owner;                   /* its holder's thread token, or NULL */
    int depth;                     /* its holder's nesting */
    pthread_mutex_t q;             /* guards the queue and leading */
    struct group_member *head, *tail;
    int leading;                   /* a leader is running a group */
    size_t waiting;                /* members queued, not yet taken */
    size_t returning;              /* members decided whose threads have not
                                    * yet left rls__group_check */
    unsigned long epoch;           /* rls__fork_epoch() the locks were made in */
    uint64_t led;                  /* groups led (tests) */
    struct key_ctx *pool[GROUP_POOL];   /* spare contexts (handle lock held) */
    int npool;
};

/* handle.c: a number that changes in a forked child (the fork count). */
unsigned long rls__fork_epoch(void);


/* group.c: copies msg into dst (size bytes), cut to fit. */
void rls__group_copy_msg(char *dst, size_t size, const char *msg);

/* group_tx.c: runs the n members' checks (the leader, handle lock held):
 * each member's rc, errmsg and result filled.  m has room for GROUP_MAX:
 * members that joined the group late (group_tx.c) are appended; returns
 * how many m holds now. */
size_t rls__group_run(rls_db *db, struct group_member **m, size_t n);
/* group.c, for the leader (handle lock held): the queue's head, taken
 * when fits(arg, it) accepts it; else NULL (nothing queued, or it does
 * not fit: arrival order is kept). */
struct group_member *rls__group_take(rls_db *db,
                                     int (*fits)(void *arg, const struct group_member *mb),
                                     void *arg);

#endif
