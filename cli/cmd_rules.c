/*
 * cmd_rules.c - the rule-set commands: export, rules, versions, rollback.
 *
 * `rules` summarises the active rule set through the public API only: the
 * version row, the names of the tiers and actions (read from the YAML's
 * top-level block mappings) and, per action, the limits a key on the
 * default tier gets (rls_explain_at with a probe key, charging nothing).
 */
#include <stdlib.h>
#include <string.h>
#include "rlctl.h"

#define MAX_NAMES 256

int cmd_export(rlctl_ctx *ctx)
{
    int64_t version = 0;
    char *yaml = NULL;
    size_t len = 0;
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if (ctx->nargs == 1 && (rc = arg_int(ctx, 0, "version", 1, INT64_MAX, &version)))
        return rc;
    if ((rc = rls_rules_get(ctx->db, version, &yaml, &len)) != RLS_OK) {
        if (version)
            return fail_lib(ctx, rc, "cannot export version %lld", (long long)version);
        return fail_lib(ctx, rc, "cannot export the active rules");
    }
    if (ctx->json) {
        json_obj_begin();
        json_key("version");
        if (version) {
            json_int(version);
        } else {
            rls_rows *v = NULL;
            int64_t active = 0;
            if (rls_rules_versions(ctx->db, &v) == RLS_OK)
                for (int r = 0; r < rls_rows_count(v); r++)
                    if (row_int(v, r, "active"))
                        active = row_int(v, r, "version");
            rls_rows_free(v);
            if (active)
                json_int(active);
            else
                json_null();
        }
        json_key("yaml");
        json_str(yaml);
        json_obj_end();
        json_end_line();
    } else {
        fwrite(yaml, 1, len, stdout);
    }
    rls_free(yaml);
    return 0;
}

static const col_spec version_cols[] = {
    {"version", ">VERSION", COL_INT},
    {"active", "ACTIVE", COL_BOOL},
    {"created_ms", "CREATED", COL_TIME},
    {"os_user", "USER", COL_TEXT},
    {"tool", "TOOL", COL_TEXT},
    {"source", "SOURCE", COL_TEXT},
    {"bytes", ">BYTES", COL_INT},
    {"comment", "COMMENT", COL_TEXT},
};

int cmd_versions(rlctl_ctx *ctx)
{
    rls_rows *rows = NULL;
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = rls_rules_versions(ctx->db, &rows)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot list rule versions");
    print_rows(ctx, rows, version_cols, (int)(sizeof version_cols / sizeof version_cols[0]));
    rls_rows_free(rows);
    return 0;
}

int cmd_rollback(rlctl_ctx *ctx)
{
    int64_t version, nv = 0;
    int rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = arg_int(ctx, 0, "version", 1, INT64_MAX, &version)))
        return rc;
    rc = rls_rules_rollback_at(ctx->db, version, opt_get(ctx, "comment"), ctx->now_ms, &nv);
    if (rc != RLS_OK)
        return fail_lib(ctx, rc, "cannot roll back to version %lld", (long long)version);
    if (ctx->json) {
        json_obj_begin();
        json_key("rolled_back_to");
        json_int(version);
        json_key("version");
        json_int(nv);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("rolled back to version %lld as version %lld\n", (long long)version,
               (long long)nv);
    }
    return 0;
}

/* ---- rules summary ------------------------------------------------------ */

typedef char name_t[RLS_NAME_MAX + 1];

/*
 * Collects the keys of the top-level block mapping `section:` of yaml into
 * names.  Returns their number, or -1 if the section is written in flow
 * style ({...}) and so is not listed.  Only what a rule file looks like in
 * practice is understood; the library has validated the YAML already.
 */
static int yaml_children(const char *yaml, const char *section, name_t *names, int max)
{
    size_t slen = strlen(section);
    const char *p = yaml;
    int n = 0, child = -1, in = 0;

    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        const char *next = eol ? eol + 1 : p + len;
        if (!in) {
            if (len > slen && strncmp(p, section, slen) == 0 && p[slen] == ':') {
                const char *q = p + slen + 1;
                while (q < p + len && (*q == ' ' || *q == '\t'))
                    q++;
                if (q < p + len && *q != '#')
                    return *q == '{' ? -1 : 0;
                in = 1;
            }
            p = next;
            continue;
        }
        int indent = 0;
        while ((size_t)indent < len && p[indent] == ' ')
            indent++;
        if ((size_t)indent == len || p[indent] == '#' || p[indent] == '\r') {
            p = next;
            continue;
        }
        if (indent == 0)
            break;
        if (child < 0)
            child = indent;
        if (indent == child) {
            const char *k = p + indent, *end;
            if (*k == '-')
                break;          /* a sequence, not a mapping */
            if (*k == '"' || *k == '\'') {
                end = memchr(k + 1, *k, len - (size_t)indent - 1);
                k++;
            } else {
                end = memchr(k, ':', len - (size_t)indent);
            }
            if (end && n < max) {
                size_t kl = (size_t)(end - k);
                while (kl > 0 && k[kl - 1] == ' ')
                    kl--;
                if (kl > 0 && kl <= RLS_NAME_MAX) {
                    memcpy(names[n], k, kl);
                    names[n][kl] = '\0';
                    n++;
                }
            }
        }
        p = next;
    }
    return n;
}

/* Limits of action for a key on its default tier, via explain with a
 * probe key that the action's key kind accepts. */
