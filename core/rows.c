/*
 * rows.c - the rls_rows container: a table of named, typed columns with
 * NULL-able cells, built by the library and read through rlstore.h.
 */
#include <stdlib.h>
#include <string.h>
#include "rows.h"

typedef struct cell {
    int set;        /* 0 = NULL */
    int64_t i;
    char *s;
} cell;

struct rls_rows {
    int ncols, nrows, caprows;
    char **names;
    int *types;
    cell *cells;    /* nrows * ncols, row-major */
};

rls_rows *rls__rows_new(const rows_col *cols, int ncols)
{
    rls_rows *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->names = calloc((size_t)ncols, sizeof *r->names);
    r->types = calloc((size_t)ncols, sizeof *r->types);
    if (!r->names || !r->types)
        goto fail;
    r->ncols = ncols;
    for (int c = 0; c < ncols; c++) {
        r->names[c] = strdup(cols[c].name);
        if (!r->names[c])
            goto fail;
        r->types[c] = cols[c].type;
    }
    return r;
fail:
    rls_rows_free(r);
    return NULL;
}

int rls__rows_add(rls_rows *r)
{
    if (r->nrows == r->caprows) {
        int cap = r->caprows ? r->caprows * 2 : 16;
        cell *n = realloc(r->cells, sizeof *n * (size_t)cap * (size_t)(r->ncols ? r->ncols : 1));
        if (!n)
            return -1;
        r->cells = n;
        r->caprows = cap;
    }
    memset(&r->cells[(size_t)r->nrows * (size_t)r->ncols], 0, sizeof(cell) * (size_t)r->ncols);
    return r->nrows++;
}

static cell *at(const rls_rows *r, int row, int col)
{
    if (!r || row < 0 || row >= r->nrows || col < 0 || col >= r->ncols)
        return NULL;
    return &r->cells[(size_t)row * (size_t)r->ncols + (size_t)col];
}

int rls__rows_set_int(rls_rows *r, int row, int col, int64_t v)
{
    cell *c = at(r, row, col);
    if (!c || r->types[col] != RLS_COL_INT)
        return -1;
    c->set = 1;
    c->i = v;
    return 0;
}

int rls__rows_set_text(rls_rows *r, int row, int col, const char *s, size_t len)
{
    cell *c = at(r, row, col);
    if (!c || r->types[col] != RLS_COL_TEXT)
        return -1;
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    if (len)
        memcpy(copy, s, len);
    copy[len] = '\0';
    free(c->s);
    c->s = copy;
    c->set = 1;
    return 0;
}

int rls__rows_put_int(rls_rows *r, int row, const char *name, int64_t v)
{
    return rls__rows_set_int(r, row, rls_rows_find(r, name), v);
}

int rls__rows_put_str(rls_rows *r, int row, const char *name, const char *s)
{
    return rls__rows_set_text(r, row, rls_rows_find(r, name), s ? s : "", s ? strlen(s) : 0);
}

int rls_rows_count(const rls_rows *rows)
{
    return rows ? rows->nrows : 0;
}

int rls_rows_columns(const rls_rows *rows)
{
    return rows ? rows->ncols : 0;
}

const char *rls_rows_name(const rls_rows *rows, int col)
{
    return rows && col >= 0 && col < rows->ncols ? rows->names[col] : NULL;
}

int rls_rows_type(const rls_rows *rows, int col)
{
    return rows && col >= 0 && col < rows->ncols ? rows->types[col] : 0;
}

int rls_rows_find(const rls_rows *rows, const char *name)
{
    for (int c = 0; rows && name && c < rows->ncols; c++)
        if (strcmp(rows->names[c], name) == 0)
            return c;
    return -1;
}

int rls_rows_is_null(const rls_rows *rows, int row, int col)
{
    const cell *c = at(rows, row, col);
    return !c || !c->set;
}

int64_t rls_rows_int(const rls_rows *rows, int row, int col)
{
    const cell *c = at(rows, row, col);
    return c && c->set && rows->types[col] == RLS_COL_INT ? c->i : 0;
}

const char *rls_rows_text(const rls_rows *rows, int row, int col)
{
    const cell *c = at(rows, row, col);
    return c && c->set && rows->types[col] == RLS_COL_TEXT ? c->s : NULL;
}

void rls_rows_free(rls_rows *rows)
{
    if (!rows)
        return;
    for (int i = 0; rows->cells && i < rows->nrows * rows->ncols; i++)
        free(rows->cells[i].s);
    for (int c = 0; rows->names && c < rows->ncols; c++)
        free(rows->names[c]);
    free(rows->cells);
    free(rows->names);
    free(rows->types);
    free(rows);
}

void rls_free(void *p)
{
    free(p);
}
