/*
 * test_config_util.h - helpers shared by the config suites
 * (test_config.c, test_config_errors.c): load a YAML string expecting
 * success or failure, and look for an error by place and text.
 * Include after testutil.h and config.h.
 */
#ifndef RLS_TEST_CONFIG_UTIL_H
#define RLS_TEST_CONFIG_UTIL_H

static config_errors tc_errs;

static inline void tc_dump(const config_errors *e)
{
    char buf[400];
    print_message("%d error(s) stored, %d found:\n", e->n, e->total);
    for (int i = 0; i < e->n; i++) {
        rls__config_error_format(&e->e[i], "t.yaml", buf, sizeof buf);
        print_message("  %s\n", buf);
    }
}

/* Parses yaml, which must be valid; the caller frees the result. */
static inline ruleset *tc_ok_at(const char *yaml, const char *file, int line)
{
    ruleset *rs = NULL;
    int rc = rls__config_parse(yaml, strlen(yaml), &rs, &tc_errs);
    if (rc != 0 || !rs) {
        tc_dump(&tc_errs);
        _fail(file, line);
    }
    return rs;
}
#define TC_OK(yaml) tc_ok_at((yaml), __FILE__, __LINE__)

/* Parses yaml, which must be refused with -1; returns the errors. */
static inline const config_errors *tc_bad_at(const char *yaml, size_t len,
                                      const char *file, int line)
{
    ruleset *rs = (ruleset *)1;
    int rc = rls__config_parse(yaml, len, &rs, &tc_errs);
    if (rc != -1 || rs != NULL || tc_errs.n < 1 || tc_errs.total < tc_errs.n) {
        print_message("rls__config_parse returned %d\n", rc);
        tc_dump(&tc_errs);
        _fail(file, line);
    }
    return &tc_errs;
}
#define TC_BAD(yaml) tc_bad_at((yaml), strlen(yaml), __FILE__, __LINE__)
#define TC_BADN(yaml, len) tc_bad_at((yaml), (len), __FILE__, __LINE__)

/* Is there an error at line:col (0 = any column, -1 = any place) whose
 * message contains text? */
static inline int tc_has(const config_errors *e, int line, int col, const char *text)
{
    for (int i = 0; i < e->n; i++) {
        if (line >= 0 && e->e[i].line != line)
            continue;
        if (line >= 0 && col > 0 && e->e[i].column != col)
            continue;
        if (strstr(e->e[i].msg, text))
            return 1;
    }
    return 0;
}

static inline void tc_expect_at(const config_errors *e, int line, int col,
                         const char *text, const char *file, int fline)
{
    if (!tc_has(e, line, col, text)) {
        print_message("no error at %d:%d containing \"%s\"\n", line, col,
                      text);
        tc_dump(e);
        _fail(file, fline);
    }
}
#define TC_EXPECT(e, line, col, text) \
    tc_expect_at((e), (line), (col), (text), __FILE__, __LINE__)

/* The minimal valid document with one limit whose fields are `fields`
 * (flow style), e.g. tc_limit(buf, "name: n, limit: 1, window: 1s"). */
static inline const char *tc_limit(char *buf, size_t size, const char *fields)
{
    snprintf(buf, size,
             "version: 1\n"
             "actions:\n"
             "  a:\n"
             "    limits:\n"
             "      - { %s }\n", fields);
    return buf;
}

/* Error column of the value of `field` on line 5 of a tc_limit document. */
static inline int tc_col(const char *fields, const char *field)
{
    const char *p = strstr(fields, field);
    assert_non_null(p);
    p += strlen(field);
    while (*p == ':' || *p == ' ')
        p++;
    return (int)(p - fields) + 11;  /* "      - { " is 10 columns */
}

#endif
