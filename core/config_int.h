/*
 * config_int.h - private to the YAML loader (config.c, config_yaml.c,
 * config_value.c, config_limit.c, config_assign.c) and the ruleset builder
 * (rules.c).
 *
 * The loader works in two passes.  config_yaml.c turns libyaml's events into
 * a small tree of nodes (refusing aliases, anchors, tags, deep nesting and
 * duplicate keys on the way); config.c and config_limit.c then walk that
 * tree, validating every field and filling a ruleset.  Errors are collected
 * into a config_errors, never printed.
 *
 * Every allocation of the loader goes through rls__config_malloc & co so that a
 * test can make the N-th one fail (rls__config_fail_after) and check that out of
 * memory is reported as -2 with nothing leaked.
 */
#ifndef RLS_CONFIG_INT_H
#define RLS_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "rules.h"

/* Bounds against resource exhaustion (beyond those of config.h). */
#define CFG_MAX_NODES 1000000     /* YAML nodes in one document */
#define CFG_MAX_TIERS 1000
#define CFG_MAX_ACTIONS 10000
#define CFG_MAX_ASSIGNMENTS 100000
#define CFG_LIMIT_MAX 1000000000000LL  /* largest limit, burst: 1e12 */
#define CFG_PATH_MAX 192          /* "actions.x.tiers.y[3].block_for[2]" */

enum cfg_node_type { CN_SCALAR = 0, CN_SEQ = 1, CN_MAP = 2, CN_BAD = 3 };

/* One YAML node.  A mapping's children alternate key, value. */
typedef struct cnode {
    unsigned char type;   /* enum cfg_node_type; CN_BAD = an alias (already
                             reported; walkers ignore it silently) */
    unsigned char plain;  /* scalar written without quotes */
    unsigned char skip;   /* key of a duplicate or non-scalar key: the pair
                             is ignored by walkers (already reported) */
    int line, col;        /* 1-based */
    int first, next;      /* first child, next sibling; -1 = none */
    int n;                /* number of children */
    size_t off, len;      /* scalar: text at strs + off, NUL-terminated */
    size_t at, at_end;    /* libyaml's mark indices (characters from the
                             start of the text after a byte order mark, a
                             CRLF counting 2): where the node starts and,
                             for a scalar, ends (yaml_edit.c turns them
                             into byte offsets) */
} cnode;

typedef struct cfg {
    cnode *nodes;
    int nnodes, capnodes;
    char *strs;
    size_t nstrs, capstrs;
    int root;             /* root node of the document; -1 if none */
    config_errors *errs;
    int oom;              /* an allocation failed: the result is -2 */
    int tiers_bad;        /* the tiers section was unusable: do not report
                             every tier reference as unknown */
    int actions_bad;      /* the same for the actions section */
    ruleset *rs;
    int max_line, max_col;  /* the input's extent: error places are clamped
                               into it (libyaml may point just past it) */
} cfg;

/* ---- allocation (config.c) ------------------------------------------- */
void *rls__config_malloc(size_t size);
void *rls__config_calloc(size_t n, size_t size);
void *rls__config_realloc(void *p, size_t size);
char *rls__config_strndup(const char *s, size_t len);
/* Tests only: the n-th allocation from now (0 = the next one) fails, and
 * every one after it; n < 0 turns failures off.  Per thread. */
void rls__config_fail_after(long n);
/* Counts one allocation; 1 if it must fail.  Used by the allocators above
 * and by the test's libyaml allocation hooks. */
int rls__config_fail_now(void);

/* ---- errors (config.c) ----------------------------------------------- */
/* Records "path: message" at node (line/col of the node; node < 0 = no
 * place).  path may be NULL or "".  Never fails: beyond CONFIG_MAX_ERRORS
 * errors are only counted. */
