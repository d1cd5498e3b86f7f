/*
 * signup.c - limit accounts created per client address per day and per
 * week, counting only sign-ups that really created an account.
 *
 * A sign-up is checked before the account is created, and creating it can
 * still fail (name taken, e-mail rejected, database down).  Charging with
 * rls_check() at that point would count the failures too: a user who
 * mistypes twice could be locked out for the day.  A reservation counts
 * only what succeeds:
 *
 *   rls_reserve()  decides and charges at once, so concurrent sign-ups from
 *                  one address can never overshoot the limit;
 *   rls_commit()   makes the charge final once the account exists;
 *   rls_cancel()   gives it back when creating the account failed;
 *   and a process that dies in between leaves a reservation that the
 *   library refunds by itself once its TTL has passed.
 *
 * The example runs on a simulated clock (the _at functions take the time),
 * a Monday and a Tuesday of one week, so its output is the same every run.
 * It starts by resetting the counters of its addresses, so it can run again
 * on the same database.
 *
 *   build/examples/signup signup.db
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <rlstore.h>

static const char rules[] =
    "version: 1\n"
    "actions:\n"
    "  signup:\n"
    "    key: ip\n"
    "    ipv6_prefix: 64         # an IPv6 client is its /64 network\n"
    "    limits:\n"
    "      - { name: daily,  algorithm: fixed_window, limit: 3, window: 1d }\n"
    "      - { name: weekly, algorithm: fixed_window, limit: 5, window: 1w }\n";

#define MIN 60000LL
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)
static const int64_t MONDAY = 1795392000000LL; /* 2026-11-23T00:00:00Z, a Monday */
#define TTL (2 * MIN)                          /* time allowed to create an account */

static rls_db *db;

/* Stands in for the application's real account creation. */
static int create_account(const char *user, const char **why)
{
    if (strcmp(user, "bob") == 0) {
        *why = "user name taken";
        return 0;
    }
    if (strcmp(user, "dave") == 0) {
        *why = "e-mail address rejected";
        return 0;
    }
    *why = NULL;
    return 1;
}

