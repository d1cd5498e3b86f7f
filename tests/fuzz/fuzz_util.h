/*
 * fuzz_util.h - helpers shared by the libFuzzer targets of tests/fuzz/.
 *
 * FUZZ_CHECK(cond, fmt, ...) reports a broken invariant on stderr and
 * aborts, which libFuzzer records as a crash (the input is saved under the
 * artifact prefix).  Everything else is small pure helpers: a strict UTF-8
 * validator (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF),
 * a NUL-terminated copy of the input and an exact-size heap buffer, so that
 * AddressSanitizer catches a write one byte past the size a function was
 * given.
 */
#ifndef RLS_FUZZ_UTIL_H
#define RLS_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                               \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "\n%s:%d: invariant failed: %s\n  ", __FILE__,  \
                    __LINE__, #cond);                                       \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* 1 if s[0..n) is well-formed UTF-8. */
static inline int fuzz_utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t need, k;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c < 0xc2 || c > 0xf4)
            return 0;
        need = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
        else if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
        if (n - i < need || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (k = 2; k < need; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                return 0;
        i += need;
    }
    return 1;
}

/* A NUL-terminated heap copy of data[0..size) (free it). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* A heap buffer of exactly size bytes (NULL for 0), filled with a marker
 * so that a missing NUL shows up. */
static inline char *fuzz_buf(size_t size)
{
    char *b;
    if (size == 0)
        return NULL;
    b = malloc(size);
    if (!b)
        abort();
    memset(b, 0x5a, size);
    return b;
}

/* Reads the next little-endian integer of n bytes (zero past the end). */
static inline uint64_t fuzz_take(const uint8_t **p, size_t *left, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t b = 0;
        if (*left > 0) {
            b = **p;
            (*p)++;
            (*left)--;
        }
        v |= b << (8 * i);
    }
    return v;
}

/* FNV-1a: a cheap input-derived number for choices that must not change
 * the corpus format (prefix lengths, buffer sizes). */
static inline uint32_t fuzz_hash(const uint8_t *data, size_t size)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    return h;
}

#endif
