/*
 * batch.c - plain-text snapshots (-b, or when stdout is not a terminal):
 * the header figures and the most pressing keys as aligned columns, keys
 * escaped, no terminal control sequences.  Snapshots are separated by a
 * blank line and taken every -d seconds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rltop.h"

#define BCOLS 10

static void pad_to(const char *s, int width, int right)
{
    int w = text_width(s);
    if (right)
        printf("%*s%s", width - w > 0 ? width - w : 0, "", s);
    else
        printf("%s%*s", s, width - w > 0 ? width - w : 0, "");
}

static void print_table(app *a)
{
    static const char *const head[BCOLS] = {"ACTION", "KEY", "TIER", "RULE", "USED",
                                             "LIMIT", "LEFT", "DENIED", "RESETS", "STATE"};
    static const int right[BCOLS] = {0, 0, 0, 0, 1, 1, 1, 1, 1, 0};
    const model *m = &a->m;
    int n = m->nrows < a->batch_rows ? m->nrows : a->batch_rows;
    char (*cell)[BCOLS][96] = n ? calloc((size_t)n, sizeof *cell) : NULL;
    int w[BCOLS];
    int64_t now = now_ms();
    if (n && !cell)
        n = 0;
    for (int c = 0; c < BCOLS; c++)
        w[c] = (int)strlen(head[c]);
    for (int i = 0; i < n; i++) {
        const key_row *r = &m->rows[i];
        char d[32];
        int64_t left = r->reset_ms > 0 ? r->reset_ms - (now - m->keys_ms) : 0;
        snprintf(cell[i][0], 96, "%s", r->action);
        snprintf(cell[i][1], 96, "%s", r->key_esc ? r->key_esc : "?");
        snprintf(cell[i][2], 96, "%s", r->tier);
        snprintf(cell[i][3], 96, "%s", r->rule[0] ? r->rule : "-");
        if (r->blocked && r->limit == 0) {   /* a blocked key reports no limit */
            snprintf(cell[i][4], 96, "-");
            snprintf(cell[i][5], 96, "-");
            snprintf(cell[i][6], 96, "-");
        } else {
            snprintf(cell[i][4], 96, "%lld", (long long)r->used);
            snprintf(cell[i][5], 96, "%lld", (long long)r->limit);
            snprintf(cell[i][6], 96, "%lld", (long long)r->remaining);
        }
        snprintf(cell[i][7], 96, "%lld", (long long)r->denied);
        snprintf(cell[i][8], 96, "%s", fmt_left(left > 0 ? left : 0, d, sizeof d));
        if (strcmp(r->state, "blocked") == 0 && r->block_until_ms > 0) {
            int64_t b = r->block_until_ms - now;
            snprintf(cell[i][9], 96, "blocked %s", fmt_left(b > 0 ? b : 1, d, sizeof d));
        } else {
            snprintf(cell[i][9], 96, "%s", r->state);
        }
        for (int c = 0; c < BCOLS; c++)
            if (text_width(cell[i][c]) > w[c])
                w[c] = text_width(cell[i][c]);
    }
    for (int i = -1; i < n; i++) {
        for (int c = 0; c < BCOLS; c++) {
            const char *s = i < 0 ? head[c] : cell[i][c];
            if (c == BCOLS - 1)
                printf("%s\n", s);
            else {
                pad_to(s, w[c], right[c]);
                fputs("  ", stdout);
            }
        }
    }
    free(cell);
    if (m->total > n)
        printf("(%ld more; --rows N shows more)\n", m->total - n);
    else if (m->total < 0 && m->nrows > n)
        printf("(more keys; --rows N shows more)\n");
}

static void snapshot(app *a)
{
    const model *m = &a->m;
    char clock[40], b1[32], b2[32];
    int64_t denied5 = 0;
    for (int i = 0; i < SPARK_SECONDS; i++)
        denied5 += m->spark[i];
    char *path = db_name(a->db_path);
    printf("rltop %s  %s  %s  ", rls_version_string(), path ? path : "?",
           fmt_clock(now_ms(), clock, sizeof clock));
    free(path);
    if (m->version)
        printf("rules v%lld\n", (long long)m->version);
    else
        printf("no rules\n");
    printf("checks/s: %.1f admitted, %.1f denied (last 10s); %lld denied in the last %dm%s%s\n",
           m->allowed_rate, m->denied_rate, (long long)denied5, SPARK_SECONDS / 60,
           m->f_action[0] ? "; action " : "", m->f_action);
    if (m->tracked >= 0)
        printf("keys: %ld tracked, ", m->tracked);
    else
        printf("keys: ? tracked, ");
    printf("%d blocked", m->nblocked);
    if (!db_is_uri(m->path))   /* a PostgreSQL database has no files to size */
        printf("; db %s, wal %s", fmt_bytes(m->db_bytes, b1, sizeof b1),
               fmt_bytes(m->wal_bytes, b2, sizeof b2));
    printf("\n\n");
    if (m->no_rules)
        printf("no rules have been applied to this database yet\n");
    else if (m->nrows == 0)
        printf("%s\n", m->f_action[0] ? "no keys of this action are tracked"
                                      : "no keys are tracked yet");
    else
        print_table(a);
}

static void pause_s(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int batch_run(app *a)
{
    draw_setup(0, locale_utf8());
    a->list_rows = a->batch_rows;
    for (int i = 0; i < a->nsnap; i++) {
        if (i > 0) {
            pause_s(a->interval_s);
            putchar('\n');
        }
        model_sample(a, 1);
        if (a->m.err[0]) {
            fflush(stdout);
            char *e = msg_esc_dup(a->m.err);   /* may quote a library message */
            fprintf(stderr, "rltop: %s\n", e ? e : a->m.err);
            free(e);
            return RLTOP_EXIT_STORAGE;
        }
        snapshot(a);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "rltop: cannot write output: %s\n", strerror(errno));
            return RLTOP_EXIT_STORAGE;
        }
    }
    return a->m.no_rules ? RLTOP_EXIT_CONFIG : RLTOP_EXIT_OK;
}
