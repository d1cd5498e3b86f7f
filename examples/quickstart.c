/*
 * quickstart.c - the smallest complete use of librlstore: open a database,
 * apply a rule, and check a few requests.  Run: build/examples/quickstart DB
 */
#include <stdio.h>
#include <string.h>
#include <rlstore.h>

static const char *rules =
    "version: 1\n"
    "actions:\n"
    "  signup:\n"
    "    key: ip\n"
    "    limits:\n"
    "      - { name: daily, algorithm: fixed_window, limit: 3, window: 1d }\n";

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "quickstart.db";
    rls_db *db;
    rls_result res;
    int rc = rls_open(&db, path, NULL);
    if (rc != RLS_OK) {
        fprintf(stderr, "quickstart: cannot open '%s': %s\n", path, rls_errmsg(NULL));
        return 1;
    }
    rc = rls_rules_apply(db, rules, strlen(rules), "quickstart", "demo rules", NULL);
    for (int i = 1; rc == RLS_OK && i <= 5; i++) {
        rc = rls_check(db, "signup", "203.0.113.7", 1, &res);
        if (rc == RLS_OK)
            printf("sign-up %d from 203.0.113.7: %s (remaining %lld, retry in %lld ms)\n", i,
                   res.allowed ? "allowed" : "denied", (long long)res.remaining,
                   (long long)res.retry_after_ms);
    }
    if (rc != RLS_OK)
        fprintf(stderr, "quickstart: %s: %s\n", rls_strerror(rc), rls_errmsg(db));
    rls_close(db);
    return rc == RLS_OK ? 0 : 1;
}
