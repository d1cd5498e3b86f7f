/*
 * diff.c - reading rule files and the line diff of `rlctl apply --dry-run`.
 *
 * The diff is unified-style with three lines of context.  Common leading
 * and trailing lines are skipped first; the rest is aligned by a longest
 * common subsequence (quadratic, so above DIFF_MAX_CELLS the middle is
 * shown as removed-then-added, still correct, just less minimal).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rlctl.h"

#define DIFF_MAX_CELLS 16000000L  /* 64 MB of LCS table at most */
#define CONTEXT 3

/*
 * Opening a FIFO blocks until a writer comes, maybe forever: the file is
 * opened non-blocking (a FIFO without a writer then reads as empty), and
 * reads block again once it is open (a pipe being written, such as bash's
 * <(...), is read to its end).
 */
static int open_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : 0;
    if (fd >= 0 && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int read_file(const char *path, size_t max, char **out, size_t *outlen)
{
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open_file(path);
    size_t len = 0, cap = 0;
    char *buf = NULL;
    struct stat sb;

    *out = NULL;
    *outlen = 0;
    if (fd < 0)
        return -1;
    if (fstat(fd, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) {
            errno = EISDIR;
            goto fail;
        }
        if (S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size > max) {
            errno = EFBIG;
            goto fail;
        }
    }
    for (;;) {
        if (cap - len < 65536 + 1) {
            size_t ncap = cap ? cap * 2 : 65536 * 2;
            if (ncap > max + 65536 + 1)
                ncap = max + 65536 + 1;
            if (ncap <= cap) {
                errno = EFBIG;
                goto fail;
            }
            char *n = realloc(buf, ncap);
            if (!n) {
                errno = ENOMEM;
                goto fail;
            }
            buf = n;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto fail;
        if (r == 0)
            break;
        len += (size_t)r;
        if (len > max) {
            errno = EFBIG;
            goto fail;
        }
    }
    if (!buf && !(buf = malloc(1))) {
        errno = ENOMEM;
        goto fail;
    }
    buf[len] = '\0';
    if (fd != STDIN_FILENO)
        close(fd);
    *out = buf;
    *outlen = len;
    return 0;
fail: {
        int e = errno;
        free(buf);
        if (fd != STDIN_FILENO)
            close(fd);
        errno = e;
        return -1;
    }
}

/* ---- lines ---------------------------------------------------------------- */

typedef struct line {
    const char *s;
    size_t len;     /* without the newline */
    int nl;         /* ended by a newline */
    unsigned hash;
} line;

static line *split(const char *s, size_t n, long *count)
{
    long cnt = 0, cap = 64;
    line *v = malloc(sizeof *v * (size_t)cap);
    size_t i = 0;
    if (!v)
        return NULL;
    while (i < n) {
        const char *nlp = memchr(s + i, '\n', n - i);
        size_t end = nlp ? (size_t)(nlp - s) : n;
        if (cnt == cap) {
            line *nv = realloc(v, sizeof *v * (size_t)(cap *= 2));
            if (!nv) {
                free(v);
                return NULL;
            }
            v = nv;
        }
        line *l = &v[cnt++];
        l->s = s + i;
        l->len = end - i;
        l->nl = nlp != NULL;
        l->hash = 2166136261u;
        for (size_t k = 0; k < l->len; k++)
            l->hash = (l->hash ^ (unsigned char)l->s[k]) * 16777619u;
        i = nlp ? end + 1 : n;
    }
    *count = cnt;
    return v;
}

static int same(const line *a, const line *b)
{
    return a->hash == b->hash && a->len == b->len && a->nl == b->nl &&
           memcmp(a->s, b->s, a->len) == 0;
}

/* ---- output buffer ---------------------------------------------------------- */

typedef struct sbuf {
    char *s;
    size_t len, cap;
    int failed;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->failed = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

/* A line of a rule file, for a terminal: a comment or a quoted key may hold
 * a format character such as U+202E (or the file a byte order mark), shown
 * escaped like a key; a CR before the newline stays as it is. */
static void sb_line(sbuf *b, char tag, const line *l)
{
    size_t len = l->len;
    int cr = len > 0 && l->s[len - 1] == '\r';
    char *t = strndup(l->s, len - (size_t)cr), *e = t ? msg_esc_dup(t) : NULL;
    sb_put(b, &tag, 1);
    if (e)
        sb_str(b, e);
    else
        sb_put(b, l->s, len - (size_t)cr);
    if (cr)
        sb_put(b, "\r", 1);
    free(t);
    free(e);
    sb_put(b, "\n", 1);
    if (!l->nl)
        sb_str(b, "\\ No newline at end of file\n");
}

/* ---- edit script ------------------------------------------------------------- */

enum { OP_SAME = 0, OP_DEL = 1, OP_ADD = 2 };
typedef struct op {
    int kind;
    long ai, bi;    /* line index in a (SAME, DEL) and b (SAME, ADD) */
} op;

/* Edit script of the middle a[0..n) vs b[0..m) appended to ops. */
static int lcs_script(const line *a, long n, const line *b, long m, op *ops, long *nops,
                      long a0, long b0)
{
    if ((n + 1) * (m + 1) > DIFF_MAX_CELLS) {
        for (long i = 0; i < n; i++)
            ops[(*nops)++] = (op){OP_DEL, a0 + i, b0};
        for (long j = 0; j < m; j++)
            ops[(*nops)++] = (op){OP_ADD, a0 + n, b0 + j};
        return 0;
    }
    int *L = calloc((size_t)(n + 1) * (size_t)(m + 1), sizeof *L);
    if (!L)
        return -1;
#define AT(i, j) L[(size_t)(i) * (size_t)(m + 1) + (size_t)(j)]
    for (long i = n - 1; i >= 0; i--)
        for (long j = m - 1; j >= 0; j--)
            AT(i, j) = same(&a[i], &b[j]) ? AT(i + 1, j + 1) + 1
                       : AT(i + 1, j) >= AT(i, j + 1) ? AT(i + 1, j) : AT(i, j + 1);
    long i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && same(&a[i], &b[j])) {
            ops[(*nops)++] = (op){OP_SAME, a0 + i, b0 + j};
            i++, j++;
        } else if (j >= m || (i < n && AT(i + 1, j) >= AT(i, j + 1))) {
            ops[(*nops)++] = (op){OP_DEL, a0 + i, b0 + j};
            i++;
        } else {
            ops[(*nops)++] = (op){OP_ADD, a0 + i, b0 + j};
            j++;
        }
    }
#undef AT
    free(L);
    return 0;
}

static void hunk(sbuf *b, const op *ops, long from, long to, const line *la, const line *lb)
{
    long acount = 0, bcount = 0, astart = -1, bstart = -1;
    char hdr[96];
    for (long k = from; k < to; k++) {
        if (ops[k].kind != OP_ADD) {
            if (astart < 0)
                astart = ops[k].ai;
            acount++;
        }
        if (ops[k].kind != OP_DEL) {
            if (bstart < 0)
                bstart = ops[k].bi;
            bcount++;
        }
    }
    /* An empty side is numbered by the line before it (GNU diff). */
    astart = acount ? astart + 1 : ops[from].ai;
    bstart = bcount ? bstart + 1 : ops[from].bi;
    sb_str(b, "@@ -");
    snprintf(hdr, sizeof hdr, acount == 1 ? "%ld" : "%ld,%ld", astart, acount);
    sb_str(b, hdr);
    snprintf(hdr, sizeof hdr, bcount == 1 ? " +%ld" : " +%ld,%ld", bstart, bcount);
    sb_str(b, hdr);
    sb_str(b, " @@\n");
    for (long k = from; k < to; k++) {
        if (ops[k].kind == OP_SAME)
            sb_line(b, ' ', &la[ops[k].ai]);
        else if (ops[k].kind == OP_DEL)
            sb_line(b, '-', &la[ops[k].ai]);
        else
            sb_line(b, '+', &lb[ops[k].bi]);
    }
}

int diff_text(const char *a, size_t alen, const char *b, size_t blen, const char *label_a,
              const char *label_b, char **out, long *changes)
{
    long n = 0, m = 0, nops = 0, pre = 0, suf = 0;
    line *la = split(a, alen, &n), *lb = split(b, blen, &m);
    op *ops = NULL;
    sbuf sb = {NULL, 0, 0, 0};
    int rc = -1;

    *out = NULL;
    *changes = 0;
    if (!la || !lb)
        goto out;
    ops = malloc(sizeof *ops * (size_t)(n + m + 1));
    if (!ops)
        goto out;
    while (pre < n && pre < m && same(&la[pre], &lb[pre]))
        pre++;
    while (suf < n - pre && suf < m - pre && same(&la[n - 1 - suf], &lb[m - 1 - suf]))
        suf++;
    for (long i = 0; i < pre; i++)
        ops[nops++] = (op){OP_SAME, i, i};
    if (lcs_script(la + pre, n - pre - suf, lb + pre, m - pre - suf, ops, &nops, pre, pre) != 0)
        goto out;
    for (long i = 0; i < suf; i++)
        ops[nops++] = (op){OP_SAME, n - suf + i, m - suf + i};

    for (long k = 0; k < nops; k++)
        if (ops[k].kind != OP_SAME)
            (*changes)++;
    sb_str(&sb, "");
    if (*changes) {
        sb_str(&sb, "--- ");
        sb_str(&sb, label_a);
        sb_str(&sb, "\n+++ ");
        sb_str(&sb, label_b);
        sb_str(&sb, "\n");
        long k = 0;
        while (k < nops) {
            while (k < nops && ops[k].kind == OP_SAME)
                k++;
            if (k >= nops)
                break;
            long from = k - CONTEXT < 0 ? 0 : k - CONTEXT, to = k;
            /* Extend while the next change is within 2*CONTEXT lines. */
            for (;;) {
                while (to < nops && ops[to].kind != OP_SAME)
                    to++;
                long same_run = 0;
                while (to + same_run < nops && ops[to + same_run].kind == OP_SAME)
                    same_run++;
                if (to + same_run < nops && same_run <= 2 * CONTEXT) {
                    to += same_run;
                    continue;
                }
                to += same_run < CONTEXT ? same_run : CONTEXT;
                break;
            }
            hunk(&sb, ops, from, to, la, lb);
            k = to;
        }
    }
    if (!sb.failed) {
        *out = sb.s;
        sb.s = NULL;
        rc = 0;
    }
out:
    free(sb.s);
    free(ops);
    free(la);
    free(lb);
    return rc;
}
