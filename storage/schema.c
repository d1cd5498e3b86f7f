/*
 * schema.c - explicit schema upgrades (issue #20): rls_options.no_upgrade
 * and rls_migrate().
 *
 * Why: on PostgreSQL every host of a deployment opens the same schema.  A
 * rolling deploy that upgrades the library host by host would otherwise
 * have the first new host migrate the schema under the old hosts still
 * running (which then refuse it as newer).  With no_upgrade the
 * applications never migrate; the operator runs `rlctl migrate` once, on
 * purpose, when the hosts are ready.  The backends (open.c, split.c,
 * pg_open.c) ask rls__schema_upgrade_ok() before they upgrade an existing
 * schema; creating a new one is not an upgrade and stays allowed.
 */
#include <stdlib.h>
#include <string.h>
#include "events.h"

/* What the last open of this thread found (rls_migrate reads it). */
static _Thread_local int64_t found_ver = -1;
static _Thread_local int found_want = -1;

void rls__schema_found(int64_t ver, int want)
{
    found_ver = ver;
    found_want = want;
}

int rls__schema_upgrade_ok(rls_db *db, const char *what, int64_t ver, int want)
{
    rls__schema_found(ver, want);
    if (!db->ident.opt.no_upgrade)
        return RLS_OK;
    return rls__error(db, RLS_EOLDSCHEMA, "%s has schema version %lld and this library needs "
                      "version %d; no_upgrade is set, so it is not upgraded here: upgrade it "
                      "once with 'rlctl migrate'", what, (long long)ver, want);
}

/*
 * Opens path with opt (no_upgrade forced) to learn its version: RLS_OK
 * with *from == *to when current, RLS_EOLDSCHEMA with *from older.
 */
static int probe(const char *path, const rls_options *opt, int64_t *from, int64_t *to)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    if (opt)
        memcpy(&o, opt, opt->size < sizeof o ? opt->size : sizeof o);
    o.size = sizeof o;
    o.no_upgrade = 1;
    o.create = 0;
    o.log_fn = NULL;
    found_ver = -1;
    found_want = -1;
    int rc = rls_open(&db, path, &o);
    rls_close(db);
    if (found_ver >= 0) {   /* also ENEWER: the version it found */
        *from = found_ver;
        *to = found_want;
    }
    return rc;
}

int rls_migrate(const char *path, const rls_options *opt, int dry_run, int64_t *from,
                int64_t *to)
{
    int64_t f = -1, t = -1;
    rls_db *db = NULL;
    if (!path || (opt && opt->size < sizeof(size_t)))
        return RLS_EINVAL;
    int rc = probe(path, opt, &f, &t);
    if (from)
        *from = f;
    if (to)
        *to = t;
    if (rc == RLS_OK || rc != RLS_EOLDSCHEMA || dry_run)
        return rc == RLS_EOLDSCHEMA ? RLS_OK : rc;
    rls_options o;
    rls_options_init(&o);
    if (opt)
        memcpy(&o, opt, opt->size < sizeof o ? opt->size : sizeof o);
    o.size = sizeof o;
    o.no_upgrade = 0;
    o.create = 0;
    rc = rls_open(&db, path, &o);
    rls_close(db);
    return rc;
}
