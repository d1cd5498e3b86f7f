/*
 * fuzz_keynorm.c - libFuzzer target for core/keynorm.c.
 *
 * The input is one key (IP text, e-mail address, any bytes).  It is
 * normalised as every kind, IP with the default prefixes (32, 128), with
 * (24, 64) and with prefixes derived from the input; it is also parsed as an
 * assignment pattern and escaped for display.  Checked:
 *   - rls__key_normalize returns -1 (with a reason), -2 or the length of a
 *     NUL-terminated output, and honours outsize exactly (exact heap
 *     buffers: size n gives -2, n + 1 the result);
 *   - string: the key unchanged;  email: equal to a reference (ASCII lower
 *     case, "+tag" of the local part removed; refused without exactly one
 *     '@', with an empty side, or with bytes <= 0x20 / 0x7f), idempotent;
 *   - ip: accepted exactly when glibc's inet_pton accepts the text (the
 *     documented refusals, '%' zones and '/' networks, are ones inet_pton
 *     refuses too); the output address is the input address masked to the
 *     prefix, in RFC 5952 form (= inet_ntop, except for glibc's "::a.b.c.d"
 *     spelling), "/N" only when N is shorter than the address; normalising
 *     the output's address part again gives the same output (idempotence;
 *     an output with "/N" is a network, which keys refuse by design); the
 *     CIDR pattern made from the output matches the output;
 *   - rls__key_pattern_parse: kinds and fields consistent, ranks ordered exact >
 *     CIDR > prefix, CIDR without host bits; matching: an exact pattern
 *     matches exactly its text, a prefix pattern exactly the keys starting
 *     with it, a CIDR pattern its own network address (normalised);
 *   - rls__key_escape / rls_key_escape: output is valid UTF-8 without C0/C1
 *     control bytes, DEL or format characters (unicode.h), decodes back to the key, and a too-small buffer
 *     holds the longest run of whole units that fits (never half an escape
 *     or half a character), always NUL-terminated.
 */
#include "fuzz_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "keynorm.h"
#include "rlstore.h"
#include "unicode.h"

#define OUT_MAX 8192

/* ---- normalisation -------------------------------------------------- */

/* rls__key_normalize with exact-size buffers around the result length. */
static int norm_checked(int kind, int p4, int p6, const char *key, size_t len,
                        char *out, size_t outsize)
{
    const char *why = NULL;
    int n = rls__key_normalize(kind, p4, p6, key, len, out, outsize, &why);
    FUZZ_CHECK(n >= -2, "kind %d: rc %d", kind, n);
    if (n == -1) {
        FUZZ_CHECK(why && *why, "kind %d: refusal without reason", kind);
        return -1;
    }
    FUZZ_CHECK(n >= 0, "kind %d: out of %zu bytes too small", kind, outsize);
    FUZZ_CHECK(out[n] == '\0' && strlen(out) == (size_t)n,
               "kind %d: output not NUL-terminated at its length %d", kind, n);
    /* size n: too small; size n + 1: fits exactly. */
    {
        char *b = fuzz_buf((size_t)n);
        FUZZ_CHECK(rls__key_normalize(kind, p4, p6, key, len, b, (size_t)n, NULL) == -2,
                   "kind %d: outsize %d (= length) not refused", kind, n);
        free(b);
        b = fuzz_buf((size_t)n + 1);
        FUZZ_CHECK(rls__key_normalize(kind, p4, p6, key, len, b, (size_t)n + 1, NULL) == n &&
                       memcmp(b, out, (size_t)n + 1) == 0,
                   "kind %d: outsize %d + 1 gives another result", kind, n);
        free(b);
    }
    return n;
}

static void check_string(const char *key, size_t len)
{
    static char out[OUT_MAX];
    int n = norm_checked(KEY_STRING, 32, 128, key, len, out, sizeof out);
    int bad = len == 0 || memchr(key, '\0', len) != NULL;
    if (bad) {
        FUZZ_CHECK(n == -1, "string: empty or NUL key accepted");
        return;
    }
    if (len >= sizeof out)
        return;
    FUZZ_CHECK(n == (int)len && memcmp(out, key, len) == 0, "string key changed");
}

