/*
 * yaml_edit.h - the values a rule file writes for its limits, and the edit
 * of one of them in place: only the bytes of that one number change, so
 * comments, order, quoting, a byte order mark and CRLF line ends stay as
 * they were.  Pure (no database); the file is read with the loader's own
 * libyaml pass (config_yaml.c), so the edit and the loader cannot read a
 * file differently.
 *
 * What is edited is the text, not the meaning: the result is not
 * validated as rules here (the caller runs the loader on it,
 * storage/admin_rules.c).  It is verified structurally: read again, it
 * must have the same nodes and scalars as before except that one value.
 */
#ifndef RLS_YAML_EDIT_H
#define RLS_YAML_EDIT_H

#include <stddef.h>
#include <stdint.h>
#include "rules.h"

/* One integer written in the file for a limit: the `limit:` (or `burst:`)
 * of a default limit of an action (tier "") or of a tier's replacement of
 * it.  Inherited values are not listed: they are not written there. */
typedef struct yedit_value {
    char action[RULES_NAME_MAX + 1];
    char tier[RULES_NAME_MAX + 1];   /* "" = the action's default limits */
    char name[RULES_NAME_MAX + 1];   /* the limit's name */
    const char *field;               /* "limit" or "burst" (static) */
    int64_t value;
    size_t start, end;               /* byte span of the value's token */
    int line;                        /* 1-based line of the token */
} yedit_value;

/*
 * Every plain decimal `limit:` and `burst:` of actions.*.limits and
 * actions.*.tiers.*, in file order.  Returns 0 with *out (malloc'd, free())
 * and *n; -1 with err set (one line, "line L: what") if the file does not
 * read (invalid YAML, anchors, aliases, tags, merge keys, duplicate keys);
 * -2 on out of memory.
 */
int rls__yedit_list(const char *text, size_t len, yedit_value **out, int *n, char *err,
                    size_t errsize);

/*
 * Changes the `field` ("limit" or "burst") value of limit `name` of
 * `action` for `tier` (NULL or "" = the default limits) to value: only the
 * digits of that one token change.  The value must already be written
 * there as a plain decimal integer: a tier that does not replace the limit,
 * or replaces it without giving that field, inherits the default's value,
 * and is refused (nothing is written by guess; edit the default instead).
 * Returns 0 with *out (malloc'd, NUL-terminated, free()), *outlen and
 * *line (1-based line of the change).  Refused, with err set and *out
 * NULL: -1 if that value is not written there (no such action, tier entry,
 * limit or field: nothing to edit), -3 if it cannot be edited as text (the
 * file does not read as above, the value is not a plain decimal integer,
 * field is not "limit" or "burst", value < 1, or the result does not read
 * back as expected).  -2 on out of memory.
 */
int rls__yedit_set(const char *text, size_t len, const char *action, const char *tier,
                   const char *name, const char *field, int64_t value, char **out,
                   size_t *outlen, int *line, char *err, size_t errsize);

#endif
