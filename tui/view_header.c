/*
 * view_header.c - the header (database, rules version, check rates, the
 * sparkline of denials, keys, blocks, file sizes, clock, the view tabs)
 * and the status line (messages, key hints, position in the list).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rltop.h"

static const char *const view_names[VIEW_COUNT] = {"Keys", "Rules", "Blocks", "Audit"};
static const char *const sort_names[] = {"use", "key", "reset", "denied"};

void view_header(app *a, WINDOW *w)
{
    const model *m = &a->m;
    int cols = getmaxx(w), x;
    char buf[256], b1[32], b2[32], clock[40];
    int64_t now = now_ms();

    /* line 0: what and where */
    fmt_clock(now, clock, sizeof clock);
    draw_attr(w, C_HEADER, 1);
    x = draw_text(w, 0, 0, cols, "rltop", 0, 0) + 1;
    draw_attr(w, C_HEADER, 0);
    char *p = db_name(a->db_path);
    int room = cols - x - (int)strlen(clock) - 1;
    if (m->version)
        snprintf(buf, sizeof buf, "rules v%lld", (long long)m->version);
    else
        snprintf(buf, sizeof buf, "no rules");
    int vw = (int)strlen(buf) + 2;
    x += draw_text(w, 0, x, room - vw > 8 ? room - vw : room, p, 0, 0);
    free(p);
    if (room - vw > 8) {
        draw_attr(w, m->version ? C_NORMAL : C_ERROR, 1);
        draw_text(w, 0, x + 2, vw, buf, 0, 0);
        draw_attr(w, m->version ? C_NORMAL : C_ERROR, 0);
    }
    draw_text(w, 0, cols - (int)strlen(clock), (int)strlen(clock), clock, 0, 0);

    /* line 1: rates and the sparkline of denials */
    snprintf(buf, sizeof buf, "checks/s %8.1f ok ", m->allowed_rate);
    x = draw_text(w, 1, 0, cols, buf, 0, 0);
    draw_attr(w, m->denied_rate > 0 ? C_LIMITED : C_NORMAL, 1);
    snprintf(buf, sizeof buf, "%7.1f denied", m->denied_rate);
    x += draw_text(w, 1, x, cols - x, buf, 0, 0);
    draw_attr(w, m->denied_rate > 0 ? C_LIMITED : C_NORMAL, 0);
    if (cols - x > 24) {
        snprintf(buf, sizeof buf, "  denied/s, %dm%s%s: ", SPARK_SECONDS / 60,
                 m->f_action[0] ? " " : "", m->f_action);
        x += draw_text(w, 1, x, cols - x, buf, 0, 0);
        draw_spark(a, w, 1, x, cols - x);
    }

    /* line 2: keys, blocks, files */
    if (m->tracked < 0)
        snprintf(b1, sizeof b1, "?");
    else
        snprintf(b1, sizeof b1, "%ld", m->tracked);
    x = draw_textf(w, 2, 0, cols, "keys %s tracked", b1);
    if (m->f_substr[0] && m->total >= 0)
        x += draw_textf(w, 2, x, cols - x, " (%ld shown)", m->total);
    draw_attr(w, m->nblocked ? C_BLOCKED : C_NORMAL, 1);
    x += draw_textf(w, 2, x, cols - x, "  %d blocked", m->nblocked);
    draw_attr(w, m->nblocked ? C_BLOCKED : C_NORMAL, 0);
    if (!db_is_uri(m->path))   /* a PostgreSQL database has no files to size */
        x += draw_textf(w, 2, x, cols - x, "  db %s  wal %s",
                        fmt_bytes(m->db_bytes, b1, sizeof b1),
                        fmt_bytes(m->wal_bytes, b2, sizeof b2));

    /* line 3: tabs, filters and sampling */
    x = 0;
    for (int v = 0; v < VIEW_COUNT; v++) {
        snprintf(buf, sizeof buf, " %d %s ", v + 1, view_names[v]);
        draw_attr(w, v == a->view ? C_SELECT : C_DIM, 1);
        x += draw_text(w, 3, x, cols - x, buf, 0, 0);
        draw_attr(w, v == a->view ? C_SELECT : C_DIM, 0);
        x += draw_text(w, 3, x, cols - x, " ", 0, 0);
    }
    buf[0] = '\0';
    if (a->view == VIEW_KEYS) {
        char *f = m->f_substr[0] ? esc_dup(m->f_substr) : NULL;
        snprintf(buf, sizeof buf, "sort:%s%s%s%s%s%s", sort_names[m->sort % 4],
                 m->invert ? " inverted" : "",
                 m->f_action[0] ? " action:" : "", m->f_action, f ? " key~" : "", f ? f : "");
        free(f);
    }
    size_t bl = strlen(buf);
    if (m->keys_cost_ms > 250.0 && bl < sizeof buf - 40)
        snprintf(buf + bl, sizeof buf - bl, "%sslow: %.1fs/sample", bl ? "  " : "",
                 m->keys_cost_ms / 1000.0);
    int bw = text_width(buf);
    if (cols - x > bw + 1)
        draw_text(w, 3, cols - bw, bw, buf, 0, 0);
}

