/*
 * pg_sql.c - statement text for PostgreSQL: storage writes every statement
 * once, in SQLite's dialect; this turns it into PostgreSQL's when the
 * PostgreSQL driver prepares it (pg.c).  The differences are few and
 * mechanical:
 *
 *   ?N                      $N
 *   main.t                  t         (one database: no attached schemas)
 *   CROSS JOIN ... ON       JOIN ... ON  (SQLite's way to fix the join order)
 *   BEGIN IMMEDIATE         BEGIN     (row locks do what the write lock did)
 *   INSERT OR IGNORE ...    INSERT ... ON CONFLICT DO NOTHING
 *   max(a, b), min(a, b)    GREATEST(a, b), LEAST(a, b)  (scalar forms only)
 *   total(x)                COALESCE(sum(x), 0)
 *   instr(a, b)             position((b) IN (a))
 *   CAST(x AS BLOB)         CAST(x AS bytea)
 *   CAST(x AS TEXT)         (x)       (keys are bytes; the driver returns them
 *                                      as they are, SQLite's cast did the same)
 *
 * String literals pass untouched.  Anything else is the same in both.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

typedef struct buf {
    char *p;
    size_t len, cap;
    int oom;
} buf;

typedef struct tr_state {
    int max;             /* highest ?N */
    uint32_t bytea;      /* bit N-1: ?N is cast to a blob */
} tr_state;

static void put(buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

static int word_is(const char *w, size_t n, const char *name)
{
    size_t m = strlen(name);
    if (n != m)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)w[i]) != name[i])
            return 0;
    return 1;
}

static size_t skip_blank(const char *s, size_t i, size_t end)
{
    while (i < end && isspace((unsigned char)s[i]))
        i++;
    return i;
}

