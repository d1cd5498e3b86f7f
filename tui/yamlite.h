/*
 * yamlite.h - a small, strict reader of the YAML that rule files are
 * written in, with the byte position of every node, so that rltop can list
 * the tiers and limits of the active rule set and change one `limit:` value
 * in place without rewriting (or reformatting) anything else.
 *
 * Supported: block mappings and sequences (a sequence may sit at its key's
 * indentation), flow mappings and sequences (also across lines), plain,
 * single- and double-quoted scalars, comments, a leading `---`.
 * Refused with a message (so nothing is edited by guess): anchors, aliases,
 * tags, merge keys, block scalars (| >), complex keys (?), multi-line plain
 * scalars, several documents, tabs used for indentation.
 *
 * It reads only what the library has already validated; it is not a
 * general YAML parser and never decides what the rules mean.
 */
#ifndef RLTOP_YAMLITE_H
#define RLTOP_YAMLITE_H

#include <stddef.h>
#include <stdint.h>

enum yl_type { YL_SCALAR = 1, YL_MAP = 2, YL_SEQ = 3 };

typedef struct yl_node yl_node;
struct yl_node {
    int type;            /* enum yl_type */
    int flow;            /* written in flow style ({...} or [...]) */
    int quoted;          /* scalar: written in quotes */
    size_t start, end;   /* byte span in the text; a scalar's token, quotes included */
    char *text;          /* scalar: the value (unquoted, unescaped) */
    int n, cap;          /* number of entries (MAP) or items (SEQ) */
    yl_node **keys;      /* MAP: key scalars */
    yl_node **vals;      /* MAP: values; SEQ: items */
};

/*
 * Parses text[0..len).  On success returns 0 and *root (free with
 * yl_free); an empty document gives an empty mapping.  On failure returns
 * -1, *root is NULL and err gets "line L: what" (one line).
 */
int yl_parse(const char *text, size_t len, yl_node **root, char *err, size_t errsize);
void yl_free(yl_node *n);

/* The value of key in a mapping (first match), or NULL. */
const yl_node *yl_get(const yl_node *map, const char *key);
/* The scalar text of key in a mapping, or NULL if absent or not a scalar. */
const char *yl_text(const yl_node *map, const char *key);
/* 1-based line of a byte offset. */
int yl_line(const char *text, size_t off);

/* ---- what rltop reads from a rule set ------------------------------------ */

/* One `limit:` value written in the file: a default limit of an action
 * (tier "" ) or a tier's replacement of it. */
typedef struct yl_limit {
    char action[64];
    char tier[64];       /* "" = the action's default limits */
    char name[64];       /* the limit's name */
    int64_t value;       /* the current limit */
    size_t start, end;   /* span of the value token */
} yl_limit;

/*
 * Every explicit, integer `limit:` of actions.*.limits and
 * actions.*.tiers.*, in file order.  *out is malloc'd (free()), *n its
 * length.  Returns 0, or -1 with err set if the shape is not understood.
 */
int yl_limits(const char *text, size_t len, yl_limit **out, int *n, char *err, size_t errsize);

/*
 * The names of the top-level `tiers:` mapping, in file order, plus the
 * default tier (defaults.tier) if it is not listed.  names is an array of
 * max entries of 64 bytes.  Returns the count, or -1 with err set.
 */
int yl_tiers(const char *text, size_t len, char (*names)[64], int max, char *def_tier,
             size_t def_size, char *err, size_t errsize);

/*
 * Changes the `limit:` value of limit `name` of `action` for `tier` ("" =
 * the default limits) to value, textually: only the digits of that one
 * token change.  The result is parsed again and must have exactly the same
 * structure and values except that one, or nothing is returned.
 * On success returns 0, *out (malloc'd, NUL-terminated, free()) and
 * *outlen, and *line the 1-based line that changed.  On failure returns -1
 * and err says why (e.g. the tier inherits the limit: nothing to edit).
 */
int yl_set_limit(const char *text, size_t len, const char *action, const char *tier,
                 const char *name, int64_t value, char **out, size_t *outlen, int *line,
                 char *err, size_t errsize);

#endif /* RLTOP_YAMLITE_H */
