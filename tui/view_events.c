/*
 * view_events.c - the penalty events under the blocks view (issue #20):
 * blocks imposed, escalated and ended by every process, newest first, as
 * `rlctl events` lists them.  Sampled with the blocks while the blocks
 * view is shown; the blocks list gets at most half the rows when there
 * are events (view_height), the events the rest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rltop.h"

#define EVENTS_SHOWN 200

static void copy_text(char *dst, size_t size, const char *s)
{
    snprintf(dst, size, "%s", s ? s : "");
}

void events_free(model *m)
{
    for (int i = 0; i < m->nevents; i++)
        free(m->events[i].key_esc);
    free(m->events);
    m->events = NULL;
    m->nevents = 0;
}

void events_sample(model *m)
{
    rls_rows *r = NULL;
    if (rls_events_list_at(m->db, NULL, NULL, NULL, 0, EVENTS_SHOWN, &r) != RLS_OK)
        return;   /* a database of an older schema has none: the blocks still show */
    int n = rls_rows_count(r);
    event_row *e = n ? calloc((size_t)n, sizeof *e) : NULL;
    if (n && !e)
        n = 0;
    for (int i = 0; i < n; i++) {
        e[i].ts_ms = rls_rows_int(r, i, rls_rows_find(r, "ts_ms"));
        e[i].until_ms = rls_rows_int(r, i, rls_rows_find(r, "until_ms"));
        e[i].level = rls_rows_int(r, i, rls_rows_find(r, "level"));
        copy_text(e[i].event, sizeof e[i].event, rls_rows_text(r, i, rls_rows_find(r, "event")));
        copy_text(e[i].action, sizeof e[i].action, rls_rows_text(r, i, rls_rows_find(r, "action")));
        copy_text(e[i].rule, sizeof e[i].rule, rls_rows_text(r, i, rls_rows_find(r, "rule")));
        e[i].key_esc = esc_dup(rls_rows_text(r, i, rls_rows_find(r, "key")));
    }
    rls_rows_free(r);
    events_free(m);
    m->events = e;
    m->nevents = n;
}

/* Draws the events from row y0 of w to its end. */
void view_block_events(app *a, WINDOW *w, int y0)
{
    const model *m = &a->m;
    int rows = getmaxy(w), cols = getmaxx(w);
    if (m->nevents == 0 || y0 + 1 >= rows)
        return;
    draw_attr(w, C_TITLE, 1);
    draw_textf(w, y0, 0, cols, "%-20s %-8s %-10s %-24s %-10s %5s  %s", "PENALTY EVENTS",
               "EVENT", "ACTION", "KEY", "RULE", "LEVEL", "UNTIL");
    draw_attr(w, C_TITLE, 0);
    for (int i = 0; i < m->nevents && y0 + 1 + i < rows; i++) {
        const event_row *e = &m->events[i];
        char when[40], until[40];
        fmt_clock(e->ts_ms, when, sizeof when);
        if (e->until_ms)
            fmt_clock(e->until_ms, until, sizeof until);
        else
            snprintf(until, sizeof until, "forever");
        int expire = strcmp(e->event, "expire") == 0;
        draw_attr(w, expire ? C_DIM : C_BLOCKED, 1);
        draw_textf(w, y0 + 1 + i, 0, cols, "%-20s %-8s %-10.10s %-24.24s %-10.10s %5lld  %s",
                   when, e->event, e->action[0] ? e->action : "*", e->key_esc ? e->key_esc : "?",
                   e->rule[0] ? e->rule : "-", (long long)e->level, until);
        draw_attr(w, expire ? C_DIM : C_BLOCKED, 0);
    }
}
