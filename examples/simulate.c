/*
 * simulate.c - realistic traffic against a database built from
 * examples/demo.yaml, for `make demo` and for watching rltop.
 *
 *   simulate --db PATH [--rate N] [--duration SECONDS] [--seed N]
 *            [--warmup SECONDS] [--verbose]
 *
 * Uses only the public API (rlstore.h).  The traffic:
 *   - many well-behaved clients: API users (free and pro, a few heavy
 *     ones), members logging in, senders of mail, sign-ups from IPv4 and
 *     IPv6 addresses (sign-ups are reserved, then committed when the
 *     "account" is created or cancelled when that fails);
 *   - a few abusers: two addresses flooding sign-ups (penalty blocks of an
 *     hour), credential stuffing against two accounts (escalating
 *     blocks), an API scraper far over its rate and one just at it, a
 *     spammer running out of its daily mail, requests from the banned
 *     network and from staff;
 *   - now and then a burst: a botnet of addresses signing up at once.
 * --warmup replays the last SECONDS of such traffic at once (with past
 * timestamps, the well-behaved part at a quarter of --rate), so a fresh
 * demo already has history.  Runs until
 * --duration ends or SIGTERM/SIGINT arrives, then prints a summary line
 * on stderr.  Exit status: 0, 2 for a usage error, 1 if the database
 * cannot be used.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rlstore.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* ---- a small deterministic generator (xorshift64*) ---------------------- */

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static int below(int n)
{
    return n > 0 ? (int)(rnd() % (uint64_t)n) : 0;
}

/* Skewed towards small indices: a few clients make most requests. */
static int skewed(int n)
{
    return below(below(n) + 1);
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- traffic -------------------------------------------------------------- */

typedef struct sim {
    rls_db *db;
    long checks, denied, errors;
    int last_rc;
} sim;

static void count(sim *s, int rc, const rls_result *r)
{
    s->checks++;
    if (rc != RLS_OK) {
        s->errors++;
        s->last_rc = rc;
    } else if (!r->allowed) {
        s->denied++;
    }
}

static void check(sim *s, const char *action, const char *key, int64_t cost, int64_t t)
{
    rls_result r;
    count(s, rls_check_at(s->db, action, key, cost, t, &r), &r);
}

/* A sign-up: reserve, then the account is created (commit) or not. */
static void signup(sim *s, const char *ip, int64_t t)
{
    rls_result r;
    int64_t id = 0;
    int rc = rls_reserve_at(s->db, "signup", ip, 1, RLS_RESERVE_TTL_DEFAULT, t, &id, &r);
    count(s, rc, &r);
    if (rc == RLS_OK && r.allowed && id > 0) {
        if (below(10) == 0)
            rls_cancel_at(s->db, id, t);
        else
            rls_commit_at(s->db, id, t);
    }
}

static void normal_request(sim *s, int64_t t)
{
    char key[96];
    int kind = below(100);
    if (kind < 52) {                                   /* the API */
        int pro = below(10) == 0;
        if (pro)
            snprintf(key, sizeof key, "user:pro:%d", skewed(120) + 1);
        else if (below(200) == 0)
            snprintf(key, sizeof key, "user:4711");    /* the trial upgrade */
        else
            snprintf(key, sizeof key, "user:%d", skewed(2500) + 1);
        check(s, "api", key, below(20) == 0 ? 5 : 1, t);
    } else if (kind < 64) {                            /* logins */
        snprintf(key, sizeof key, "member%04d", below(3000) + 1);
        check(s, "login", key, 1, t);
    } else if (kind < 84) {                            /* outgoing mail */
        if (below(30) == 0)
            snprintf(key, sizeof key, "news@example.com");
        else
            snprintf(key, sizeof key, "%s%d%s@example.%s", below(3) ? "Sender" : "sender",
                     below(800) + 1, below(4) ? "" : "+promo", below(2) ? "com" : "org");
        check(s, "mail.send", key, 1, t);
    } else {                                           /* sign-ups */
        int v6 = below(4) == 0;
        if (v6)
            snprintf(key, sizeof key, "2a02:8071:%x:%x::%x", below(64), below(4000),
                     below(65535) + 1);
        else
            snprintf(key, sizeof key, "100.%d.%d.%d", 64 + below(60), below(256),
                     below(254) + 1);
        signup(s, key, t);
    }
}

/* Streams of requests at a steady rate, in requests per minute. */
typedef struct stream {
    const char *action, *key;
    int per_minute;
    double due;
} stream;

static stream abusers[] = {
    {"signup", "203.0.113.66", 90, 0},        /* sign-up flood: penalty blocks */
    {"signup", "203.0.113.67", 40, 0},
    {"login", "admin", 150, 0},               /* credential stuffing: escalating */
    {"login", "root", 60, 0},
    {"api", "user:666", 1500, 0},             /* a scraper, 2.5x its rate */
    {"api", "user:667", 560, 0},              /* one just under it */
    {"mail.send", "promo@spam.example", 70, 0},  /* runs out of its daily mail */
    {"signup", "198.51.100.23", 20, 0},       /* the banned network */
    {"signup", "10.20.30.40", 30, 0},         /* staff: unlimited */
    {"login", "svc:backup", 120, 0},          /* a service account: staff */
};
#define NABUSERS ((int)(sizeof abusers / sizeof abusers[0]))

static void run_streams(sim *s, double dt_s, int64_t t)
{
    for (int i = 0; i < NABUSERS; i++) {
        stream *st = &abusers[i];
        st->due += st->per_minute * dt_s / 60.0;
        while (st->due >= 1.0) {
            st->due -= 1.0;
            if (strcmp(st->action, "signup") == 0)
                signup(s, st->key, t);
            else
                check(s, st->action, st->key, 1, t);
        }
    }
}

/* A botnet signing up from many addresses for a few seconds. */
static void burst(sim *s, int64_t t, int wave)
{
    char ip[32];
    for (int i = 0; i < 6; i++) {
        snprintf(ip, sizeof ip, "203.0.113.%d", 100 + (wave * 13 + below(60)) % 150);
        signup(s, ip, t);
    }
}

/* ---- options -------------------------------------------------------------- */

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "simulate: %s%s%s%s\n", msg, arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
    fprintf(stderr, "usage: simulate --db PATH [--rate N] [--duration SECONDS] [--seed N] "
            "[--warmup SECONDS] [--verbose]\n");
    return 2;
}

