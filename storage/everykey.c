/*
 * everykey.c - rows of every action (blocks and exact tier assignments
 * without an action) whose key is an IP address, matched under each IP
 * action's normalisation.
 *
 * Such a row applies to a check of an IP action when the action's
 * normalisation of its key equals the check's normalised key: a block of
 * 1.2.3.4 blocks 1.2.3.5 under an action that folds IPv4 to /24, since both
 * are counted as 1.2.3.0/24.  An index cannot find those rows (the stored
 * text of an address does not sort by network), so each handle keeps them
 * in memory, parsed, and reads them again whenever the rules generation
 * moves: every change of a row of every action moves it (policy.c), in the
 * same transaction, so the list read at generation G is the table at G.
 * Rows with any spelling of an address are found, also those written
 * before such keys were stored canonical.
 */
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "keyctx.h"
#include "keynorm.h"

typedef struct every_ip {
    unsigned char addr[16];       /* 128-bit form, IPv4 as ::ffff:a.b.c.d */
    int type;                     /* 1 block, 2 tier assignment */
    int64_t until;                /* until_ms / expires_ms, 0 = forever */
    char text[RLS_NAME_MAX + 1];  /* the tier */
    char reason[256];             /* the block's reason */
} every_ip;

void rls__every_ip_free(rls_db *db)
{
    free(db->rc.every_ip);
    db->rc.every_ip = NULL;
    db->rc.nevery_ip = 0;
    db->rc.every_ip_loaded = 0;
}

static void copy_text(char *dst, size_t size, const unsigned char *src)
{
    size_t n = src ? strlen((const char *)src) : 0;
    if (n >= size)
        n = size - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Reads the rows (inside a transaction whose rules are refreshed). */
static int every_ip_load(rls_db *db)
{
    rls_stmt *st = rls__astmt(db, ASTMT_EVERY_ROWS);
    every_ip *v = NULL;
    int n = 0, cap = 0, rc;
    if (!st)
        return rls__stmt_failed(db);
    while ((rc = sql_step(st)) == SQL_ROW) {
        unsigned char a[16];
        int bits;
        const char *key = sql_column_blob(st, 1);
        int kl = sql_column_bytes(st, 1);
        if (!key || kl <= 0 || rls__key_ip_net(key, (size_t)kl, a, &bits) != 0 || bits != 128)
            continue;   /* not one address: matched by its text (keyctx.c) */
        if (n == cap) {
            int nc = cap ? cap * 2 : 16;
            every_ip *nv = realloc(v, sizeof *nv * (size_t)nc);
            if (!nv) {
                sql_reset(st);
                free(v);
                return rls__error(db, RLS_ENOMEM, "out of memory");
            }
            v = nv;
            cap = nc;
        }
        every_ip *e = &v[n++];
        memcpy(e->addr, a, 16);
        e->type = sql_column_int(st, 0);
        e->until = sql_column_int64(st, 2);
        copy_text(e->text, sizeof e->text, sql_column_text(st, 3));
        copy_text(e->reason, sizeof e->reason, sql_column_text(st, 4));
    }
    sql_reset(st);
    if (rc != SQL_DONE) {
        free(v);
        return rls__sql_error(db, rc, "cannot read the blocks and tiers of every action");
    }
    free(db->rc.every_ip);
    db->rc.every_ip = v;
    db->rc.nevery_ip = n;
    db->rc.every_ip_loaded = 1;
    db->rc.every_ip_gen = db->rc.rules_gen;
    return RLS_OK;
}

/* A block of every action found in memory, as keyctx.c's rows are taken. */
static void take_block(key_ctx *ctx, const every_ip *e, int64_t now)
{
    int active = e->until == 0 || e->until > now;
    if (!active || (ctx->block.active && (ctx->block.until_ms == 0 ||
                                          (e->until != 0 && e->until <= ctx->block.until_ms))))
        return;
    ctx->block.found = ctx->block.active = 1;
    ctx->block.until_ms = e->until;
    ctx->block.rule[0] = '\0';
    memcpy(ctx->block.reason, e->reason, sizeof ctx->block.reason);
}

/* A tier assignment of every action found in memory, unless the key's
 * rows already hold one (its own spelling wins; among several addresses
 * of one network the first read). */
static void take_assignment(key_ctx *ctx, const every_ip *e, int64_t now)
{
    if (ctx->nexact >= 2 || (e->until != 0 && e->until <= now))
        return;
    for (int i = 0; i < ctx->nexact; i++)
        if (ctx->exact_action[i][0] == '\0')
            return;
    int i = ctx->nexact++;
    assign_cand *c = &ctx->exact[i];
    memcpy(ctx->exact_tier[i], e->text, sizeof ctx->exact_tier[i]);
    ctx->exact_action[i][0] = '\0';
    memset(c, 0, sizeof *c);
    c->pat.kind = PAT_EXACT;
    c->text = ctx->key;
    c->action = ctx->exact_action[i];
    c->tier = ctx->exact_tier[i];
    c->expires_ms = e->until;
    c->dynamic = 1;
}

int rls__every_ip_apply(rls_db *db, key_ctx *ctx, int64_t now, int trusted)
{
    unsigned char net[16];
    int bits, rc;
    if (ctx->act->key_kind != KEY_IP ||
        rls__key_ip_net(ctx->key, ctx->keylen, net, &bits) != 0)
        return RLS_OK;
    if (!db->rc.every_ip_loaded || db->rc.every_ip_gen != db->rc.rules_gen) {
        if (trusted) {   /* no transaction to read them in: the usual path will */
            ctx->policy_maybe = 1;
            return RLS_OK;
        }
        if ((rc = every_ip_load(db)))
            return rc;
    }
    for (int i = 0; i < db->rc.nevery_ip; i++) {
        const every_ip *e = &db->rc.every_ip[i];
        if (!rls__key_net_contains(net, bits, e->addr))
            continue;
        if (trusted) {
            ctx->policy_maybe = 1;
            return RLS_OK;
        }
        if (e->type == 1)
            take_block(ctx, e, now);
        else
            take_assignment(ctx, e, now);
    }
    return RLS_OK;
}
