/*
 * fuzz_duration.c - libFuzzer target for core/duration.c.
 *
 * The input is duration text ("250ms", "1h30m", "1mo", garbage).  Checked:
 *   - rls__duration_parse agrees with an independent reference parser of the
 *     grammar in duration.h (terms <digits><unit>, units ms s m h d w mo,
 *     sum in 1..DUR_MS_MAX, calendar only for a single term "1d"/"1w"/"1mo")
 *     on acceptance, value and calendar kind; a refusal has a reason;
 *   - round trip: rls__duration_parse(rls__duration_format(d)) == d, for parsed
 *     durations and for arbitrary FIXED ones made from the input's bytes;
 *   - rls__duration_format has snprintf semantics for every buffer size (exact
 *     heap buffers, so ASan sees a one-byte overrun), never crashes on any
 *     (ms, calendar) pair, and prints only [0-9a-z-];
 *   - rls_duration_parse (public, NUL-terminated) agrees with rls__duration_parse.
 */
#include "fuzz_util.h"

#include "duration.h"
#include "rlstore.h"

#define MS_DAY (86400000LL)

/* Reference: 1 accepted (with *ms, *cal), 0 refused. */
static int ref_parse(const uint8_t *s, size_t n, int64_t *ms, int *cal)
{
    __int128 total = 0;
    size_t i = 0;
    int terms = 0, last_cal = DUR_FIXED;
    __int128 last_n = 0;

    if (n == 0)
        return 0;
    while (i < n) {
        __int128 v = 0;
        size_t start = i;
        int64_t unit;
        int c = DUR_FIXED;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            v = v * 10 + (s[i] - '0');
            if (v > (__int128)1 << 80)
                v = (__int128)1 << 80;   /* saturate: surely too large */
            i++;
        }
        if (i == start || i == n)
            return 0;
        if (n - i >= 2 && s[i] == 'm' && s[i + 1] == 's') {
            unit = 1;
            i += 2;
        } else if (n - i >= 2 && s[i] == 'm' && s[i + 1] == 'o') {
            unit = 30 * MS_DAY;
            c = DUR_MONTH;
            i += 2;
        } else if (s[i] == 's') {
            unit = 1000;
            i++;
        } else if (s[i] == 'm') {
            unit = 60000;
            i++;
        } else if (s[i] == 'h') {
            unit = 3600000;
            i++;
        } else if (s[i] == 'd') {
            unit = MS_DAY;
            c = DUR_DAY;
            i++;
        } else if (s[i] == 'w') {
            unit = 7 * MS_DAY;
            c = DUR_WEEK;
            i++;
        } else {
            return 0;
        }
        total += v * unit;
        if (total > DUR_MS_MAX)
            return 0;
        terms++;
        last_cal = c;
        last_n = v;
    }
    if (total < 1)
        return 0;
    *ms = (int64_t)total;
    *cal = (terms == 1 && last_n == 1) ? last_cal : DUR_FIXED;
    return 1;
}

/* Formats d at every buffer size up to the full length + 1 and checks
 * snprintf semantics; returns the full text (static storage). */
static const char *check_format(const rls_duration *d)
{
    static char full[128];
    int n = rls__duration_format(d, NULL, 0);
    FUZZ_CHECK(n > 0 && n < (int)sizeof full, "format length %d for ms=%lld cal=%d",
               n, (long long)d->ms, d->calendar);
    FUZZ_CHECK(rls__duration_format(d, full, sizeof full) == n, "length changed");
    FUZZ_CHECK(strlen(full) == (size_t)n, "strlen %zu != %d", strlen(full), n);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK((full[i] >= '0' && full[i] <= '9') ||
                   (full[i] >= 'a' && full[i] <= 'z') || (i == 0 && full[i] == '-'),
                   "unexpected byte 0x%02x in '%s'", (unsigned char)full[i], full);
    for (size_t size = 1; size <= (size_t)n + 1; size++) {
        char *b = fuzz_buf(size);
        int k = rls__duration_format(d, b, size);
        size_t want = size - 1 < (size_t)n ? size - 1 : (size_t)n;
        FUZZ_CHECK(k == n, "size %zu: returned %d, want %d", size, k, n);
        FUZZ_CHECK(memchr(b, '\0', size) == b + want,
                   "size %zu: NUL not at %zu", size, want);
        FUZZ_CHECK(memcmp(b, full, want) == 0, "size %zu: not a prefix", size);
        free(b);
    }
    FUZZ_CHECK(rls__duration_format(d, NULL, 1) == -1, "NULL buffer with size 1");
    return full;
}

