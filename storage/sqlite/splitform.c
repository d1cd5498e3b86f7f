/*
 * splitform.c - the SQLite backend's form of a statement (backend.h,
 * prepare): in a one-file handle the reference text as it is; in a split
 * deployment (split_forms.h) the same text with the tables of the rules
 * file qualified "rules.", rewritten once at prepare time, or a text of its
 * own where a statement reads both files' tables.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "lite.h"
#include "split_forms.h"

/* The split form of each statement that needs one. */
typedef struct split_form {
    int side;          /* enum rls_split_side; SPLIT_NONE: rules tables only */
    const char *sql;   /* SPLIT_OWN: the text to prepare */
} split_form;

#define RLS__SPLIT_FORM(name, side, sql) [STMT_##name] = {side, sql},
#define RLS__ASPLIT_FORM(name, side, sql) [ASTMT_##name] = {side, sql},
#define RLS__CSPLIT_FORM(name, side, sql) [CST_##name] = {side, sql},
static const split_form stmt_split[STMT__COUNT] = {RLS_STMT_SPLIT_MAP(RLS__SPLIT_FORM)};
static const split_form astmt_split[ASTMT__COUNT] = {RLS_ADMIN_SPLIT_MAP(RLS__ASPLIT_FORM)};
static const split_form cst_split[CST__COUNT] = {RLS_COPY_SPLIT_MAP(RLS__CSPLIT_FORM)};
#undef RLS__SPLIT_FORM
#undef RLS__ASPLIT_FORM
#undef RLS__CSPLIT_FORM

static const char *const rules_tables[] = {RLS_RULES_TABLES};
static const char *const both_tables[] = {RLS_BOTH_TABLES};

static int word_in(const char *w, size_t n, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(list[i]) == n && memcmp(list[i], w, n) == 0)
            return 1;
    return 0;
}

/*
 * The split form of sql: every table of the rules file qualified "rules.",
 * rls_blocks and rls_meta qualified by `side`.  Names already qualified and
 * string literals are left alone.  NULL: out of memory (*bad NULL), or the
 * statement names a table of both files without a side (*bad: its name).
 */
static char *split_text(const char *sql, int side, const char **bad, size_t *badlen)
{
    size_t len = strlen(sql), o = 0;
    char prev = 0;  /* the last byte copied that is not a blank */
    /* a qualified name grows by at most 6 bytes and is at least 8 long */
    char *out = malloc(len * 2 + 1);
    *bad = NULL;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)sql[i];
        if (c == '\'') {                     /* 'text', '' inside */
            size_t j = i + 1;
            while (j < len && !(sql[j] == '\'' && sql[j + 1] != '\''))
                j += sql[j] == '\'' ? 2 : 1;
            j = j < len ? j + 1 : len;
            memcpy(out + o, sql + i, j - i);
            o += j - i;
            prev = '\'';
            i = j;
            continue;
        }
        if (isalpha(c) || c == '_') {
            size_t j = i;
            while (j < len && (isalnum((unsigned char)sql[j]) || sql[j] == '_'))
                j++;
            const char *q = NULL;
            if (prev != '.' && word_in(sql + i, j - i, rules_tables,
                                       sizeof rules_tables / sizeof rules_tables[0]))
                q = "rules.";
            else if (prev != '.' && word_in(sql + i, j - i, both_tables,
                                            sizeof both_tables / sizeof both_tables[0])) {
                if (side != SPLIT_RULES && side != SPLIT_COUNTERS) {
                    *bad = sql + i;
                    *badlen = j - i;
                    free(out);
                    return NULL;
                }
                q = side == SPLIT_RULES ? "rules." : "main.";
            }
            if (q) {
                memcpy(out + o, q, strlen(q));
                o += strlen(q);
            }
            memcpy(out + o, sql + i, j - i);
            o += j - i;
            prev = sql[j - 1];
            i = j;
            continue;
        }
        out[o++] = (char)c;
        if (!isspace(c))
            prev = (char)c;
        i++;
    }
    out[o] = '\0';
    return out;
}

int rls__lite_prepare(rls_db *db, int table, int id, const char *sql, rls_stmt **out)
{
    if (!db->lite->split)
        return rls__prepare_text(db, sql, out);
    const split_form *f = table == RLS_TABLE_CHECK ? &stmt_split[id]
                          : table == RLS_TABLE_ADMIN ? &astmt_split[id] : &cst_split[id];
    if (f->side == SPLIT_OWN)
        return rls__prepare_text(db, f->sql, out);
    const char *bad;
    size_t badlen = 0;
    char *text = split_text(sql, f->side, &bad, &badlen);
    *out = NULL;
    if (!text && bad)
        return rls__error(db, RLS_ESTORAGE, "statement on '%.*s' has no split-deployment form",
                          (int)badlen, bad);
    if (!text)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    int rc = rls__prepare_text(db, text, out);
    free(text);
    return rc;
}
