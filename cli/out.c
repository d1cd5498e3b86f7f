/*
 * out.c - output of rlctl: tables (aligned on a terminal, tab-separated
 * otherwise), a small JSON writer (RFC 8259) and the generic printing of
 * the library's result sets (rls_rows).
 *
 * Every text that came from the database or the command line is escaped
 * with rls_key_escape() before it reaches a terminal or a TSV line, so
 * control bytes can neither corrupt the layout nor reach the terminal.
 * JSON strings are always valid UTF-8: keys are escaped with
 * rls_key_escape() first, other invalid bytes become U+FFFD.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "rlctl.h"

/* ---- text helpers ------------------------------------------------------ */



const char *fmt_time(int64_t ms, const char *zero, char *buf, size_t size)
{
    if (ms == 0 && zero)
        return zero;
    if (rls_time_format(ms, buf, size) < 0)
        snprintf(buf, size, "%lld", (long long)ms);
    return buf;
}

const char *fmt_dur(int64_t ms, char *buf, size_t size)
{
    static const struct { const char *unit; int64_t ms; } units[] = {
        {"d", 86400000}, {"h", 3600000}, {"m", 60000},
    };
    size_t n = 0;
    if (ms == -1)
        return snprintf(buf, size, "never"), buf;
    if (ms == 0)
        return snprintf(buf, size, "0"), buf;
    if (ms < 1000)
        return snprintf(buf, size, "%lldms", (long long)ms), buf;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof units / sizeof units[0] && n < size; i++) {
        if (ms >= units[i].ms) {
            n += (size_t)snprintf(buf + n, size - n, "%lld%s", (long long)(ms / units[i].ms),
                                  units[i].unit);
            ms %= units[i].ms;
        }
    }
    if (ms > 0 && n < size) {
        if (ms % 1000)
            snprintf(buf + n, size - n, "%lld.%03llds", (long long)(ms / 1000),
                     (long long)(ms % 1000));
        else
            snprintf(buf + n, size - n, "%llds", (long long)(ms / 1000));
    }
    return buf;
}

const char *fmt_dur_cell(const rlctl_ctx *ctx, int64_t ms, char *buf, size_t size)
{
    if (ctx->tty)
        return fmt_dur(ms, buf, size);
    snprintf(buf, size, "%lld", (long long)ms);
    return buf;
}

/* ---- tables --------------------------------------------------------------- */

struct out_table {
    int ncols, nrows, cap, failed;
    char **headers;
    int *right;
    char **cells;  /* nrows * ncols */
};

out_table *tab_new(int ncols, const char *const *headers)
{
    out_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ncols = ncols;
    t->headers = calloc((size_t)ncols, sizeof *t->headers);
    t->right = calloc((size_t)ncols, sizeof *t->right);
    if (!t->headers || !t->right) {
        tab_free(t);
        return NULL;
    }
    for (int c = 0; c < ncols; c++) {
        const char *h = headers[c];
        t->right[c] = h[0] == '>';
        t->headers[c] = strdup(h + t->right[c]);
        if (!t->headers[c])
            t->failed = 1;
    }
    return t;
}

int tab_row(out_table *t)
{
    if (!t)
        return -1;
    if (t->nrows == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        char **n = realloc(t->cells, sizeof *n * (size_t)cap * (size_t)t->ncols);
        if (!n) {
            t->failed = 1;
            return -1;
        }
        t->cells = n;
        t->cap = cap;
    }
    memset(&t->cells[(size_t)t->nrows * (size_t)t->ncols], 0, sizeof(char *) * (size_t)t->ncols);
    return t->nrows++;
}

static void set_owned(out_table *t, int col, char *s)
{
    if (!t || t->nrows == 0 || col < 0 || col >= t->ncols) {
        free(s);
        return;
    }
    char **cell = &t->cells[(size_t)(t->nrows - 1) * (size_t)t->ncols + (size_t)col];
    free(*cell);
    *cell = s;
    if (!s)
        t->failed = 1;
}

void tab_set(out_table *t, int col, const char *text)
{
    set_owned(t, col, strdup(text ? text : "-"));
}

void tab_setf(out_table *t, int col, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tab_set(t, col, buf);
}

void tab_set_esc(out_table *t, int col, const char *s)
{
    if (!s)
        tab_set(t, col, NULL);
    else
        set_owned(t, col, esc_dup(s));
}

