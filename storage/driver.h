/*
 * driver.h - the PostgreSQL backend as a driver module, loaded on first use.
 *
 * librlstore.so links no libpq: a program that only ever opens SQLite files
 * does not drag libpq and its ~25 libraries in.  The PostgreSQL backend
 * (storage/pg/) is built as a module of its own, rlstore-pg.so, installed
 * beside the library in $(LIBDIR)/rlstore/ and loaded with dlopen the first
 * time rls_open meets a postgresql:// URI (driver.c), as unixODBC and GDAL
 * load their drivers.
 *
 * The backend calls a few internal functions of the library (the check
 * pipeline, errors, the statement layer).  The library exports none of
 * them: it hands the driver this table of pointers when it loads it, and
 * the driver (storage/pg/pg_host.c) defines each rls__ name it calls as a
 * one-line call through the table.  So the library's dynamic symbols stay
 * exactly its public API (tests/install/test_abi.sh), its internal calls
 * stay direct, and the driver works the same in a program that linked
 * librlstore.a.  The table carries the library's version and the sizes of
 * the structures both sides share: a driver of another build refuses to
 * load, with a message, instead of misreading the handle.
 *
 * The static library and the test binaries may have the backend linked in
 * instead (driver.c compiled with RLS_PG_BUILTIN: no dlopen).
 *
 * A function the driver starts to call is added to RLS__DRIVER_HOST_MAP:
 * without it, linking rlstore-pg.so fails with "undefined reference to
 * rls__...".
 */
#ifndef RLS_DRIVER_H
#define RLS_DRIVER_H

#include <stddef.h>
#include "db.h"
#include "check.h"
#include "keyctx.h"
#include "admin.h"
#include "events.h"

/* The module, relative to the directory of librlstore.so, and the symbol
 * the library looks up in it. */
#define RLS__PG_DRIVER_FILE "rlstore/rlstore-pg.so"
#define RLS__PG_DRIVER_ENTRY "rls__pg_driver_entry"

/*
 * The library's functions the driver calls: FN(ret, name, params, args) for
 * one that returns a value, VOID(name, params, args) for one that does
 * not; name is the function's name without its rls__ prefix.  rls__error,
 * variadic, is the table's first member (error) and not in this list.
 */
#define RLS__DRIVER_HOST_MAP(FN, VOID)                                                   \
    VOID(cache_fast_trust, (rls_db * db, int on), (db, on))                              \
    VOID(cache_policy_gen_set, (rls_db * db, int64_t gen), (db, gen))                    \
    VOID(cache_resv_never_set, (rls_db * db, int never), (db, never))                    \
    VOID(check_counted, (rls_db * db, struct check_call * call), (db, call))             \
    FN(int, check_decide, (rls_db * db, struct check_call * call, int64_t floor_ms),     \
       (db, call, floor_ms))                                                             \
    FN(int, check_tx, (rls_db * db, struct check_call * call), (db, call))               \
    FN(int, doctor_add, (rls_rows * r, const char *check, const char *status,            \
                         const char *detail), (r, check, status, detail))                \
    FN(int, doctor_text, (rls_db * db, const char *sql, char *buf, size_t size),         \
       (db, sql, buf, size))                                                             \
    VOID(exec_rollback, (rls_db * db), (db))                                             \
    FN(int, exec_simple, (rls_db * db, int id), (db, id))                                \
    FN(int, housekeeping_due, (const rls_db *db, int64_t now), (db, now))                \
    VOID(keyctx_release, (key_ctx * ctx), (ctx))                                         \
    FN(int, keyctx_reload, (rls_db * db, key_ctx * ctx, int64_t now), (db, ctx, now))    \
    FN(int, prepare_text, (rls_db * db, const char *text, rls_stmt **out), (db, text, out)) \
    VOID(schema_found, (int64_t ver, int want), (ver, want))                             \
    FN(int, schema_upgrade_ok, (rls_db * db, const char *what, int64_t ver, int want),   \
       (db, what, ver, want))                                                            \
    FN(int, sql_code, (int src), (src))                                                  \
    FN(int, sql_error, (rls_db * db, int src, const char *what), (db, src, what))        \
    FN(rls_stmt *, stmt, (rls_db * db, int id), (db, id))                                \
    FN(int, stmt_failed, (rls_db * db), (db))                                            \
    VOID(stmt_finalize_all, (rls_db * db), (db))

#define RLS__DRIVER_MEMBER(ret, name, params, args) ret(*name) params;
#define RLS__DRIVER_MEMBER_VOID(name, params, args) void(*name) params;

typedef struct rls__driver_host {
    /* What the driver checks before it accepts the table: the same
     * version and the same layouts as the library it was built with. */
    unsigned int version;   /* RLS_VERSION_HEX */
    size_t size;            /* sizeof(rls__driver_host) */
    size_t db_size;         /* sizeof(rls_db) */
    size_t backend_size;    /* sizeof(rls_backend) */
    size_t call_size;       /* sizeof(struct check_call) */
    size_t keyctx_size;     /* sizeof(key_ctx) */
    int (*error)(rls_db *db, int code, const char *fmt, ...);
    RLS__DRIVER_HOST_MAP(RLS__DRIVER_MEMBER, RLS__DRIVER_MEMBER_VOID)
} rls__driver_host;

/* The driver's one exported function (pg_host.c): the backend's table, or
 * NULL with the reason in why when host is not the library it was built
 * for. */
typedef const rls_backend *rls__driver_entry_fn(const rls__driver_host *host, char *why,
                                                size_t size);
rls__driver_entry_fn rls__pg_driver_entry;

#endif