static void print_when(int64_t t)
{
    static const char *const days[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
    char iso[40];
    rls_time_format(t, iso, sizeof iso);
    printf("%s %.16s  ", days[((t - MONDAY) / DAY) % 7], iso);
}

/* "3h07m" for a wait. */
static void print_wait(int64_t ms)
{
    int64_t m = (ms + MIN - 1) / MIN;
    if (m >= 24 * 60)
        printf("%" PRId64 "d%02" PRId64 "h%02" PRId64 "m", m / (24 * 60), m / 60 % 24, m % 60);
    else
        printf("%" PRId64 "h%02" PRId64 "m", m / 60, m % 60);
}

/*
 * One sign-up of `user` from `ip` at time t.  Returns 1 if an account was
 * created, 0 if not, -1 on a library error.
 */
static int sign_up(int64_t t, const char *ip, const char *user)
{
    rls_result res;
    int64_t id;
    const char *why;
    int rc = rls_reserve_at(db, "signup", ip, 1, TTL, t, &id, &res);

    print_when(t);
    printf("%-18s %-7s ", ip, user);
    if (rc != RLS_OK) {
        /* res is filled per the failure policy even now; a real
         * application would still look at res.allowed.  Here it is a bug. */
        printf("error %s: %s\n", rls_errname(rc), rls_errmsg(db));
        return -1;
    }
    if (!res.allowed) {
        printf("denied by '%s': try again in ", res.rule);
        print_wait(res.retry_after_ms);
        printf("\n");
        return 0;
    }
    if (create_account(user, &why)) {
        rc = rls_commit_at(db, id, t + 2000);
        printf("created, committed (%s: %" PRId64 " left)\n", res.rule, res.remaining);
        return rc == RLS_OK ? 1 : -1;
    }
    rc = rls_cancel_at(db, id, t + 2000);
    printf("failed (%s), cancelled: not counted\n", why);
    return rc == RLS_OK ? 0 : -1;
}

/* Units left in each limit of the action for ip at t, without charging. */
static void show_left(int64_t t, const char *ip)
{
    rls_rows *limits = NULL;
    if (rls_explain_at(db, "signup", ip, t, NULL, &limits) != RLS_OK) {
        printf("explain: %s\n", rls_errmsg(db));
        return;
    }
    int name = rls_rows_find(limits, "name"), rem = rls_rows_find(limits, "remaining");
    print_when(t);
    printf("%-18s %-7s", ip, "left:");
    for (int r = 0; r < rls_rows_count(limits); r++)
        printf(" %s %" PRId64, rls_rows_text(limits, r, name), rls_rows_int(limits, r, rem));
    printf("\n");
    rls_rows_free(limits);
}

int main(int argc, char **argv)
{
    static const char *const ips[] = {"203.0.113.7", "198.51.100.23", "2001:db8:5:6::1"};
    static const char *const monday[] = {"alice", "bob", "carol", "dave", "erin", "frank"};
    static const char *const tuesday[] = {"grace", "heidi", "ivan"};
    int64_t t, id;
    rls_result res;
    int created = 0, n, rc;

    if (argc != 2) {
        fprintf(stderr, "usage: signup DATABASE\n");
        return 2;
    }
    if (rls_open(&db, argv[1], NULL) != RLS_OK) {
        fprintf(stderr, "signup: cannot open '%s': %s\n", argv[1], rls_errmsg(NULL));
        return 1;
    }
    rc = rls_rules_apply_at(db, rules, strlen(rules), "signup.c", "example rules",
                            MONDAY, NULL);
    if (rc != RLS_OK)
        goto out;
    for (size_t i = 0; i < sizeof ips / sizeof ips[0]; i++)
        rls_reset_at(db, "signup", ips[i], MONDAY); /* ENOTFOUND on a new database */

    printf("Limits per address: 3 accounts a day, 5 a week (weeks start on Monday).\n\n");
    printf("Monday: two of the first five sign-ups fail and are not counted.\n");
    t = MONDAY + 9 * HOUR;
    for (size_t i = 0; i < sizeof monday / sizeof monday[0]; i++, t += 10 * MIN) {
        if ((n = sign_up(t, ips[0], monday[i])) < 0)
            goto failed;
        created += n;
    }
    show_left(t, ips[0]);
    printf("  -> %d accounts created from %s today; the failures cost nothing.\n\n", created,
           ips[0]);

    printf("Tuesday: a new day, but the week allows only two more.\n");
    t = MONDAY + DAY + 9 * HOUR;
    for (size_t i = 0; i < sizeof tuesday / sizeof tuesday[0]; i++, t += 10 * MIN)
        if (sign_up(t, ips[0], tuesday[i]) < 0)
            goto failed;
    printf("Another address is counted separately:\n");
    if (sign_up(t, ips[1], "judy") < 0)
        goto failed;
    printf("An IPv6 client counts per /64: two addresses of one network share a quota.\n");
    if (sign_up(t, ips[2], "mallory") < 0 || sign_up(t + MIN, "2001:db8:5:6::abcd", "oscar") < 0)
        goto failed;
    show_left(t + MIN, ips[2]);
    printf("\n");

    /* A process that reserves and then dies (or hangs) never commits or
     * cancels.  Its reservation is refunded once the TTL has passed: at the
     * key's next check at the latest, or by the library's background GC. */
    printf("A crash between reserve and commit: the reservation expires.\n");
    t = MONDAY + DAY + 12 * HOUR;
    rc = rls_reserve_at(db, "signup", ips[1], 1, TTL, t, &id, &res);
    if (rc != RLS_OK)
        goto out;
    print_when(t);
    printf("%-18s %-7s reserved (%s: %" PRId64 " left), then its process dies\n", ips[1],
           "peggy", res.rule, res.remaining);
    if (sign_up(t + TTL + MIN, ips[1], "rupert") < 0)
        goto failed;
    rc = rls_commit_at(db, id, t + TTL + 2 * MIN);
    print_when(t + TTL + 2 * MIN);
    printf("%-18s %-7s a late commit returns %s: it was refunded\n", ips[1], "peggy",
           rls_errname(rc));
    if (rc == RLS_EEXPIRED || rc == RLS_ENOTFOUND)
        rc = RLS_OK;
    show_left(t + TTL + 2 * MIN, ips[1]);

out:
    if (rc != RLS_OK)
        fprintf(stderr, "signup: %s: %s\n", rls_strerror(rc), rls_errmsg(db));
    rls_close(db);
    return rc == RLS_OK ? 0 : 1;
failed:
    rls_close(db);
    return 1;
}