void rls__config_err(cfg *c, int node, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void rls__config_err_at(cfg *c, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- the YAML tree (config_yaml.c) ----------------------------------- */
/* Parses text[0..len) into c's tree.  Returns 0 (c->root may be -1 for an
 * empty stream), -1 after reporting a fatal error (syntax, encoding, depth,
 * size), or -2 on out of memory.  Non-fatal problems (anchors, aliases,
 * tags, duplicate keys) are reported and parsing goes on. */
int rls__config_load_yaml(cfg *c, const char *text, size_t len);
void rls__config_tree_free(cfg *c);

/* ---- node helpers (config_value.c) ----------------------------------- */
const char *rls__config_str(const cfg *c, int node);
int rls__config_is_null(const cfg *c, int node);
/* The key node of the pair after key node k (-1 at the end). */
int rls__config_next_pair(const cfg *c, int k);
/* Describes a node for "got ..." in a message: 'text' (escaped, shortened),
 * "an empty value", "a mapping", "a list". */
void rls__config_describe(const cfg *c, int node, char *buf, size_t size);
/* Appends ".name" or "[i]" to a path (always NUL-terminated). */
void rls__config_path_key(char *out, size_t size, const char *path,
                      const cfg *c, int key);
void rls__config_path_field(char *out, size_t size, const char *path,
                        const char *field);
void rls__config_path_index(char *out, size_t size, const char *path, int i);

/* Each checker reports its own error (naming path) and returns 0 if the
 * value is good, -1 if not.  A CN_BAD node fails without a message. */
int rls__config_want(cfg *c, int node, const char *path, int type,
                 const char *what);
int rls__config_int(cfg *c, int node, const char *path, int64_t lo, int64_t hi,
                int64_t *out);
int rls__config_bool(cfg *c, int node, const char *path, int *out);
int rls__config_enum(cfg *c, int node, const char *path,
                 const char *const *names, int *out);
int rls__config_duration(cfg *c, int node, const char *path, rls_duration *out);
/* A name of [A-Za-z0-9_.:-]{1,63}; what is "an action name" etc. */
int rls__config_name(cfg *c, int node, const char *path, const char *what,
                 char out[RULES_NAME_MAX + 1]);
int rls__config_name_ok(const char *s, size_t len);
/* Looks key node k up in fields (NULL-terminated): its index, or -1 after
 * reporting an unknown field (with a suggestion when one is close). */
int rls__config_field(cfg *c, int k, const char *path, const char *const *fields);
/* Reports "missing required field" on map. */
void rls__config_missing(cfg *c, int map, const char *path, const char *field,
                     const char *hint);
/* Parses an expiry: ISO-8601 UTC or epoch ms. */
int rls__config_expires(cfg *c, int node, const char *path, int64_t *out_ms);
/* A time zone of the ruleset by name (loaded once).  Reports errors. */
int rls__config_zone(cfg *c, int node, const char *path, const rls_tz **out);

/* ---- references and sections (config.c, config_assign.c) ------------- */
/* A reference to a tier (defaults.tier, an action's tiers key, an
 * assignment's tier): copies a defined tier's name (NUL-terminated) to out,
 * or reports the unknown tier and returns -1. */
int rls__config_tier_ref(cfg *c, int node, const char *path,
                     char out[RULES_NAME_MAX + 1]);
/* The assignments section at node v (c->rs tiers and actions are read). */
void rls__config_assignments(cfg *c, int v);

/* ---- limits (config_limit.c) ----------------------------------------- */
/*
 * Parses the limit mapping at node map into *out.  For a tier replacement
 * entry, defs[0..ndefs) are the action's default limits (defs_ok[i] = 1 if
 * that one was valid): fields not given are inherited from the default of
 * the same name.  For a default limit pass ndefs = -1 (nothing inherited).
 * Returns 0 if valid, -1 if errors were reported.
 */
int rls__config_limit(cfg *c, int map, const char *path, const rule_limit *defs,
                  const unsigned char *defs_ok, int ndefs, rule_limit *out);

/* ---- ruleset building (rules.c) -------------------------------------- */
/* The zone called name, loaded at most once per ruleset.  Returns 0, -1 with
 * a static reason in *why, or -2 on out of memory. */
int rls__ruleset_zone(ruleset *rs, const char *name, const rls_tz **out,
                  const char **why);
/* Sorts tiers and actions by name (rls__ruleset_tier/rls__ruleset_action then use
 * binary search). */
void rls__ruleset_sort(ruleset *rs);
void rls__ruleset_sort_tiers(ruleset *rs);

#endif
