/*
 * pg_doctor.c - the PostgreSQL backend's rows of rls_doctor() (backend.h,
 * doctor): the server and libpq, the database and schema, and whether the
 * connection is encrypted where it crosses a network.
 */
#include <stdio.h>
#include <string.h>
#include "pg.h"
#include "admin.h"

/* A PostgreSQL database: the server, the schema, the session's safety. */
int rls__pg_doctor(rls_db *db, int full, rls_rows *r, int *bad, int *done)
{
    char buf[512], detail[700];
    int rc;
    (void)full;
    *done = 0;
    if ((rc = rls__doctor_text(db, "SELECT current_setting('server_version')", buf, sizeof buf)))
        return rc;
    snprintf(detail, sizeof detail, "PostgreSQL %s (libpq %d)", buf, PQlibVersion());
    *bad |= rls__doctor_add(r, "server_version", "ok", detail);
    if ((rc = rls__doctor_text(db, "SELECT current_schema() || ', schema version ' ||"
                          " (SELECT version FROM rls_schema WHERE id = 1)", buf, sizeof buf)))
        return rc;
    snprintf(detail, sizeof detail, "PostgreSQL database '%s', schema %s", db->ident.path, buf);
    *bad |= rls__doctor_add(r, "role", "ok", detail);
    /* unencrypted is fine on this host, not across a network */
    if ((rc = rls__doctor_text(db, "SELECT CASE WHEN s.ssl THEN 'tls' WHEN inet_server_addr() IS NULL"
                          " OR inet_server_addr() <<= inet '127.0.0.0/8'"
                          " OR inet_server_addr() = inet '::1' THEN 'local' ELSE 'plain' END"
                          " FROM pg_stat_ssl s WHERE s.pid = pg_backend_pid()", buf, sizeof buf)))
        return rc;
    *bad |= rls__doctor_add(r, "connection", strcmp(buf, "plain") == 0 ? "warn" : "ok",
                strcmp(buf, "tls") == 0 ? "encrypted (TLS)"
                : strcmp(buf, "local") == 0 ? "on this host, not encrypted"
                : "not encrypted across the network: set sslmode=require (or verify-full)");
    return RLS_OK;
}

