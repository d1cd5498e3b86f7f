/*
 * textesc.h - escaping text for display, shared by rlctl and rltop (both
 * use only include/rlstore.h; this is the one piece of code they share).
 */
#ifndef RLS_TEXTESC_H
#define RLS_TEXTESC_H

/* s (NULL: "") escaped with rls_key_escape(): control bytes, invalid UTF-8
 * and Unicode format characters as \xHH.  Returns a malloc'ed string the
 * caller frees; "?" (malloc'ed) if s cannot be escaped, NULL only when
 * memory is exhausted. */
char *esc_dup(const char *s);

/* A library message for display: it may quote raw input (escaped here like
 * a key) or input the library already escaped ("got 'x\x1B'"): backslashes
 * are kept as they are, so an escape is never shown escaped twice.
 * Returns a malloc'ed string, NULL when memory is exhausted. */
char *msg_esc_dup(const char *s);

#endif
