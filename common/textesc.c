/*
 * textesc.c - escaping text for display (see textesc.h).
 */
#include <stdlib.h>
#include <string.h>
#include <rlstore.h>
#include "textesc.h"

char *esc_dup(const char *s)
{
    int n = rls_key_escape(s ? s : "", NULL, 0);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf)
        return strdup("?");
    rls_key_escape(s ? s : "", buf, (size_t)n + 1);
    return buf;
}

char *msg_esc_dup(const char *s)
{
    size_t n = 0;
    const char *p;
    if (!s)
        s = "";
    size_t cap = 4 * strlen(s) + 1;   /* rls_key_escape: at most 4 bytes per byte */
    char *out = malloc(cap), *seg = malloc(strlen(s) + 1);
    if (!out || !seg) {
        free(out);
        free(seg);
        return NULL;
    }
    for (p = s;;) {
        size_t len = strcspn(p, "\\");
        memcpy(seg, p, len);
        seg[len] = '\0';
        int w = rls_key_escape(seg, out + n, cap - n);
        n += w > 0 ? (size_t)w : 0;
        if (!p[len])
            break;
        out[n++] = '\\';
        p += len + 1;
    }
    out[n] = '\0';
    free(seg);
    return out;
}