/* An input bar (F3 search, F4 filter) in the status line, as htop's:
 * "Search: text", the text in reverse video, "not found" after it. */
static void status_bar(app *a, WINDOW *w, int cols)
{
    const dialog *d = &a->dlg;
    char *t = esc_dup(d->buf);
    draw_attr(w, C_HEADER, 1);
    int x = draw_textf(w, 0, 0, cols, "%s: ", d->title);
    draw_attr(w, C_HEADER, 0);
    draw_attr(w, d->failed ? C_ERROR : C_SELECT, 1);
    x += draw_textf(w, 0, x, cols - x, "%s ", t ? t : "");
    draw_attr(w, d->failed ? C_ERROR : C_SELECT, 0);
    free(t);
    draw_attr(w, C_DIM, 1);
    draw_text(w, 0, x, cols - x, d->failed ? "  not found" :
              d->changed && strcmp(d->title, "Search") == 0 ? "  F3 next  Enter done  Esc close"
                                                            : "  Enter keep  Esc clear", 0, 0);
    draw_attr(w, C_DIM, 0);
}

void view_status(app *a, WINDOW *w)
{
    int cols = getmaxx(w), x = 0;
    char pos[64] = "";
    long n = view_count(a, a->view);
    if (n > 0)
        snprintf(pos, sizeof pos, " %ld/%ld%s", a->sel[a->view] + 1, n,
                 a->view == VIEW_KEYS && a->m.total < 0 ? "+" : "");
    else if (a->view == VIEW_KEYS && a->m.total < 0)
        snprintf(pos, sizeof pos, " ...");
    int pw = (int)strlen(pos);
    if (a->dlg.kind == DLG_INPUT && a->dlg.bar) {
        status_bar(a, w, cols - pw - 1);
    } else if (a->msg[0] && now_ms() - a->msg_ms < 15000) {
        draw_attr(w, a->msg_err ? C_ERROR : C_OK, 1);
        x = draw_text(w, 0, 0, cols - pw - 1, a->msg, 0, 0);
        draw_attr(w, a->msg_err ? C_ERROR : C_OK, 0);
    } else if (a->m.err[0]) {
        draw_attr(w, C_ERROR, 1);
        x = draw_text(w, 0, 0, cols - pw - 1, a->m.err, 0, 0);
        draw_attr(w, C_ERROR, 0);
    } else {
        static const char *const hints[VIEW_COUNT] = {
            "?:help F3:search F4:filter F6:sort a:action Enter:detail u:unblock b:block t:tier "
            "o:override r:reset e:edit q:quit",
            "?:help R:roll back to the selected version e:edit a limit Tab:next view q:quit",
            "?:help u:unblock the selected block Tab:next view q:quit",
            "?:help Tab:next view q:quit",
        };
        if (a->view == VIEW_KEYS && a->m.f_substr[0]) {   /* the filter shows itself */
            char *f = esc_dup(a->m.f_substr);
            draw_attr(w, C_HEADER, 1);
            x = draw_textf(w, 0, 0, cols - pw - 1, "filter: %s ", f ? f : "?");
            draw_attr(w, C_HEADER, 0);
            free(f);
        }
        draw_attr(w, C_DIM, 1);
        x += draw_text(w, 0, x, cols - pw - 1 - x, hints[a->view], 0, 0);
        draw_attr(w, C_DIM, 0);
    }
    (void)x;
    if (pw && cols > pw)
        draw_text(w, 0, cols - pw, pw, pos, 0, 0);
}
