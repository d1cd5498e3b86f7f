/*
 * draw.c - drawing helpers shared by the views: width-aware text (keys are
 * escaped first, then measured with wcwidth so wide characters never break
 * the columns), colours or their monochrome stand-ins, bars, the sparkline
 * and compact formats for durations, sizes and times.
 */
#include <langinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include "rltop.h"

static int use_color, use_utf8;

int locale_utf8(void)
{
    const char *cs = nl_langinfo(CODESET);
    return cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

void draw_setup(int color, int utf8)
{
    use_color = color;
    use_utf8 = utf8;
}



char *db_name(const char *path)
{
    char *r = db_redact(path);
    char *e = r ? esc_dup(r) : NULL;
    free(r);
    return e;
}

/* Monochrome stand-ins for the colour pairs. */
static attr_t mono_attr(int c)
{
    switch (c) {
    case C_HEADER: case C_NEAR: case C_LIMITED: case C_ERROR: return A_BOLD;
    case C_BLOCKED: return A_BOLD | A_UNDERLINE;
    case C_SELECT: case C_TITLE: return A_REVERSE;
    case C_DIM: return A_DIM;
    default: return A_NORMAL;
    }
}

static attr_t color_attr(int c)
{
    attr_t extra = c == C_LIMITED || c == C_BLOCKED || c == C_ERROR || c == C_HEADER ? A_BOLD : 0;
    if (c == C_NORMAL)
        return A_NORMAL;
    return COLOR_PAIR(c) | extra;
}

void draw_attr(WINDOW *win, int color, int on)
{
    attr_t at = use_color ? color_attr(color) : mono_attr(color);
    if (on)
        wattron(win, at);
    else
        wattroff(win, at);
}

/* Decodes one UTF-8 character of s; returns its length (>= 1). */
static int next_wc(const char *s, wchar_t *wc)
{
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t n = use_utf8 ? mbrtowc(wc, s, strlen(s), &st) : (size_t)-1;
    if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
        unsigned char c = (unsigned char)*s;
        *wc = c >= 0x20 && c < 0x7f ? (wchar_t)c : L'?';
        return 1;
    }
    return (int)n;
}

static int wc_width(wchar_t wc)
{
    int w = wcwidth(wc);
    return w < 0 ? 1 : w;
}

/* Every text is measured and drawn escaped (msg_esc_dup): a control or
 * format character that reached a view unescaped (a library message
 * quoting raw input) would move the cursor or reverse the rest of the
 * line; escaped text, such as a key, is left as it is. */
int text_width(const char *text)
{
    int w = 0;
    wchar_t wc;
    char *e = msg_esc_dup(text);
    const char *s = e ? e : text;
    while (s && *s) {
        s += next_wc(s, &wc);
        w += wc_width(wc);
    }
    free(e);
    return w;
}

/* Columns of the word at s (up to a space, a newline or the end). */
static int word_width(const char *s)
{
    int w = 0;
    while (*s && *s != ' ' && *s != '\n') {
        wchar_t wc;
        s += next_wc(s, &wc);
        w += wc_width(wc);
    }
    return w;
}

const char *wrap_line(const char *text, int width, char *line, size_t size)
{
    const char *s = text, *brk = NULL;
    int w = 0;
    if (!text || !*text)
        return NULL;
    if (width < 1)
        width = 1;
    while (*s && *s != '\n') {
        wchar_t wc;
        int len = next_wc(s, &wc), cw = wc_width(wc);
        if (w + cw > width && s > text)
            break;
        if (*s == ' ')
            brk = s;
        w += cw;
        s += len;
    }
    const char *end = s, *next = s;
    if (*s == '\n' || *s == ' ') {
        next = s + 1;
    } else if (*s && brk && brk > text && word_width(brk + 1) <= width) {
        end = brk;   /* a word does not fit: wrap before it */
        next = brk + 1;
    }   /* else a word wider than a line (a long key): cut where the width ends */
    size_t n = (size_t)(end - text);
    if (n >= size)
        n = size - 1;
    memcpy(line, text, n);
    line[n] = '\0';
    return next;
}

int wrap_count(const char *text, int width)
{
    char line[1024];
    int n = 0;
    for (const char *p = text; p && *p; p = wrap_line(p, width, line, sizeof line))
        n++;
    return n;
}

int draw_text(WINDOW *win, int y, int x, int width, const char *text, int pad, int right)
{
    wchar_t buf[512];
    int n = 0, w = 0;
    if (width <= 0)
        return 0;
    char *e = msg_esc_dup(text);
    const char *s = e ? e : text ? text : "";
    while (*s && n < (int)(sizeof buf / sizeof buf[0]) - 1) {
        wchar_t wc;
        int len = next_wc(s, &wc), cw = wc_width(wc);
        if (w + cw > width) {
            if (n > 0 && width >= 2 && use_utf8) {   /* mark the cut */
                while (n > 0 && w + 1 > width)
                    w -= wc_width(buf[--n]);
                buf[n++] = L'\x2026';
                w += 1;
            }
            break;
        }
        buf[n++] = wc;
        w += cw;
        s += len;
    }
    buf[n] = L'\0';
    int lead = right && w < width ? width - w : 0;
    if (lead)
        mvwprintw(win, y, x, "%*s", lead, "");
    mvwaddnwstr(win, y, x + lead, buf, n);
    if (pad && !right && w < width)
        wprintw(win, "%*s", width - w, "");
    free(e);
    return lead + w;
}