int tab_rows(const out_table *t)
{
    return t ? t->nrows : 0;
}

int tab_failed(const out_table *t)
{
    return !t || t->failed ? RLCTL_EXIT_STORAGE : 0;
}

/* Display width: code points of (escaped, hence valid) UTF-8. */
static int width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

static const char *cell_at(const out_table *t, int r, int c)
{
    const char *s = t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
    return s ? s : "-";
}

static void pad(int n)
{
    while (n-- > 0)
        putchar(' ');
}

void tab_print(const out_table *t, int tty)
{
    if (!t)
        return;
    if (!tty) {
        for (int r = 0; r < t->nrows; r++)
            for (int c = 0; c < t->ncols; c++)
                printf("%s%c", cell_at(t, r, c), c + 1 < t->ncols ? '\t' : '\n');
        return;
    }
    int *w = calloc((size_t)t->ncols, sizeof *w);
    if (!w)
        return;
    for (int c = 0; c < t->ncols; c++) {
        w[c] = width(t->headers[c] ? t->headers[c] : "");
        for (int r = 0; r < t->nrows; r++)
            if (width(cell_at(t, r, c)) > w[c])
                w[c] = width(cell_at(t, r, c));
    }
    for (int r = -1; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = r < 0 ? (t->headers[c] ? t->headers[c] : "") : cell_at(t, r, c);
            int last = c + 1 == t->ncols;
            if (t->right[c])
                pad(w[c] - width(s));
            fputs(s, stdout);
            if (!last) {
                if (!t->right[c])
                    pad(w[c] - width(s));
                fputs("  ", stdout);
            }
        }
        putchar('\n');
    }
    free(w);
}

void tab_free(out_table *t)
{
    if (!t)
        return;
    for (int c = 0; t->headers && c < t->ncols; c++)
        free(t->headers[c]);
    for (size_t i = 0; i < (size_t)t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->headers);
    free(t->right);
    free(t);
}

/* ---- JSON ------------------------------------------------------------------- */

#define JSON_DEPTH 32
static int jdepth, jafter_key;
static int jcount[JSON_DEPTH];

static void pre_value(void)
{
    if (jafter_key) {
        jafter_key = 0;
        return;
    }
    if (jdepth > 0 && jcount[jdepth - 1]++ > 0)
        putchar(',');
}

static void open_nest(int ch)
{
    pre_value();
    putchar(ch);
    if (jdepth < JSON_DEPTH)
        jcount[jdepth] = 0;
    jdepth++;
}

static void close_nest(int ch)
{
    if (jdepth > 0)
        jdepth--;
    putchar(ch);
}

void json_obj_begin(void) { open_nest('{'); }
void json_obj_end(void) { close_nest('}'); }
void json_arr_begin(void) { open_nest('['); }
void json_arr_end(void) { close_nest(']'); }

/* Length of the valid UTF-8 sequence at s, or 0 if invalid (overlong
 * forms, surrogates and code points above U+10FFFF are invalid). */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F))
            return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F))
            return 0;
        return 4;
    }
    return 0;
}

/* A valid UTF-8 sequence of n > 1 bytes that rls_key_escape() would not
 * show as it is (a C1 control, a format character such as U+202E): written
 * as \uXXXX, so the JSON text holds no such character and its value is
 * still exactly the string. */
static int put_hidden(const unsigned char *s, int n)
{
    char one[5], shown[24];
    memcpy(one, s, (size_t)n);
    one[n] = '\0';
    if (rls_key_escape(one, shown, sizeof shown) == n)
        return 0;
    unsigned cp = s[0] & (n == 2 ? 0x1Fu : n == 3 ? 0x0Fu : 0x07u);
    for (int j = 1; j < n; j++)
        cp = cp << 6 | (s[j] & 0x3Fu);
    if (cp > 0xFFFF)
        printf("\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF));
    else
        printf("\\u%04x", cp);
    return 1;
}

static void put_string(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    putchar('"');
    while (*s) {
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            putchar('\\');
            putchar((int)c);
            s++;
        } else if (c == '\n') {
            fputs("\\n", stdout), s++;
        } else if (c == '\t') {
            fputs("\\t", stdout), s++;
        } else if (c == '\r') {
            fputs("\\r", stdout), s++;
        } else if (c < 0x20 || c == 0x7F) {
            printf("\\u%04x", c);
            s++;
        } else {
            int n = utf8_len(s);
            if (n == 0) {
                fputs("\\ufffd", stdout);
                s++;
            } else {
                if (n == 1 || !put_hidden(s, n))
                    fwrite(s, 1, (size_t)n, stdout);
                s += n;
            }
        }
    }
    putchar('"');
}