static int num(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    long rate = 150, duration = 0, warmup = 0, seed = (long)(wall_ms() % 1000000), verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--db") == 0 && v) {
            path = v;
            i++;
        } else if (strcmp(a, "--rate") == 0) {
            if (num(v, 1, 100000, &rate))
                return usage("invalid --rate (checks per second, 1..100000):", v);
            i++;
        } else if (strcmp(a, "--duration") == 0) {
            if (num(v, 0, 86400 * 365, &duration))
                return usage("invalid --duration (seconds, 0 = until stopped):", v);
            i++;
        } else if (strcmp(a, "--seed") == 0) {
            if (num(v, 0, 2147483647, &seed))
                return usage("invalid --seed:", v);
            i++;
        } else if (strcmp(a, "--warmup") == 0) {
            if (num(v, 0, 3600, &warmup))
                return usage("invalid --warmup (seconds of history, 0..3600):", v);
            i++;
        } else if (strcmp(a, "--verbose") == 0) {
            verbose = 1;
        } else if (strcmp(a, "--help") == 0) {
            usage("traffic for examples/demo.yaml", NULL);
            return 0;
        } else {
            return usage("unknown or incomplete option", a);
        }
    }
    if (!path)
        return usage("--db PATH is required", NULL);
    rng_state ^= (uint64_t)seed * 0x9E3779B97F4A7C15ULL + 1;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    sim s;
    rls_options opt;
    memset(&s, 0, sizeof s);
    rls_options_init(&opt);
    opt.create = 0;
    opt.tool = "simulate";
    if (rls_open(&s.db, path, &opt) != RLS_OK) {
        fprintf(stderr, "simulate: cannot open '%s': %s\n", path, rls_errmsg(NULL));
        return 1;
    }

    const int tick_ms = 20;
    int64_t start = wall_ms(), t = start - warmup * 1000, end = duration ? start + duration * 1000 : 0;
    int64_t next_burst = t + 20000 + below(40000), burst_end = 0, last_report = start;
    double due = 0;
    int wave = 0;
    while (!stop && (!end || t < end)) {
        int64_t now = wall_ms();
        if (t >= now) {   /* caught up with the clock: pace in real time */
            struct timespec ts = {0, tick_ms * 1000000L};
            nanosleep(&ts, NULL);
            t = wall_ms();
        } else {
            t += tick_ms;   /* replaying history */
            if (t > now)
                t = now;
        }
        double dt = tick_ms / 1000.0;
        /* the normal load breathes: +-30 % over a few minutes */
        long phase = (t / 1000) % 240;
        double level = 0.7 + 0.6 * (double)(phase < 120 ? phase : 240 - phase) / 120.0;
        /* history is replayed at a quarter of the normal load, so that it
         * takes seconds, not minutes; the abusers and bursts at full rate */
        due += (double)rate * level * dt * (t < now - 1000 ? 0.25 : 1.0);
        while (due >= 1.0 && !stop) {
            due -= 1.0;
            normal_request(&s, t);
        }
        run_streams(&s, dt, t);
        if (t >= next_burst) {
            burst_end = t + 3000 + below(4000);
            next_burst = t + 45000 + below(45000);
            wave++;
        }
        if (t < burst_end && below(3) == 0)
            burst(&s, t, wave);
        if (s.errors > 1000 && s.errors * 2 > s.checks) {
            fprintf(stderr, "simulate: giving up: %s: %s\n", rls_strerror(s.last_rc),
                    rls_errmsg(s.db));
            rls_close(s.db);
            return 1;
        }
        if (verbose && now - last_report >= 10000) {
            fprintf(stderr, "simulate: %ld checks, %ld denied, %ld errors\n", s.checks,
                    s.denied, s.errors);
            last_report = now;
        }
    }
    fprintf(stderr, "simulate: %ld checks, %ld denied, %ld errors in %llds\n", s.checks,
            s.denied, s.errors, (long long)((wall_ms() - start) / 1000));
    rls_close(s.db);
    return 0;
}
