/*
 * testutil.h - shared helpers of the cmocka suites: temporary directories
 * that are removed at the end, and small wrappers.
 */
#ifndef RLS_TESTUTIL_H
#define RLS_TESTUTIL_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

/* Creates a fresh directory under $TMPDIR (or /tmp) and returns its path,
 * owned by the caller (remove and free it with tu_rmdir).  Fails the test
 * if it cannot. */
static char *tu_mkdtemp(void) __attribute__((returns_nonnull, unused));
static char *tu_mkdtemp(void)
{
    static char fallback[] = "/nonexistent";
    const char *base = getenv("TMPDIR");
    char *p = malloc(4096);
    if (!p)
        fail_msg("out of memory");
    if (!p)
        return fallback;
    snprintf(p, 4096, "%s/rlstore-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(p))
        fail_msg("cannot create a temporary directory under %s", base ? base : "/tmp");
    return p;
}

/* Removes the directory and everything in it, then frees the path. */
static inline void tu_rmdir(char *dir)
{
    char cmd[4200];
    if (!dir)
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
    free(dir);
}

/* dir + "/" + name into a static-size buffer. */
static inline void tu_path(char *buf, size_t size, const char *dir,
                           const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

/* The number of lines that differ between a and b, which have the same
 * number of lines (1000 when they do not): how much an edit changed. */
static inline int tu_lines_changed(const char *a, const char *b)
{
    int n = 0;
    while (*a || *b) {
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
        if (la != lb || memcmp(a, b, la) != 0)
            n++;
        a += la + (ea ? 1 : 0);
        b += lb + (eb ? 1 : 0);
        if ((!ea) != (!eb))
            return 1000;
    }
    return n;
}

/* Writes all n bytes of p to fd, again after EINTR; 0, or -1 when the
 * peer is gone (the relays of the network-fault suites). */
static inline int tu_write_all(int fd, const char *p, ssize_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, (size_t)n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= w;
    }
    return 0;
}

#endif
