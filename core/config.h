/*
 * config.h - the YAML rule loader (libyaml) with strict validation.
 *
 * Reads the format of docs/man/rlstore.yaml.5 into a ruleset.  Validation is
 * complete: unknown fields, wrong types, impossible values, unknown time
 * zones and duplicate names are errors naming the line and column.  Every
 * error of the file is collected, not just the first.  Aliases, deep nesting
 * and oversized documents are refused (YAML bombs).
 */
#ifndef RLS_CONFIG_H
#define RLS_CONFIG_H

#include <stddef.h>
#include "rules.h"

#define CONFIG_MAX_BYTES (4u << 20)  /* 4 MiB of YAML at most */
#define CONFIG_MAX_DEPTH 16
#define CONFIG_MAX_ERRORS 64

typedef struct config_error {
    int line;     /* 1-based; 0 if not tied to a place */
    int column;   /* 1-based */
    char msg[200];  /* "path: message", or "message" without a path */
    int msg_at;     /* where the message proper starts in msg (0 without a
                       path): msg[0..msg_at-2] is the path, e.g.
                       "actions.signup.limits[0]" (rls_rules_validate) */
} config_error;

typedef struct config_errors {
    config_error e[CONFIG_MAX_ERRORS];
    int n;        /* number stored */
    int total;    /* number found (may exceed n) */
} config_errors;

/*
 * Parses and validates text[0..len).  On success returns 0 and *out is a new
 * ruleset (free with rls__ruleset_free).  On failure returns -1, *out is NULL and
 * errs lists the errors (errs may be NULL).  Returns -2 on out of memory.
 */
int rls__config_parse(const char *text, size_t len, ruleset **out,
                 config_errors *errs);

/* Formats errs[0] as "LINE:COL: message" ( "message" without a place). */
int rls__config_error_format(const config_error *e, const char *file, char *buf,
                        size_t size);

#endif
