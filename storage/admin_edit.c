/*
 * admin_edit.c - changing one limit of the rules without rewriting the
 * file: the values a version writes for its limits, the edited YAML of a
 * version (for a preview) and the edit applied as a new version.  The
 * text edit itself is core/yaml_edit.c (only the digits of one value
 * change); here the result is validated by the loader and stored like
 * rls_rules_apply_if_at, against the version the edit was made from, so a
 * change applied meanwhile is never lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "config.h"
#include "yaml_edit.h"

/* The YAML of version (0 = the active one) and its number, read together. */
static int read_version(rls_db *db, int64_t version, char **yaml, size_t *len, int64_t *got)
{
    int rc = rls__admin_begin_read(db);
    if (rc)
        return rc;
    *got = version;
    if (version == 0)
        rc = rls__rules_active(db, got);
    if (rc == RLS_OK)
        rc = rls__rules_yaml(db, *got, yaml, len);
    if (rc == RLS_OK && (rc = rls__commit(db)) != RLS_OK) {
        free(*yaml);
        *yaml = NULL;
    }
    if (rc != RLS_OK)
        rls__rollback(db);
    return rc;
}

static int edit_args(rls_db *db, const char *action, const char *limit_name, const char **field,
                     int64_t value)
{
    if (!db)
        return RLS_EINVAL;
    if (!action || !*action || !limit_name || !*limit_name)
        return rls__error(db, RLS_EINVAL, "an action and a limit name are required");
    if (!*field || !**field)
        *field = "limit";
    if (strcmp(*field, "limit") != 0 && strcmp(*field, "burst") != 0)
        return rls__error(db, RLS_EINVAL, "field '%s' cannot be set: 'limit' or 'burst'",
                          *field);
    if (value < 1 || value > RLS_LIMIT_MAX)
        return rls__error(db, RLS_EINVAL, "a %s is from 1 to %lld, not %lld", *field,
                          (long long)RLS_LIMIT_MAX, (long long)value);
    return RLS_OK;
}

/* The text edit of yaml, as a library result: ENOTFOUND when the value is
 * not written there, ECONFIG when it cannot be edited as text. */
static int edit_text(rls_db *db, const char *yaml, size_t len, const char *action,
                     const char *tier, const char *limit_name, const char *field, int64_t value,
                     char **out, size_t *outlen, int *line)
{
    char err[300];
    int ln = 0;
    int rc = rls__yedit_set(yaml, len, action, tier, limit_name, field, value, out, outlen, &ln,
                            err, sizeof err);
    if (rc == -2)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    if (rc != 0)
        return rls__error(db, rc == -1 ? RLS_ENOTFOUND : RLS_ECONFIG, "%s", err);
    if (line)
        *line = ln;
    return RLS_OK;
}

int rls_rules_limit_list(rls_db *db, int64_t version, rls_rows **out)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    static const rows_col cols[] = {
        {"action", RLS_COL_TEXT}, {"tier", RLS_COL_TEXT},  {"name", RLS_COL_TEXT},
        {"field", RLS_COL_TEXT},  {"value", RLS_COL_INT},  {"line", RLS_COL_INT},
    };
    char *yaml = NULL, err[300];
    size_t len = 0;
    int64_t got;
    yedit_value *v = NULL;
    int n = 0;
    if (!out)
        return db ? rls__error(db, RLS_EINVAL, "out is NULL") : RLS_EINVAL;
    *out = NULL;
    if (version < 0)
        return db ? rls__error(db, RLS_EINVAL, "version %lld is invalid", (long long)version)
                  : RLS_EINVAL;
    int rc = read_version(db, version, &yaml, &len, &got);
    if (rc)
        return rc;
    int erc = rls__yedit_list(yaml, len, &v, &n, err, sizeof err);
    free(yaml);
    if (erc == -2)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    if (erc != 0)
        return rls__error(db, RLS_ECONFIG, "rule set version %lld: %s", (long long)got, err);
    rls_rows *r = rls__rows_new(cols, 6);
    for (int i = 0; r && i < n; i++) {
        int row = rls__rows_add(r);
        if (row < 0 || rls__rows_put_str(r, row, "action", v[i].action) ||
            rls__rows_put_str(r, row, "tier", v[i].tier) || rls__rows_put_str(r, row, "name", v[i].name) ||
            rls__rows_put_str(r, row, "field", v[i].field) ||
            rls__rows_put_int(r, row, "value", v[i].value) ||
            rls__rows_put_int(r, row, "line", v[i].line)) {
            rls_rows_free(r);
            r = NULL;
        }
    }
    free(v);
    if (!r)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    *out = r;
    return RLS_OK;
}