int draw_textf(WINDOW *win, int y, int x, int width, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return draw_text(win, y, x, width, buf, 0, 0);
}

int state_color(const char *state)
{
    if (strcmp(state, "near") == 0)
        return C_NEAR;
    if (strcmp(state, "limited") == 0)
        return C_LIMITED;
    if (strcmp(state, "blocked") == 0)
        return C_BLOCKED;
    if (strcmp(state, "shadow") == 0)
        return C_SHADOW;
    return C_OK;
}

void draw_bar(app *a, WINDOW *win, int y, int x, int width, int64_t ppm, int color)
{
    static const wchar_t eighths[] = L" \x258f\x258e\x258d\x258c\x258b\x258a\x2589\x2588";
    (void)a;
    if (width <= 0)
        return;
    if (ppm < 0)
        ppm = 0;
    if (ppm > 1000000)
        ppm = 1000000;
    int64_t units = ppm * width * 8 / 1000000;   /* eighths of a cell */
    wmove(win, y, x);
    draw_attr(win, color, 1);
    for (int i = 0; i < width; i++) {
        int64_t u = units - (int64_t)i * 8;
        int e = u >= 8 ? 8 : u > 0 ? (int)u : 0;
        if (use_utf8) {
            wchar_t w[2] = {e ? eighths[e] : L'\x00b7', 0};
            if (!e)
                draw_attr(win, C_DIM, 1);
            waddnwstr(win, w, 1);
            if (!e) {
                draw_attr(win, C_DIM, 0);
                draw_attr(win, color, 1);
            }
        } else {
            waddch(win, e >= 4 ? '#' : '.');
        }
    }
    draw_attr(win, color, 0);
}

void draw_spark(app *a, WINDOW *win, int y, int x, int width)
{
    static const wchar_t levels[] = L" \x2581\x2582\x2583\x2584\x2585\x2586\x2587\x2588";
    static const char ascii[] = " .:-=+*#%@";
    const model *m = &a->m;
    if (width <= 0)
        return;
    int bucket = (SPARK_SECONDS + width - 1) / width;
    int cells = SPARK_SECONDS / bucket;
    if (cells > width)
        cells = width;
    int64_t v[SPARK_SECONDS], max = 0;
    for (int c = 0; c < cells; c++) {
        int first = SPARK_SECONDS - (cells - c) * bucket;
        v[c] = 0;
        for (int s = first; s < first + bucket; s++)
            v[c] += s >= 0 ? m->spark[s] : 0;
        if (v[c] > max)
            max = v[c];
    }
    wmove(win, y, x + width - cells);
    draw_attr(win, C_LIMITED, 1);
    for (int c = 0; c < cells; c++) {
        int lv = max ? (int)((v[c] * 8 + max - 1) / max) : 0;
        if (use_utf8) {
            wchar_t w[2] = {levels[lv], 0};
            waddnwstr(win, w, 1);
        } else {
            waddch(win, (chtype)(unsigned char)ascii[lv]);
        }
    }
    draw_attr(win, C_LIMITED, 0);
}

const char *fmt_left(int64_t ms, char *buf, size_t size)
{
    if (ms < 0)
        snprintf(buf, size, "never");
    else if (ms == 0)
        snprintf(buf, size, "-");
    else if (ms < 1000)
        snprintf(buf, size, "<1s");
    else if (ms < 60000)
        snprintf(buf, size, "%llds", (long long)(ms / 1000));
    else if (ms < 3600000)
        snprintf(buf, size, "%lldm%02llds", (long long)(ms / 60000), (long long)(ms / 1000 % 60));
    else if (ms < 86400000)
        snprintf(buf, size, "%lldh%02lldm", (long long)(ms / 3600000),
                 (long long)(ms / 60000 % 60));
    else
        snprintf(buf, size, "%lldd%02lldh", (long long)(ms / 86400000),
                 (long long)(ms / 3600000 % 24));
    return buf;
}

const char *fmt_bytes(int64_t n, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    if (n < 0)
        return snprintf(buf, size, "?"), buf;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%lld B", (long long)n);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

const char *fmt_clock(int64_t ms, char *buf, size_t size)
{
    char t[64];
    if (ms <= 0 || rls_time_format(ms, t, sizeof t) < 0 || strlen(t) < 19) {
        snprintf(buf, size, "-");
        return buf;
    }
    t[10] = ' ';
    snprintf(buf, size, "%.19sZ", t);   /* "2026-11-21 10:00:00Z" */
    return buf;
}