/* End of the string literal starting at i ('...' with '' inside). */
static size_t literal_end(const char *s, size_t i, size_t end)
{
    size_t j = i + 1;
    while (j < end) {
        if (s[j] == '\'') {
            if (j + 1 < end && s[j + 1] == '\'') {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j++;
    }
    return end;
}

/* Index of the ')' matching the '(' at open, or end. */
static size_t close_paren(const char *s, size_t open, size_t end)
{
    int depth = 0;
    for (size_t i = open; i < end; i++) {
        if (s[i] == '\'') {
            i = literal_end(s, i, end) - 1;
        } else if (s[i] == '(') {
            depth++;
        } else if (s[i] == ')' && --depth == 0) {
            return i;
        }
    }
    return end;
}

/* Splits s[from, to) at top-level commas: up to max argument ranges. */
static int split_args(const char *s, size_t from, size_t to, size_t *a, size_t *z, int max)
{
    int n = 0, depth = 0;
    size_t start = from;
    for (size_t i = from; i <= to; i++) {
        if (i < to && s[i] == '\'') {
            i = literal_end(s, i, to) - 1;
            continue;
        }
        if (i < to && s[i] == '(')
            depth++;
        else if (i < to && s[i] == ')')
            depth--;
        else if (i == to || (s[i] == ',' && depth == 0)) {
            if (n == max)
                return -1;
            a[n] = start;
            z[n] = i;
            n++;
            start = i + 1;
        }
    }
    return n;
}

static void translate(buf *b, const char *s, size_t from, size_t to, tr_state *ts);

/* A function call name(args) at s[i] with the '(' at open: its rewritten
 * form, or 0 when it is not one of ours. */
static int rewrite_call(buf *b, const char *s, size_t i, size_t n, size_t open, size_t to,
                        size_t *next, tr_state *ts)
{
    size_t a[8], z[8];
    size_t close = close_paren(s, open, to);
    if (close >= to)
        return 0;
    int argc = split_args(s, open + 1, close, a, z, 8);
    for (int k = 0; k < argc; k++)
        a[k] = skip_blank(s, a[k], z[k]);
    const char *fn = NULL;
    if (argc >= 2 && word_is(s + i, n, "max"))
        fn = "GREATEST(";
    else if (argc >= 2 && word_is(s + i, n, "min"))
        fn = "LEAST(";
    if (fn) {
        puts_(b, fn);
        for (int k = 0; k < argc; k++) {
            if (k)
                puts_(b, ", ");
            translate(b, s, a[k], z[k], ts);
        }
        puts_(b, ")");
    } else if (argc == 1 && word_is(s + i, n, "total")) {
        puts_(b, "COALESCE(sum(");
        translate(b, s, a[0], z[0], ts);
        puts_(b, "), 0)");
    } else if (argc == 2 && word_is(s + i, n, "instr")) {
        puts_(b, "position((");
        translate(b, s, a[1], z[1], ts);
        puts_(b, ") IN (");
        translate(b, s, a[0], z[0], ts);
        puts_(b, "))");
    } else if (argc == 1 && word_is(s + i, n, "cast")) {
        /* CAST(expr AS type): the type is the last word */
        size_t e = z[0];
        while (e > a[0] && isspace((unsigned char)s[e - 1]))
            e--;
        size_t t = e;
        while (t > a[0] && isalpha((unsigned char)s[t - 1]))
            t--;
        size_t as = t;
        while (as > a[0] && isspace((unsigned char)s[as - 1]))
            as--;
        if (as < a[0] + 2 || !word_is(s + as - 2, 2, "as"))
            return 0;
        size_t ee = as - 2;   /* the end of the expression */
        while (ee > a[0] && isspace((unsigned char)s[ee - 1]))
            ee--;
        if (word_is(s + t, e - t, "text")) {
            puts_(b, "(");
            translate(b, s, a[0], ee, ts);
            puts_(b, ")");
        } else if (word_is(s + t, e - t, "blob")) {
            size_t x = skip_blank(s, a[0], ee);
            if (s[x] == '?') {   /* CAST(?N AS BLOB): ?N is bytes */
                int v = atoi(s + x + 1);
                if (v >= 1 && v <= 32)
                    ts->bytea |= 1u << (v - 1);
            }
            puts_(b, "CAST(");
            translate(b, s, a[0], ee, ts);
            puts_(b, " AS bytea)");
        } else {
            return 0;
        }
    } else {
        return 0;
    }
    *next = close + 1;
    return 1;
}

static void translate(buf *b, const char *s, size_t from, size_t to, tr_state *ts)
{
    size_t i = from;
    while (i < to && !b->oom) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\'') {
            size_t j = literal_end(s, i, to);
            put(b, s + i, j - i);
            i = j;
        } else if (c == '?' && i + 1 < to && isdigit((unsigned char)s[i + 1])) {
            size_t j = i + 1;
            int v = 0;
            while (j < to && isdigit((unsigned char)s[j]))
                v = v * 10 + (s[j++] - '0');
            if (v > ts->max)
                ts->max = v;
            puts_(b, "$");
            put(b, s + i + 1, j - i - 1);
            i = j;
        } else if (isalpha(c) || c == '_') {
            size_t j = i;
            while (j < to && (isalnum((unsigned char)s[j]) || s[j] == '_'))
                j++;
            size_t n = j - i, k = skip_blank(s, j, to), next;
            if (word_is(s + i, n, "main") && k < to && s[k] == '.') {
                i = k + 1;                               /* main.t -> t */
            } else if (word_is(s + i, n, "cross") && to - k >= 4 &&
                       word_is(s + k, 4, "join")) {
                i = k;                                   /* CROSS JOIN -> JOIN */
            } else if (k < to && s[k] == '(' &&
                       rewrite_call(b, s, i, n, k, to, &next, ts)) {
                i = next;
            } else {
                put(b, s + i, n);
                i = j;
            }
        } else {
            put(b, s + i, 1);
            i++;
        }
    }
}

char *rls__pg_translate(const char *sql, int *nparams, uint32_t *bytea)
{
    buf b = {0};
    tr_state ts = {0, 0};
    const char *s = sql;
    size_t len = strlen(sql), i = skip_blank(sql, 0, len);
    int ignore = 0;
    if (len - i >= 15 && strncmp(s + i, "BEGIN IMMEDIATE", 15) == 0) {
        puts_(&b, "BEGIN");
        i += 15;
    } else if (len - i >= 16 && strncmp(s + i, "INSERT OR IGNORE", 16) == 0) {
        puts_(&b, "INSERT");
        i += 16;
        ignore = 1;
    }
    translate(&b, s, i, len, &ts);
    *nparams = ts.max;
    *bytea = ts.bytea;
    if (ignore)
        puts_(&b, " ON CONFLICT DO NOTHING");
    if (!b.p)
        puts_(&b, "");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