static void round_trip(const rls_duration *d)
{
    const char *text = check_format(d);
    rls_duration back;
    const char *why = NULL;
    FUZZ_CHECK(rls__duration_parse(text, strlen(text), &back, &why) == 0,
               "'%s' (ms=%lld cal=%d) does not parse back: %s", text,
               (long long)d->ms, d->calendar, why ? why : "?");
    FUZZ_CHECK(back.ms == d->ms && back.calendar == d->calendar,
               "'%s': %lld/%d parsed back as %lld/%d", text, (long long)d->ms,
               d->calendar, (long long)back.ms, back.calendar);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rls_duration d = { -7, -7 };
    const char *why = NULL;
    int64_t ref_ms = 0;
    int ref_cal = -1;
    int rc = rls__duration_parse((const char *)data, size, &d, &why);
    int ref = ref_parse(data, size, &ref_ms, &ref_cal);

    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    FUZZ_CHECK((rc == 0) == (ref == 1), "library %s, reference %s the input",
               rc == 0 ? "accepts" : "refuses", ref ? "accepts" : "refuses");
    if (rc == 0) {
        FUZZ_CHECK(d.ms == ref_ms && d.calendar == ref_cal,
                   "got %lld/%d, reference %lld/%d", (long long)d.ms, d.calendar,
                   (long long)ref_ms, ref_cal);
        FUZZ_CHECK(d.ms >= 1 && d.ms <= DUR_MS_MAX, "ms %lld", (long long)d.ms);
        round_trip(&d);
    } else {
        FUZZ_CHECK(why && *why, "refusal without a reason");
        FUZZ_CHECK(d.ms == -7 && d.calendar == -7, "*out written on error");
    }

    /* The public wrapper reads up to the first NUL. */
    {
        char *s = fuzz_strndup(data, size);
        rls_duration d2;
        int64_t ms = -1;
        int rc2 = rls__duration_parse(s, strlen(s), &d2, NULL);
        int prc = rls_duration_parse(s, &ms);
        FUZZ_CHECK(prc == (rc2 == 0 ? RLS_OK : RLS_EINVAL), "public rc %d", prc);
        FUZZ_CHECK(prc != RLS_OK || ms == d2.ms, "public ms %lld != %lld",
                   (long long)ms, (long long)d2.ms);
        FUZZ_CHECK(rls__duration_parse(s, (size_t)-1, &d2, NULL) == rc2,
                   "len -1 (NUL-terminated) disagrees");
        free(s);
    }

    /* Arbitrary durations from the raw bytes: format must never misbehave,
     * and a FIXED one in range must round-trip. */
    if (size >= 12) {
        const uint8_t *p = data;
        size_t left = size;
        rls_duration a;
        a.ms = (int64_t)fuzz_take(&p, &left, 8);
        a.calendar = (int)(int32_t)fuzz_take(&p, &left, 4);
        check_format(&a);
        a.calendar = DUR_FIXED;
        if (a.ms < 0)
            a.ms = a.ms == INT64_MIN ? 1 : -a.ms;
        a.ms = a.ms % DUR_MS_MAX + 1;
        round_trip(&a);
    }
    return 0;
}