static void check_email(const char *key, size_t len)
{
    static char out[OUT_MAX], again[OUT_MAX], want[OUT_MAX];
    int n, nat = 0, bad = len == 0 || len >= OUT_MAX;
    size_t at = 0, w = 0, local_end;

    for (size_t i = 0; i < len && !bad; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c <= 0x20 || c == 0x7f)
            bad = 1;
        if (c == '@') {
            nat++;
            at = i;
        }
    }
    if (!bad && (nat != 1 || at == 0 || at + 1 == len))
        bad = 1;
    local_end = at;
    if (!bad) {
        const char *plus = memchr(key, '+', at);
        if (plus)
            local_end = (size_t)(plus - key);
        if (local_end == 0)
            bad = 1;
    }
    if (len >= OUT_MAX)
        return;
    n = norm_checked(KEY_EMAIL, 32, 128, key, len, out, sizeof out);
    FUZZ_CHECK((n >= 0) == !bad, "email: library %s, reference %s",
               n >= 0 ? "accepts" : "refuses", bad ? "refuses" : "accepts");
    if (bad)
        return;
    for (size_t i = 0; i < len; i++) {
        char c = key[i];
        if (i >= local_end && i < at)
            continue;
        want[w++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    want[w] = '\0';
    FUZZ_CHECK((size_t)n == w && memcmp(out, want, w) == 0,
               "email: got '%s', want '%s'", out, want);
    FUZZ_CHECK(norm_checked(KEY_EMAIL, 32, 128, out, (size_t)n, again,
                            sizeof again) == n && strcmp(again, out) == 0,
               "email: not idempotent: '%s' -> '%s'", out, again);
}

static void mask(unsigned char a[16], int bits)
{
    for (int i = 0; i < 16; i++) {
        int keep = bits - 8 * i;
        if (keep >= 8)
            continue;
        a[i] &= keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
    }
}

static void check_ip(const char *key, size_t len, int p4, int p6)
{
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    char out[256], again[256], text[64], ntop[INET6_ADDRSTRLEN];
    unsigned char a[16], b[16];
    int n, ok4 = 0, ok6 = 0, is_v4, bits;
    const char *slash;
    size_t alen;

    n = norm_checked(KEY_IP, p4, p6, key, len, out, sizeof out);
    if (len > 0 && len < sizeof text && !memchr(key, '\0', len)) {
        memcpy(text, key, len);
        text[len] = '\0';
        ok4 = inet_pton(AF_INET, text, a + 12) == 1;
        if (ok4)
            memcpy(a, mapped, 12);
        else
            ok6 = inet_pton(AF_INET6, text, a) == 1;
    }
    FUZZ_CHECK((n >= 0) == (ok4 || ok6), "ip /%d /%d: library %s, inet_pton %s",
               p4, p6, n >= 0 ? "accepts" : "refuses",
               ok4 || ok6 ? "accepts" : "refuses");
    if (n < 0)
        return;
    is_v4 = memcmp(a, mapped, 12) == 0;
    bits = is_v4 ? p4 : p6;
    mask(a, is_v4 ? 96 + bits : bits);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK((out[i] >= '0' && out[i] <= '9') || (out[i] >= 'a' && out[i] <= 'f') ||
                       out[i] == '.' || out[i] == ':' || out[i] == '/',
                   "ip: byte 0x%02x in '%s'", (unsigned char)out[i], out);
    slash = strchr(out, '/');
    alen = slash ? (size_t)(slash - out) : (size_t)n;
    if (bits < (is_v4 ? 32 : 128)) {
        FUZZ_CHECK(slash && atoi(slash + 1) == bits && strlen(slash + 1) ==
                       (size_t)snprintf(text, sizeof text, "%d", bits),
                   "ip: '%s' lacks /%d", out, bits);
    } else {
        FUZZ_CHECK(!slash, "ip: '%s' has a prefix at full length", out);
    }
    /* the address part is the masked input address */
    memcpy(text, out, alen);
    text[alen] = '\0';
    if (is_v4) {
        FUZZ_CHECK(inet_pton(AF_INET, text, b) == 1 && memcmp(b, a + 12, 4) == 0,
                   "ip: '%s' is not the input masked to /%d", out, bits);
    } else {
        FUZZ_CHECK(inet_pton(AF_INET6, text, b) == 1 && memcmp(b, a, 16) == 0,
                   "ip: '%s' is not the input masked to /%d", out, bits);
        FUZZ_CHECK(!strchr(text, '.'), "ip: IPv6 output '%s' has a dotted tail", out);
        /* RFC 5952: glibc's inet_ntop agrees except for its "::a.b.c.d"
         * form of addresses whose first 96 bits are zero. */
        static const unsigned char zero12[12];
        if (memcmp(a, zero12, 12) != 0 || (a[12] == 0 && a[13] == 0)) {
            FUZZ_CHECK(inet_ntop(AF_INET6, a, ntop, sizeof ntop) != NULL, "ntop");
            if (!strchr(ntop, '.'))
                FUZZ_CHECK(strcmp(ntop, text) == 0, "ip: '%s', RFC 5952 says '%s'",
                           text, ntop);
        }
    }
    /* idempotence of the address part */
    FUZZ_CHECK(norm_checked(KEY_IP, p4, p6, text, alen, again, sizeof again) == n &&
                   strcmp(again, out) == 0,
               "ip: '%s' renormalises to '%s'", text, again);
    /* an output with /N is refused as a key (a network) */
    if (slash)
        FUZZ_CHECK(rls__key_normalize(KEY_IP, p4, p6, out, (size_t)n, again, sizeof again,
                                 NULL) == -1, "ip: network '%s' accepted as a key", out);
    /* the CIDR pattern of the output (or of the address at full length)
     * matches the output */
    {
        char pat[300];
        key_pattern p;
        const char *why = NULL;
        if (slash)
            snprintf(pat, sizeof pat, "%s", out);
        else
            snprintf(pat, sizeof pat, "%s/%d", out, is_v4 ? 32 : 128);
        FUZZ_CHECK(rls__key_pattern_parse(pat, &p, &why) == 0 && p.kind == PAT_CIDR,
                   "ip: pattern '%s' refused: %s", pat, why ? why : "?");
        FUZZ_CHECK(rls__key_pattern_match(&p, pat, out, (size_t)n) == 1,
                   "ip: pattern '%s' does not match key '%s'", pat, out);
        if (is_v4) {
            FUZZ_CHECK(rls__key_pattern_parse("0.0.0.0/0", &p, NULL) == 0 &&
                           rls__key_pattern_match(&p, "0.0.0.0/0", out, (size_t)n) == 1,
                       "0.0.0.0/0 does not match '%s'", out);
            FUZZ_CHECK(rls__key_pattern_parse("::/0", &p, NULL) == 0 &&
                           rls__key_pattern_match(&p, "::/0", out, (size_t)n) == 0,
                       "::/0 matches IPv4 key '%s'", out);
        } else {
            FUZZ_CHECK(rls__key_pattern_parse("::/0", &p, NULL) == 0 &&
                           rls__key_pattern_match(&p, "::/0", out, (size_t)n) == 1,
                       "::/0 does not match '%s'", out);
        }
    }
}

/* ---- patterns -------------------------------------------------------- */

static void check_pattern(const char *text, const char *key, size_t keylen)
{
    key_pattern p;
    const char *why = NULL;
    size_t len = strlen(text);
    int rc = rls__key_pattern_parse(text, &p, &why);

    FUZZ_CHECK(rc == 0 || rc == -1, "pattern rc %d", rc);
    if (rc != 0) {
        FUZZ_CHECK(why && *why, "pattern refused without reason");
        FUZZ_CHECK(len == 0 || text[len - 1] != '*', "prefix pattern refused");
        return;
    }
    FUZZ_CHECK(len > 0, "empty pattern accepted");
    switch (p.kind) {
    case PAT_PREFIX:
        FUZZ_CHECK(text[len - 1] == '*' && p.len == len - 1, "prefix len %zu", p.len);
        FUZZ_CHECK(rls__key_pattern_rank(&p) >= 1 && rls__key_pattern_rank(&p) < 2000000,
                   "prefix rank %d", rls__key_pattern_rank(&p));
        FUZZ_CHECK(rls__key_pattern_match(&p, text, key, keylen) ==
                       (keylen >= p.len && memcmp(text, key, p.len) == 0),
                   "prefix match wrong");
        FUZZ_CHECK(rls__key_pattern_match(&p, text, text, p.len) == 1,
                   "prefix does not match itself");
        break;
    case PAT_EXACT:
        FUZZ_CHECK(text[len - 1] != '*' && p.len == len, "exact len %zu", p.len);
        FUZZ_CHECK(rls__key_pattern_rank(&p) == 3000000, "exact rank %d", rls__key_pattern_rank(&p));
        FUZZ_CHECK(rls__key_pattern_match(&p, text, key, keylen) ==
                       (keylen == len && memcmp(text, key, len) == 0),
                   "exact match wrong");
        FUZZ_CHECK(rls__key_pattern_match(&p, text, text, len) == 1,
                   "exact does not match itself");
        break;
    case PAT_CIDR: {
        unsigned char m[16];
        char ntop[INET6_ADDRSTRLEN], norm[128];
        int n;
        FUZZ_CHECK(p.bits >= 0 && p.bits <= 128, "cidr bits %d", p.bits);
        FUZZ_CHECK(strchr(text, '/') != NULL, "cidr without '/'");
        memcpy(m, p.addr, 16);
        mask(m, p.bits);
        FUZZ_CHECK(memcmp(m, p.addr, 16) == 0, "cidr '%s' keeps host bits", text);
        FUZZ_CHECK(rls__key_pattern_rank(&p) == 2000000 + p.bits, "cidr rank");
        /* its own network address, normalised as a key, is inside */
        FUZZ_CHECK(inet_ntop(AF_INET6, p.addr, ntop, sizeof ntop) != NULL, "ntop");
        n = rls__key_normalize(KEY_IP, 32, 128, ntop, strlen(ntop), norm, sizeof norm, NULL);
        FUZZ_CHECK(n > 0, "network address '%s' of '%s' refused as a key", ntop, text);
        {
            int v4key = strchr(norm, ':') == NULL;
            FUZZ_CHECK(rls__key_pattern_match(&p, text, norm, (size_t)n) ==
                           (v4key && p.bits < 96 ? 0 : 1),
                       "cidr '%s' vs its network '%s'", text, norm);
        }
        (void)rls__key_pattern_match(&p, text, key, keylen);
        break;
    }
    default:
        FUZZ_CHECK(0, "pattern kind %d", p.kind);
    }
}

/* ---- escaping -------------------------------------------------------- */

/* Length of the unit of escaped text at s (n bytes left). */
static size_t unit_len(const unsigned char *s, size_t n)
{
    if (s[0] == '\\')
        return n >= 2 && s[1] == 'x' ? 4 : 2;
    if (s[0] < 0x80)
        return 1;
    return s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
}

static int hexv(unsigned char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void check_escape(const uint8_t *key, size_t keylen, uint32_t h)
{
    int n = rls__key_escape((const char *)key, keylen, NULL, 0);
    char *full;
    size_t i, o = 0;

    FUZZ_CHECK(n >= 0 && (size_t)n >= keylen && (size_t)n <= 4 * keylen,
               "escape length %d for %zu bytes", n, keylen);
    full = fuzz_buf((size_t)n + 1);
    FUZZ_CHECK(rls__key_escape((const char *)key, keylen, full, (size_t)n + 1) == n &&
                   strlen(full) == (size_t)n, "escape into exact buffer");
    FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)full, (size_t)n),
               "escaped key is not valid UTF-8");
    /* no C0, DEL or C1 controls; decodes back to the key */
    for (i = 0; i < (size_t)n;) {
        const unsigned char *s = (const unsigned char *)full + i;
        size_t u = unit_len(s, (size_t)n - i);
        FUZZ_CHECK(s[0] >= 0x20 && s[0] != 0x7f, "control byte 0x%02x in output", s[0]);
        FUZZ_CHECK(!(s[0] == 0xc2 && i + 1 < (size_t)n && s[1] < 0xa0),
                   "C1 control U+%04X in output", s[1]);
        FUZZ_CHECK(i + u <= (size_t)n, "cut unit at the end");
        FUZZ_CHECK(o < keylen, "output decodes to more than the key");
        if (s[0] == '\\' && u == 2) {
            FUZZ_CHECK(s[1] == '\\', "lone backslash");
            FUZZ_CHECK(key[o++] == '\\', "\\\\ decodes wrongly");
        } else if (s[0] == '\\') {
            int hi = hexv(s[2]), lo = hexv(s[3]);
            FUZZ_CHECK(hi >= 0 && lo >= 0, "bad escape");
            FUZZ_CHECK(key[o++] == (uint8_t)(hi * 16 + lo), "\\x escape decodes wrongly");
        } else {
            FUZZ_CHECK(o + u <= keylen && memcmp(key + o, s, u) == 0,
                       "copied bytes differ from the key");
            if (u > 1) {
                uint32_t cp = s[0] & (u == 2 ? 0x1f : u == 3 ? 0x0f : 0x07);
                for (size_t j = 1; j < u; j++)
                    cp = cp << 6 | (s[j] & 0x3f);
                FUZZ_CHECK(!rls__uni_is_invisible(cp), "format character U+%04X in output",
                           (unsigned)cp);
            }
            o += u;
        }
        i += u;
    }
    FUZZ_CHECK(o == keylen, "output decodes to %zu of %zu bytes", o, keylen);
    /* too-small buffers: the longest run of whole units that fits */
    {
        size_t sizes[6] = { 0, 1, 2, (size_t)n, h % ((size_t)n + 2),
                            (h >> 8) % 16 };
        for (int k = 0; k < 6; k++) {
            size_t size = sizes[k], want = 0, u;
            char *b = fuzz_buf(size);
            FUZZ_CHECK(rls__key_escape((const char *)key, keylen, b, size) == n,
                       "size %zu: length changed", size);
            if (size == 0) {
                free(b);
                continue;
            }
            while (want < (size_t)n &&
                   want + (u = unit_len((const unsigned char *)full + want,
                                        (size_t)n - want)) < size)
                want += u;
            FUZZ_CHECK(memchr(b, '\0', size) == b + want,
                       "size %zu: output should stop after %zu bytes", size, want);
            FUZZ_CHECK(memcmp(b, full, want) == 0, "size %zu: not a prefix", size);
            free(b);
        }
    }
    /* the public wrapper escapes up to the first NUL */
    {
        char *s = fuzz_strndup(key, keylen);
        size_t sl = strlen(s);
        int m = rls__key_escape(s, sl, NULL, 0);
        char *b1 = fuzz_buf((size_t)m + 1), *b2 = fuzz_buf((size_t)m + 1);
        FUZZ_CHECK(rls_key_escape(s, b1, (size_t)m + 1) == m &&
                       rls__key_escape(s, sl, b2, (size_t)m + 1) == m && strcmp(b1, b2) == 0,
                   "rls_key_escape disagrees");
        FUZZ_CHECK(rls_key_escape(s, NULL, 1) == -1, "NULL buffer with size 1");
        free(b1);
        free(b2);
        free(s);
    }
    free(full);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *key = (const char *)data;
    uint32_t h = fuzz_hash(data, size);
    char *s;

    if (size > 4096)   /* RLS_KEY_MAX_LIMIT: longer keys never get here */
        return 0;
    check_string(key, size);
    check_email(key, size);
    check_ip(key, size, 32, 128);
    check_ip(key, size, 24, 64);
    check_ip(key, size, (int)(h % 33), (int)((h >> 8) % 129));
    {
        char out[16];
        FUZZ_CHECK(rls__key_normalize(3, 32, 128, key, size, out, sizeof out, NULL) == -1,
                   "unknown kind accepted");
        FUZZ_CHECK(rls__key_normalize(KEY_IP, 33, 128, key, size, out, sizeof out, NULL) == -1 &&
                       rls__key_normalize(KEY_IP, 32, 129, key, size, out, sizeof out, NULL) == -1,
                   "prefix out of range accepted");
    }
    s = fuzz_strndup(data, size);
    check_pattern(s, key, size);
    if (strlen(s) > 0) {
        /* and the key against a few fixed patterns */
        static const char *const pats[] = { "*", "user:*", "10.0.0.0/8", "::/0",
                                            "0.0.0.0/0", "2001:db8::/32",
                                            "::ffff:10.0.0.0/104", "192.0.2.10" };
        for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
            check_pattern(pats[i], s, strlen(s));
    }
    free(s);
    check_escape(data, size, h);
    return 0;
}