void json_key(const char *k)
{
    pre_value();
    put_string(k);
    putchar(':');
    jafter_key = 1;
}

void json_str(const char *s)
{
    if (!s) {
        json_null();
        return;
    }
    pre_value();
    put_string(s);
}

void json_key_str(const char *s)
{
    char *e = s ? esc_dup(s) : NULL;
    if (s && !e)
        json_str("?");
    else
        json_str(e);
    free(e);
}

void json_int(int64_t v)
{
    pre_value();
    printf("%lld", (long long)v);
}

void json_bool(int b)
{
    pre_value();
    fputs(b ? "true" : "false", stdout);
}

void json_null(void)
{
    pre_value();
    fputs("null", stdout);
}

void json_end_line(void)
{
    putchar('\n');
    jdepth = 0;
    jafter_key = 0;
}

/* ---- typed values ----------------------------------------------------------- */

void json_opt_str(const char *s)
{
    if (!s || !*s)
        json_null();
    else
        json_str(s);
}

void json_time(const char *stem, int64_t ms)
{
    char name[64], iso[40];
    snprintf(name, sizeof name, "%s_ms", stem);
    json_key(name);
    if (ms)
        json_int(ms);
    else
        json_null();
    snprintf(name, sizeof name, "%s_at", stem);
    json_key(name);
    if (ms && rls_time_format(ms, iso, sizeof iso) > 0)
        json_str(iso);
    else
        json_null();
}

/* ---- result sets ------------------------------------------------------------ */

/*
 * How the library's columns are typed in JSON (rlctl(1), JSON OUTPUT): the
 * library's rows carry flags and times as integers; JSON says what they
 * are.  A column not listed is written as its type (integer or text), an
 * empty text as null.
 */
enum json_kind { JK_PLAIN, JK_BOOL, JK_TIME, JK_EPOCH_S };
static const struct {
    const char *col;
    int kind;
} json_cols[] = {
    {"active", JK_BOOL},      {"allowed", JK_BOOL},       {"blocked", JK_BOOL},
    {"calendar", JK_BOOL},
    {"count_denied", JK_BOOL}, {"is_default", JK_BOOL},   {"overridden", JK_BOOL},
    {"unlimited", JK_BOOL},   {"created_ms", JK_TIME},    {"ts_ms", JK_TIME},
    {"until_ms", JK_TIME},    {"expires_ms", JK_TIME},    {"block_until_ms", JK_TIME},
    {"last_ms", JK_TIME},     {"sec", JK_EPOCH_S},
};

static int json_kind_of(const char *name, const char *const *counts)
{
    for (int i = 0; counts && counts[i]; i++)
        if (strcmp(counts[i], name) == 0)
            return JK_PLAIN;
    for (size_t i = 0; i < sizeof json_cols / sizeof json_cols[0]; i++)
        if (strcmp(json_cols[i].col, name) == 0)
            return json_cols[i].kind;
    return JK_PLAIN;
}

static int is_key_col(const char *name)
{
    return strcmp(name, "key") == 0 || strcmp(name, "pattern") == 0;
}

/* An integer cell as its kind says: a flag, a time (0 = none: null) as
 * NAME_ms and NAME_at, epoch seconds as time_ms and time_at. */
static void json_int_cell(const char *name, int kind, int64_t v)
{
    if (kind == JK_TIME) {
        char stem[64];
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(name) - 3), name);
        json_time(stem, v);
        return;
    }
    if (kind == JK_EPOCH_S) {
        json_time("time", v * 1000);
        return;
    }
    json_key(name);
    if (kind == JK_BOOL)
        json_bool(v != 0);
    else
        json_int(v);
}

