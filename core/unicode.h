/*
 * unicode.h - the code points that display text must not show raw.
 *
 * A key is bytes chosen by whoever sends the request.  Beyond the control
 * bytes (escaped everywhere), some valid characters change how a terminal
 * or a log viewer lays out what follows them while showing nothing
 * themselves: the bidirectional controls (U+202E turns the rest of a line
 * around, shifting table columns and dialog borders), zero-width joiners
 * and spaces (two keys that look identical), the byte order mark, tag
 * characters, the line and paragraph separators.  rls__key_escape() shows these
 * escaped, as it shows control bytes.
 */
#ifndef RLS_UNICODE_H
#define RLS_UNICODE_H

#include <stdint.h>

/* 1 if cp is a format character (Unicode general category Cf, 15.1) or a
 * line or paragraph separator (Zl, Zp), else 0. */
int rls__uni_is_invisible(uint32_t cp);

#endif
