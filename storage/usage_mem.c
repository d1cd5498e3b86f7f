/*
 * usage_mem.c - `durability: memory` keys in the usage listing (usage.h):
 * they live in the shared-memory table (memclass.h), not in rows a
 * key-ordered SQL walk can reach.
 */
#include <stdlib.h>
#include <string.h>
#include "memclass.h"
#include "usage.h"

/* They have no row to walk in key order: an action with a memory-class
 * limit is listed whole (small), its universe its keys in the database and
 * its live entries in the shared-memory table (memclass.h), so that each
 * is peeked.  That costs a peek per key of such an action. */
struct mem_keys {
    usage_ctx *u;
    usage_src *s;
    const rule_action *act;
    int cap, rc;
};

static int mem_key_cb(void *arg, int64_t lid, int kind, const void *key, size_t key_len,
                      const algo_state *st)
{
    struct mem_keys *m = arg;
    char k[RLS_KEY_MAX_LIMIT + 65];
    int mine = 0;
    (void)kind;
    (void)st;
    for (int t = -1; !mine && t < m->act->ntiers; t++) {
        const rule_limit *ls = t < 0 ? m->act->limits : m->act->tiers[t].limits;
        int n = t < 0 ? m->act->nlimits : m->act->tiers[t].nlimits;
        for (int i = 0; i < n && !mine; i++)
            mine = ls[i].id == lid && rls__mem_limit(&ls[i]);
    }
    if (!mine || key_len >= sizeof k || memchr(key, '\0', key_len))
        return 0;
    memcpy(k, key, key_len);
    k[key_len] = '\0';
    if (m->u->substr && !strstr(k, m->u->substr))
        return 0;
    m->rc = rls__usage_uni_add(m->u, m->s, k, &m->cap);
    return m->rc ? -1 : 0;
}

/* s's whole universe, database and table, sorted and unique. */
int rls__usage_mem_universe(usage_ctx *u, usage_src *s)
{
    struct mem_keys m = {u, s, rls__ruleset_action(u->db->rc.rules, s->action), 0, RLS_OK};
    rls_stmt *st;
    char **keys;
    int n, rc;
    if (s->small == 2)
        return RLS_OK;   /* done */
    for (int i = 0; i < s->nuni; i++)
        free(s->uni[i]);
    free(s->uni);
    s->uni = NULL;
    s->nuni = 0;
    if ((rc = rls__usage_stmt(u, UST_FWD, &st)))
        return rc;
    rls__usage_bind(u, st, s->action, INT64_MAX, NULL, 0);
    if ((rc = rls__usage_read_keys(u, st, &keys, NULL, &n, 0)))
        return rc;
    s->uni = keys;
    s->nuni = m.cap = n;
    if (m.act && (rc = rls__mem_each(u->db, u->now, mem_key_cb, &m)) == -1)
        rc = m.rc;
    if (rc)
        return rc;
    rls__usage_uni_sort(s);
    s->nkeys = s->nuni;
    s->small = 2;   /* small, and the table's keys are in */
    return RLS_OK;
}

int rls__usage_mem_src(const usage_ctx *u, const usage_src *s)
{
    return rls__mem_action_has(u->db->rc.rules, s->action);
}

