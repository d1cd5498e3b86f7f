/*
 * follow.c - `rlctl hold --syslog`: a log of the penalty events of every
 * process (and on PostgreSQL every host), like fail2ban's, from one
 * service.  Once a second it reads the events newer than the last it
 * logged and sends each as one syslog line (syslog.c); once a minute it
 * runs a GC step, which records the ends of blocks even when no check
 * runs.  Events of before it started (ctx->now_ms: rlctl's start, before
 * "holding" is printed) are not logged.
 */
#include <stdio.h>
#include <string.h>
#include "rlctl.h"

#define FOLLOW_WINDOW_MS (31LL * 86400 * 1000)  /* events' retention, and a day */

static void log_row(const rls_rows *r, int i)
{
    char line[1400], k[1100], t[64];
    const char *ev = row_text(r, i, "event");
    int64_t until = row_int(r, i, "until_ms");
    if (rls_key_escape(row_text(r, i, "key"), k, sizeof k) < 0)
        snprintf(k, sizeof k, "?");
    for (char *p = k; *p; p++)
        if (*p == ' ')
            *p = '_';
    fmt_time(until, "forever", t, sizeof t);
    int expire = ev && strcmp(ev, "expire") == 0;
    snprintf(line, sizeof line, "rlstore: %s key=%s action=%s %s=%s level=%lld rule=%s%s",
             expire ? "UNBAN" : "BAN", k, row_text(r, i, "action"), expire ? "ended" : "until", t,
             (long long)row_int(r, i, "level"), row_text(r, i, "rule"),
             ev && strcmp(ev, "escalate") == 0 ? " escalated" : "");
    rlctl_syslog_line(NULL, expire ? 5 : 4, line);
}

void follow_events(rlctl_ctx *ctx, struct follow_state *st, int64_t now)
{
    rls_rows *r = NULL;
    if (st->started && now - st->read_ms < 1000)
        return;
    st->read_ms = now;
    if (!st->started || now - st->gc_ms >= 60000) {
        int64_t deleted;
        st->gc_ms = now;
        rls_gc_at(ctx->db, 1000, now, &deleted);   /* records ended blocks */
    }
    if (rls_events_list_at(ctx->db, NULL, NULL, NULL, now > FOLLOW_WINDOW_MS ?
                           now - FOLLOW_WINDOW_MS : 0, 1000, &r) != RLS_OK)
        return;   /* the next second tries again */
    int64_t top = st->last_id;
    /* newest first: log oldest first */
    for (int i = rls_rows_count(r) - 1; i >= 0; i--) {
        int64_t id = row_int(r, i, "id");
        if (id <= st->last_id)
            continue;
        if (st->started || row_int(r, i, "ts_ms") >= ctx->now_ms)
            log_row(r, i);
        if (id > top)
            top = id;
    }
    st->last_id = top;
    st->started = 1;
    rls_rows_free(r);
}