int rls_rules_limit_edit(rls_db *db, int64_t version, const char *action, const char *tier,
                         const char *limit_name, const char *field, int64_t value, char **yaml,
                         size_t *len, int *line)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    char *text = NULL, *out = NULL;
    size_t tlen = 0, olen = 0;
    int64_t got;
    ruleset *rs = NULL;
    if (!yaml)
        return db ? rls__error(db, RLS_EINVAL, "yaml is NULL") : RLS_EINVAL;
    *yaml = NULL;
    field = field ? field : "";
    int rc = edit_args(db, action, limit_name, &field, value);
    if (rc == RLS_OK && version < 0)
        rc = rls__error(db, RLS_EINVAL, "version %lld is invalid", (long long)version);
    if (rc == RLS_OK)
        rc = read_version(db, version, &text, &tlen, &got);
    if (rc == RLS_OK)
        rc = edit_text(db, text, tlen, action, tier, limit_name, field, value, &out, &olen, line);
    free(text);
    if (rc == RLS_OK)
        rc = rls__rules_parse(db, out, olen, "edited rules", RLS_TIME_MIN, &rs);
    rls__ruleset_free(rs);
    if (rc != RLS_OK) {
        free(out);
        return rc;
    }
    *yaml = out;
    if (len)
        *len = olen;
    return RLS_OK;
}

int rls_rules_set_limit_at(rls_db *db, const char *action, const char *tier,
                           const char *limit_name, const char *field, int64_t value,
                           const char *name, const char *comment, int64_t if_version,
                           int64_t now_ms, int64_t *new_version)
{
    RLS_SERIAL(db);   /* a thread-safe handle: one call at a time (group.h) */
    char *text = NULL, *out = NULL, auto_comment[300];
    size_t tlen = 0, olen = 0;
    int64_t got = 0;
    ruleset *rs = NULL;
    field = field ? field : "";
    int rc = edit_args(db, action, limit_name, &field, value);
    if (rc == RLS_OK && if_version < 0)
        rc = rls__error(db, RLS_EINVAL, "expected version %lld is invalid",
                        (long long)if_version);
    if (rc == RLS_OK)
        rc = read_version(db, 0, &text, &tlen, &got);
    if (rc == RLS_OK && if_version > 0 && got != if_version)
        rc = rls__error(db, RLS_ECONFLICT, "the active rules are version %lld, not %lld",
                        (long long)got, (long long)if_version);
    if (rc == RLS_OK)
        rc = edit_text(db, text, tlen, action, tier, limit_name, field, value, &out, &olen, NULL);
    free(text);
    if (rc == RLS_OK && !comment) {
        snprintf(auto_comment, sizeof auto_comment, "%s %s limit %s: %s %lld", action,
                 tier && *tier ? tier : "(default)", limit_name, field, (long long)value);
        comment = auto_comment;
    }
    if (rc == RLS_OK)
        rc = rls__rules_parse(db, out, olen, name ? name : "set-limit", now_ms, &rs);
    /* stored only if the version edited is still the active one */
    if (rc == RLS_OK)
        rc = rls__rules_store(db, out, olen, rs, name ? name : "set-limit", comment,
                              "rules.set_limit", got, now_ms, new_version);
    rls__ruleset_free(rs);
    free(out);
    return rc;
}
