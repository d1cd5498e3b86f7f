/*
 * metrics.c - what /metrics serves: checks by action and result, and a
 * histogram of the time a check took (handle, transaction, answer).
 *
 * Actions are counted only once the library knew them (a check that was
 * decided, or failed in storage): the names a client makes up (an unknown
 * action is a 400) never become labels, so the number of series is bounded
 * by the rules.  Past ACTIONS_MAX actions the rest share action="_other".
 * One mutex guards everything; a request holds it for a few additions.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "auth.h"

#define ACTIONS_MAX 128

static const char *const result_names[RES__COUNT] = {
    "allowed", "denied", "error_allowed", "error_denied", "bad_request", "error"};

/* Upper bounds of the latency buckets, microseconds. */
static const int64_t bucket_us[] = {50,    100,   250,    500,    1000,   2500,  5000,
                                    10000, 25000, 50000, 100000, 250000, 1000000};
#define NBUCKETS (sizeof bucket_us / sizeof bucket_us[0])

struct action_slot {
    char name[RLS_NAME_MAX + 1];
    uint64_t count[RES__COUNT];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct action_slot slots[ACTIONS_MAX + 1];   /* the last: "_other" */
static int nslots;
static uint64_t unnamed[RES__COUNT];                /* requests without action */
static uint64_t buckets[NBUCKETS + 1];              /* the last: +Inf */
static uint64_t lat_count;
static int64_t lat_sum_us;

static struct action_slot *slot_of(const char *action)
{
    for (int i = 0; i < nslots; i++)
        if (strcmp(slots[i].name, action) == 0)
            return &slots[i];
    if (nslots < ACTIONS_MAX) {
        snprintf(slots[nslots].name, sizeof slots[nslots].name, "%s", action);
        return &slots[nslots++];
    }
    snprintf(slots[ACTIONS_MAX].name, sizeof slots[ACTIONS_MAX].name, "_other");
    return &slots[ACTIONS_MAX];
}

void metrics_count(const char *action, enum auth_result r, int64_t micros)
{
    size_t b = 0;
    while (b < NBUCKETS && micros > bucket_us[b])
        b++;
    pthread_mutex_lock(&lock);
    if (action)
        slot_of(action)->count[r]++;
    else
        unnamed[r]++;
    buckets[b]++;
    lat_count++;
    lat_sum_us += micros;
    pthread_mutex_unlock(&lock);
}

/* A growing text buffer; on failure it stays failed and renders NULL. */
struct sbuf {
    char *p;
    size_t len, cap;
    int failed;
};

static void put(struct sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct sbuf *s, const char *fmt, ...)
{
    if (s->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            s->failed = 1;
            return;
        }
        if ((size_t)n < s->cap - s->len) {
            s->len += (size_t)n;
            return;
        }
        size_t cap = 2 * s->cap + (size_t)n;
        char *p = realloc(s->p, cap);
        if (!p) {
            s->failed = 1;
            return;
        }
        s->p = p;
        s->cap = cap;
    }
}

/* Action names are the rules' names, but a label value is escaped anyway. */
static void put_label(struct sbuf *s, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            put(s, "\\%c", *v);
        else if (*v == '\n')
            put(s, "\\n");
        else
            put(s, "%c", *v);
    }
}

static void render_checks(struct sbuf *s)
{
    put(s, "# HELP rlstore_auth_checks_total Sub-requests answered, by action and result.\n"
           "# TYPE rlstore_auth_checks_total counter\n");
    int n = nslots + (slots[ACTIONS_MAX].name[0] ? 1 : 0);
    for (int i = 0; i < n; i++) {
        struct action_slot *a = i < nslots ? &slots[i] : &slots[ACTIONS_MAX];
        for (int r = 0; r < RES__COUNT; r++) {
            if (r == RES_BAD_REQUEST && a->count[r] == 0)
                continue;
            put(s, "rlstore_auth_checks_total{action=\"");
            put_label(s, a->name);
            put(s, "\",result=\"%s\"} %llu\n", result_names[r],
                (unsigned long long)a->count[r]);
        }
    }
    for (int r = 0; r < RES__COUNT; r++)
        if (unnamed[r])
            put(s, "rlstore_auth_checks_total{action=\"\",result=\"%s\"} %llu\n",
                result_names[r], (unsigned long long)unnamed[r]);
}

char *metrics_render(size_t *len)
{
    struct sbuf s = {malloc(4096), 0, 4096, 0};
    if (!s.p)
        return NULL;
    pthread_mutex_lock(&lock);
    render_checks(&s);
    put(&s, "# HELP rlstore_auth_check_seconds Time to answer a sub-request.\n"
            "# TYPE rlstore_auth_check_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t b = 0; b < NBUCKETS; b++) {
        cum += buckets[b];
        put(&s, "rlstore_auth_check_seconds_bucket{le=\"%g\"} %llu\n",
            (double)bucket_us[b] / 1e6, (unsigned long long)cum);
    }
    put(&s, "rlstore_auth_check_seconds_bucket{le=\"+Inf\"} %llu\n",
        (unsigned long long)lat_count);
    put(&s, "rlstore_auth_check_seconds_sum %.6f\n", (double)lat_sum_us / 1e6);
    put(&s, "rlstore_auth_check_seconds_count %llu\n", (unsigned long long)lat_count);
    pthread_mutex_unlock(&lock);
    if (s.failed) {
        free(s.p);
        return NULL;
    }
    *len = s.len;
    return s.p;
}
