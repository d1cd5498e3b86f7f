/*
 * dbname.h - how rlctl and rltop tell a database path from a PostgreSQL
 * URI, and how they name a database in messages without its password.
 *
 * Shared by both tools (common/, like textesc.h), so that there is one
 * redaction.
 *
 * --db takes a SQLite file path or a libpq URI (postgresql://... or
 * postgres://..., the test rls_open() applies).  A URI may carry a password
 * as user:PASSWORD@host or as the query parameter password=PASSWORD (and
 * sslpassword=, the key file's passphrase).  Every message that names the
 * database shows it through db_redact(): user:***@host, password=***.
 * Parsing follows libpq's (conninfo_uri_parse_options), erring on the side
 * of hiding: the user information is what precedes the last '@' before any
 * '/' (libpq stops at the first, but a password with a stray '@' would
 * then show its tail), its password what follows its first ':'; query
 * keywords are percent-decoded before they are compared, as libpq does, so
 * pass%77ord= is masked too.  A password holding a '/' must be
 * percent-encoded (%2F), as libpq requires: written raw, it is not found.
 */
#ifndef RLSTORE_DBNAME_H
#define RLSTORE_DBNAME_H

#include <stdlib.h>
#include <string.h>

/* 1 if path selects the PostgreSQL backend (a libpq URI), else 0. */
static inline int db_is_uri(const char *path)
{
    return path && (strncmp(path, "postgresql://", 13) == 0 ||
                    strncmp(path, "postgres://", 11) == 0);
}

static inline int dbname_hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* 1 if the n bytes at k, percent-decoded, spell a secret's keyword. */
static inline int dbname_secret_key(const char *k, size_t n)
{
    char dec[16];
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {
        char c = k[i];
        if (c == '%' && i + 2 < n && dbname_hex(k[i + 1]) >= 0 && dbname_hex(k[i + 2]) >= 0) {
            c = (char)(dbname_hex(k[i + 1]) * 16 + dbname_hex(k[i + 2]));
            i += 2;
        }
        if (d + 1 >= sizeof dec)
            return 0;
        dec[d++] = c;
    }
    dec[d] = '\0';
    return strcmp(dec, "password") == 0 || strcmp(dec, "sslpassword") == 0;
}

/*
 * A copy of path for messages: a URI with every password replaced by
 * "***", anything else unchanged.  malloc'd (the caller frees it); NULL
 * only when out of memory.
 */
static inline char *db_redact(const char *path)
{
    if (!path)
        path = "";
    size_t len = strlen(path);
    char *out = malloc(3 * len + 4);   /* each mask turns >= 1 byte into 3 */
    if (!out)
        return NULL;
    if (!db_is_uri(path)) {
        memcpy(out, path, len + 1);
        return out;
    }
    const char *p = strstr(path, "://") + 3, *s;
    size_t o = (size_t)(p - path);
    memcpy(out, path, o);
    /* user information: up to the last '@' before any '/' */
    const char *at = NULL;
    for (s = p; *s && *s != '/'; s++)
        if (*s == '@')
            at = s;
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon && colon + 1 < at) {   /* "user:@" has nothing to hide */
            memcpy(out + o, p, (size_t)(colon - p) + 1);
            o += (size_t)(colon - p) + 1;
            memcpy(out + o, "***", 3);
            o += 3;
            p = at;
        }
    }
    /* host, port and database name: up to the query */
    s = strchr(p, '?');
    if (!s) {
        strcpy(out + o, p);
        return out;
    }
    memcpy(out + o, p, (size_t)(s - p) + 1);
    o += (size_t)(s - p) + 1;
    p = s + 1;
    /* query parameters keyword=value, separated by '&' */
    while (*p) {
        size_t n = strcspn(p, "&");
        const char *eq = memchr(p, '=', n);
        if (eq && dbname_secret_key(p, (size_t)(eq - p)) && eq + 1 < p + n) {
            memcpy(out + o, p, (size_t)(eq - p) + 1);
            o += (size_t)(eq - p) + 1;
            memcpy(out + o, "***", 3);
            o += 3;
        } else {
            memcpy(out + o, p, n);
            o += n;
        }
        p += n;
        if (*p == '&')
            out[o++] = *p++;
    }
    out[o] = '\0';
    return out;
}

#endif /* RLSTORE_DBNAME_H */
