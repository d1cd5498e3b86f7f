/*
 * pg_host.c - the driver module's side of driver.h: its one exported
 * function, which checks that the library loading it is the one it was
 * built for and returns the backend's table, and the library's internal
 * functions the backend calls, each a call through the table the library
 * passed (librlstore.so exports none of them).
 *
 * Linked into rlstore-pg.so only: the static library and the test binaries
 * link the backend's other objects straight to the library's functions.
 */
#include <stdarg.h>
#include <stdio.h>
#include "pg.h"
#include "driver.h"

static const rls__driver_host *host;   /* set once, before any handle uses the driver */

#define THUNK_FN(ret, name, params, args) \
    ret rls__##name params { return host->name args; }
#define THUNK_VOID(name, params, args) \
    void rls__##name params { host->name args; }
RLS__DRIVER_HOST_MAP(THUNK_FN, THUNK_VOID)
#undef THUNK_FN
#undef THUNK_VOID

/* Formats here (the table's error takes no va_list), then records. */
int rls__error(rls_db *db, int code, const char *fmt, ...)
{
    char msg[sizeof db->errmsg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return host->error(db, code, "%s", msg);
}

__attribute__((visibility("default")))
const rls_backend *rls__pg_driver_entry(const rls__driver_host *h, char *why, size_t size)
{
    if (!h || h->size != sizeof *h || h->version != RLS_VERSION_HEX ||
        h->db_size != sizeof(rls_db) || h->backend_size != sizeof(rls_backend) ||
        h->call_size != sizeof(struct check_call) || h->keyctx_size != sizeof(key_ctx)) {
        snprintf(why, size, "built for librlstore %s, loaded by librlstore %u.%u.%u of "
                 "another build (install the driver of the same version as the library)",
                 RLS_VERSION_STRING, h ? (h->version >> 16) & 0xff : 0,
                 h ? (h->version >> 8) & 0xff : 0, h ? h->version & 0xff : 0);
        return NULL;
    }
    host = h;
    return &rls__pg_backend;
}