static void row_obj(const rls_rows *rows, int row, const char *const *counts)
{
    json_obj_begin();
    if (row < rls_rows_count(rows)) {
        for (int c = 0; c < rls_rows_columns(rows); c++) {
            const char *name = rls_rows_name(rows, c);
            int kind = json_kind_of(name, counts);
            if (rls_rows_type(rows, c) == RLS_COL_INT && !rls_rows_is_null(rows, row, c)) {
                json_int_cell(name, kind, rls_rows_int(rows, row, c));
                continue;
            }
            const char *text = rls_rows_text(rows, row, c);
            if (kind == JK_TIME && rls_rows_is_null(rows, row, c)) {
                json_int_cell(name, kind, 0);
                continue;
            }
            json_key(name);
            if (!text || !*text)
                json_null();
            else if (is_key_col(name))
                json_key_str(text);
            else
                json_str(text);
        }
    }
    json_obj_end();
}

void json_row_obj(const rls_rows *rows, int row)
{
    row_obj(rows, row, NULL);
}

void json_rows_counting(const rls_rows *rows, const char *const *counts)
{
    json_arr_begin();
    for (int r = 0; r < rls_rows_count(rows); r++)
        row_obj(rows, r, counts);
    json_arr_end();
}

void json_rows(const rls_rows *rows)
{
    json_rows_counting(rows, NULL);
}

const char *row_text(const rls_rows *r, int row, const char *col)
{
    return rls_rows_text(r, row, rls_rows_find(r, col));
}

int64_t row_int(const rls_rows *r, int row, const char *col)
{
    return rls_rows_int(r, row, rls_rows_find(r, col));
}

int row_has(const rls_rows *r, const char *col)
{
    return rls_rows_find(r, col) >= 0;
}

static void set_cell(const rlctl_ctx *ctx, out_table *t, int tc, const rls_rows *rows, int r,
                     const col_spec *cs)
{
    char buf[64];
    int c = rls_rows_find(rows, cs->col);
    if (c < 0 || rls_rows_is_null(rows, r, c)) {
        tab_set(t, tc, NULL);
        return;
    }
    if (rls_rows_type(rows, c) == RLS_COL_TEXT) {
        const char *s = rls_rows_text(rows, r, c);
        if (!s || !*s)
            tab_set(t, tc, cs->kind == COL_ACTION ? "*" : "-");
        else
            tab_set_esc(t, tc, s);
        return;
    }
    int64_t v = rls_rows_int(rows, r, c);
    switch (cs->kind) {
    case COL_TIME:
        tab_set(t, tc, fmt_time(v, "-", buf, sizeof buf));
        break;
    case COL_UNTIL:
        tab_set(t, tc, fmt_time(v, "forever", buf, sizeof buf));
        break;
    case COL_EXPIRES:
        tab_set(t, tc, fmt_time(v, "never", buf, sizeof buf));
        break;
    case COL_WINDOW: {
        int cal = rls_rows_find(rows, "calendar"), wt = rls_rows_find(rows, "window");
        if (ctx->tty && cal >= 0 && wt >= 0 && rls_rows_int(rows, r, cal)) {
            tab_set_esc(t, tc, rls_rows_text(rows, r, wt));
            break;
        }
        tab_set(t, tc, fmt_dur_cell(ctx, v, buf, sizeof buf));
        break;
    }
    case COL_DUR:
        tab_set(t, tc, fmt_dur_cell(ctx, v, buf, sizeof buf));
        break;
    case COL_BOOL:
        tab_set(t, tc, v ? "yes" : "no");
        break;
    case COL_PPM:
        tab_setf(t, tc, "%lld.%lld%%", (long long)(v / 10000), (long long)(v % 10000 / 1000));
        break;
    default:
        tab_setf(t, tc, "%lld", (long long)v);
        break;
    }
}

void print_rows_table(const rlctl_ctx *ctx, const rls_rows *rows, const col_spec *cols,
                      int ncols)
{
    const char *headers[32];
    if (ncols > 32)
        ncols = 32;
    for (int c = 0; c < ncols; c++)
        headers[c] = cols[c].header;
    out_table *t = tab_new(ncols, headers);
    for (int r = 0; t && r < rls_rows_count(rows); r++) {
        if (tab_row(t) < 0)
            break;
        for (int c = 0; c < ncols; c++)
            set_cell(ctx, t, c, rows, r, &cols[c]);
    }
    tab_print(t, ctx->tty);
    tab_free(t);
}

void print_rows(rlctl_ctx *ctx, const rls_rows *rows, const col_spec *cols, int ncols)
{
    if (ctx->json) {
        json_rows(rows);
        json_end_line();
        return;
    }
    print_rows_table(ctx, rows, cols, ncols);
}