static int probe_limits(rlctl_ctx *ctx, const char *action, rls_rows **info, rls_rows **limits)
{
    static const char *const probes[] = {"rlctl-probe", "192.0.2.1", "probe@example.invalid"};
    int rc = RLS_EKEY;
    for (size_t i = 0; i < sizeof probes / sizeof probes[0] && rc == RLS_EKEY; i++)
        rc = rls_explain_at(ctx->db, action, probes[i], ctx->now_ms, info, limits);
    return rc;
}

static void names_json(const char *key, name_t *names, int n)
{
    json_key(key);
    if (n < 0) {
        json_null();
        return;
    }
    json_arr_begin();
    for (int i = 0; i < n; i++)
        json_str(names[i]);
    json_arr_end();
}

static void names_line(out_table *t, const char *what, name_t *names, int n)
{
    char buf[1024];
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? " " : "", names[i]);
    tab_row(t);
    tab_set(t, 0, what);
    tab_set_esc(t, 1, n < 0 ? "(flow-style YAML: see 'rlctl export')" : buf);
}

int cmd_rules(rlctl_ctx *ctx)
{
    static name_t tiers[MAX_NAMES], actions[MAX_NAMES];
    rls_rows *vers = NULL;
    char *yaml = NULL;
    size_t len;
    int active = -1, rc = db_open(ctx, 0);
    if (rc)
        return rc;
    if ((rc = rls_rules_get(ctx->db, 0, &yaml, &len)) != RLS_OK)
        return fail_lib(ctx, rc, "cannot read the active rules");
    if ((rc = rls_rules_versions(ctx->db, &vers)) != RLS_OK) {
        rls_free(yaml);
        return fail_lib(ctx, rc, "cannot list rule versions");
    }
    for (int r = 0; r < rls_rows_count(vers); r++)
        if (row_int(vers, r, "active"))
            active = r;
    int nt = yaml_children(yaml, "tiers", tiers, MAX_NAMES);
    int na = yaml_children(yaml, "actions", actions, MAX_NAMES);
    rls_free(yaml);

    if (ctx->json) {
        json_obj_begin();
        json_key("version");
        json_row_obj(vers, active < 0 ? rls_rows_count(vers) : active);
        names_json("tiers", tiers, nt);
        json_key("actions");
        json_arr_begin();
    } else {
        static const char *const kv[] = {"FIELD", "VALUE"};
        char buf[64];
        out_table *t = tab_new(2, kv);
        tab_row(t);
        tab_set(t, 0, "version");
        tab_setf(t, 1, "%lld", (long long)row_int(vers, active, "version"));
        tab_row(t);
        tab_set(t, 0, "applied");
        tab_set(t, 1, fmt_time(row_int(vers, active, "created_ms"), "-", buf, sizeof buf));
        static const char *const fields[][2] = {
            {"os_user", "by"}, {"tool", "tool"}, {"source", "source"}, {"comment", "comment"}};
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            tab_row(t);
            tab_set(t, 0, fields[i][1]);
            tab_set_esc(t, 1, row_text(vers, active, fields[i][0]));
        }
        names_line(t, "tiers", tiers, nt);
        names_line(t, "actions", actions, na);
        tab_print(t, ctx->tty);
        if ((rc = tab_failed(t)))
            fail_code(ctx, rc, "ENOMEM", "out of memory");
        tab_free(t);
    }
    static const char *const lh[] = {"ACTION", "TIER", "LIMIT", "ALGORITHM", ">CAPACITY",
                                     ">BURST", "WINDOW", "MODE"};
    out_table *lt = ctx->json ? NULL : tab_new(8, lh);
    for (int a = 0; a < na && rc == 0; a++) {
        rls_rows *info = NULL, *limits = NULL;
        int lrc = probe_limits(ctx, actions[a], &info, &limits);
        const char *tier = lrc == RLS_OK ? row_text(info, 0, "tier") : NULL;
        if (ctx->json) {
            json_obj_begin();
            json_key("name");
            json_str(actions[a]);
            json_key("tier");
            json_str(tier);
            json_key("limits");
            if (lrc == RLS_OK)
                json_rows(limits);
            else
                json_null();
            json_obj_end();
        } else if (lrc != RLS_OK || rls_rows_count(limits) == 0) {
            tab_row(lt);
            tab_set_esc(lt, 0, actions[a]);
            tab_set_esc(lt, 1, tier);
            tab_set(lt, 2, lrc == RLS_OK ? "(none)" : rls_strerror(lrc));
        } else {
            for (int r = 0; r < rls_rows_count(limits); r++) {
                char buf[64];
                tab_row(lt);
                tab_set_esc(lt, 0, actions[a]);
                tab_set_esc(lt, 1, tier);
                tab_set_esc(lt, 2, row_text(limits, r, "name"));
                tab_set_esc(lt, 3, row_text(limits, r, "algorithm"));
                tab_setf(lt, 4, "%lld", (long long)row_int(limits, r, "limit"));
                tab_setf(lt, 5, "%lld", (long long)row_int(limits, r, "burst"));
                tab_set(lt, 6, fmt_dur_cell(ctx, row_int(limits, r, "window_ms"), buf, sizeof buf));
                tab_set_esc(lt, 7, row_text(limits, r, "mode"));
            }
        }
        rls_rows_free(info);
        rls_rows_free(limits);
    }
    if (lt) {
        putchar('\n');
        tab_print(lt, ctx->tty);
        if (!rc && (rc = tab_failed(lt)))
            fail_code(ctx, rc, "ENOMEM", "out of memory");
        tab_free(lt);
    }
    if (ctx->json) {
        json_arr_end();
        json_obj_end();
        json_end_line();
    }
    rls_rows_free(vers);
    return rc;
}
