/*
 * keynorm.c - key normalisation (string, ip, email), assignment patterns
 * (exact, CIDR, prefix glob) and escaping of keys for display.
 *
 * Pure functions, no allocation, no global state: safe from any thread.
 * IP text is parsed and printed here rather than with inet_pton/inet_ntop so
 * that the canonical form is the same on every libc:
 *   - IPv4: exactly four decimal parts 0..255, no leading zeros ("01" is
 *     refused, as glibc's inet_pton does: it could mean octal elsewhere).
 *   - IPv6: RFC 4291 text, 1-4 hex digits per group (any case), at most one
 *     "::", optional dotted-quad tail.  Zone identifiers ("fe80::1%eth0") are
 *     refused: a zone is local to one host's interfaces and would let one
 *     client appear as many keys.  Brackets and whitespace are refused.
 *   - Output follows RFC 5952: lower case, no leading zeros, the longest run
 *     of two or more zero groups (the first of equal runs) as "::".
 *     IPv4-mapped addresses (::ffff:a.b.c.d) become plain IPv4.
 */
#include "keynorm.h"
#include "unicode.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define IP_TEXT_MAX 64

/* ---- kinds -------------------------------------------------------------- */

const char *rls__key_kind_name(int kind)
{
    switch (kind) {
    case KEY_STRING: return "string";
    case KEY_IP: return "ip";
    case KEY_EMAIL: return "email";
    default: return NULL;
    }
}

int rls__key_kind_from_name(const char *name)
{
    if (!name)
        return -1;
    if (strcmp(name, "string") == 0)
        return KEY_STRING;
    if (strcmp(name, "ip") == 0)
        return KEY_IP;
    if (strcmp(name, "email") == 0)
        return KEY_EMAIL;
    return -1;
}

/* ---- IP parsing and printing -------------------------------------------- */

/* s[0..n) as a dotted quad into a[0..4).  Returns 0 or -1. */
static int parse_v4(const char *s, size_t n, unsigned char a[4])
{
    size_t i = 0;
    int part;

    for (part = 0; part < 4; part++) {
        unsigned v = 0;
        size_t start = i;
        while (i < n && s[i] >= '0' && s[i] <= '9' && i - start < 3)
            v = v * 10 + (unsigned)(s[i++] - '0');
        if (i == start || v > 255 || (i - start > 1 && s[start] == '0'))
            return -1;
        a[part] = (unsigned char)v;
        if (part < 3) {
            if (i >= n || s[i] != '.')
                return -1;
            i++;
        }
    }
    return i == n ? 0 : -1;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* s[0..n) as IPv6 text into a[0..16).  Returns 0 or -1. */
static int parse_v6(const char *s, size_t n, unsigned char a[16])
{
    unsigned g[8];
    int ng = 0, dc = -1, k;
    size_t i = 0;

    if (n >= 2 && s[0] == ':' && s[1] == ':') {
        dc = 0;
        i = 2;
    } else if (n == 0 || s[0] == ':') {
        return -1;
    }
    while (i < n) {
        size_t start = i;
        unsigned v = 0;
        while (i < n && hexval(s[i]) >= 0 && i - start < 5)
            v = v * 16 + (unsigned)hexval(s[i++]);
        if (i < n && s[i] == '.') {
            unsigned char q[4];
            if (ng > 6 || parse_v4(s + start, n - start, q) != 0)
                return -1;
            g[ng++] = (unsigned)q[0] << 8 | q[1];
            g[ng++] = (unsigned)q[2] << 8 | q[3];
            i = n;
            break;
        }
        if (i == start || i - start > 4 || ng == 8)
            return -1;
        g[ng++] = v;
        if (i == n)
            break;
        if (s[i] != ':')
            return -1;
        i++;
        if (i < n && s[i] == ':') {
            if (dc >= 0)
                return -1;
            dc = ng;
            i++;
        } else if (i == n) {
            return -1;              /* a single trailing ':' */
        }
    }
    if (dc < 0 ? ng != 8 : ng > 7)
        return -1;
    memset(a, 0, 16);
    for (k = 0; k < ng; k++) {
        int pos = (dc >= 0 && k >= dc) ? 8 - (ng - k) : k;
        a[2 * pos] = (unsigned char)(g[k] >> 8);
        a[2 * pos + 1] = (unsigned char)(g[k] & 0xff);
    }
    return 0;
}

static const unsigned char v4_mapped_prefix[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

/*
 * Parses an address (no prefix) into its 128-bit form; IPv4 and IPv4-mapped
 * IPv6 give ::ffff:a.b.c.d and *is_v4 = 1.  Returns 0 or -1.
 */
static int parse_addr(const char *s, size_t n, unsigned char a[16], int *is_v4)
{
    if (n == 0 || n >= IP_TEXT_MAX)
        return -1;
    if (memchr(s, ':', n)) {
        if (parse_v6(s, n, a) != 0)
            return -1;
        *is_v4 = memcmp(a, v4_mapped_prefix, 12) == 0;
        return 0;
    }
    memcpy(a, v4_mapped_prefix, 12);
    *is_v4 = 1;
    return parse_v4(s, n, a + 12);
}

/* Clears every bit after the first `bits` of a[0..16). */
static void mask_bits(unsigned char a[16], int bits)
{
    int i;
    for (i = 0; i < 16; i++) {
        int keep = bits - 8 * i;
        if (keep >= 8)
            continue;
        a[i] &= keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
    }
}

static int prefix_equal(const unsigned char *a, const unsigned char *b, int bits)
{
    unsigned char x[16], y[16];
    memcpy(x, a, 16);
    memcpy(y, b, 16);
    mask_bits(x, bits);
    mask_bits(y, bits);
    return memcmp(x, y, 16) == 0;
}

/* The decimal (0..255) or lower-case hex (0..0xffff, no leading zeros)
 * digits of v at buf + n: the new length.  Not snprintf: every check of an
 * IP action formats its key twice, and snprintf was a tenth of a check's
 * instructions. */
static int put_dec(char *buf, int n, unsigned v)
{
    if (v >= 100)
        buf[n++] = (char)('0' + v / 100);
    if (v >= 10)
        buf[n++] = (char)('0' + v / 10 % 10);
    buf[n++] = (char)('0' + v % 10);
    return n;
}

static int put_hex(char *buf, int n, unsigned v)
{
    static const char hex[] = "0123456789abcdef";
    int shift = 12;
    while (shift > 0 && (v >> shift) == 0)
        shift -= 4;
    for (; shift >= 0; shift -= 4)
        buf[n++] = hex[(v >> shift) & 15];
    return n;
}

/* RFC 5952 text of a (IPv4 if is_v4) into buf (>= IP_TEXT_MAX); length. */
static int format_addr(const unsigned char a[16], int is_v4, char *buf)
{
    int best = -1, best_len = 0, cur = -1, cur_len = 0, i, n = 0;
    unsigned g[8];

    if (is_v4) {
        for (i = 12; i < 16; i++) {
            if (i > 12)
                buf[n++] = '.';
            n = put_dec(buf, n, a[i]);
        }
        buf[n] = '\0';
        return n;
    }
    for (i = 0; i < 8; i++) {
        g[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
        if (g[i] == 0) {
            if (cur < 0) {
                cur = i;
                cur_len = 0;
            }
            cur_len++;
            if (cur_len > best_len) {
                best = cur;
                best_len = cur_len;
            }
        } else {
            cur = -1;
        }
    }
    if (best_len < 2)
        best = -1;
    for (i = 0; i < 8; i++) {
        if (i == best) {
            buf[n++] = ':';
            buf[n++] = ':';
            i += best_len - 1;
            continue;
        }
        if (i > 0 && i != best + best_len)
            buf[n++] = ':';
        n = put_hex(buf, n, g[i]);
    }
    buf[n] = '\0';
    return n;
}

/* ---- normalisation ------------------------------------------------------ */

static int copy_out(const char *src, size_t n, char *out, size_t outsize)
{
    if (!out || n >= outsize)
        return -2;
    memcpy(out, src, n);
    out[n] = '\0';
    return (int)n;
}

static int norm_ip(int v4_prefix, int v6_prefix, const char *key, size_t n,
                   char *out, size_t outsize, const char **why)
{
    unsigned char a[16];
    char text[IP_TEXT_MAX + 8];
    int is_v4, len, bits, full;

    if (memchr(key, '%', n)) {
        *why = "IPv6 zone identifiers (%...) are not accepted";
        return -1;
    }
    if (memchr(key, '/', n)) {
        *why = "an IP key is one address, not a network";
        return -1;
    }
    if (parse_addr(key, n, a, &is_v4) != 0) {
        *why = "not an IPv4 or IPv6 address";
        return -1;
    }
    bits = is_v4 ? v4_prefix : v6_prefix;
    full = is_v4 ? 32 : 128;
    mask_bits(a, is_v4 ? 96 + bits : bits);
    len = format_addr(a, is_v4, text);
    if (bits < full) {
        text[len++] = '/';
        len = put_dec(text, len, (unsigned)bits);
    }
    return copy_out(text, (size_t)len, out, outsize);
}

static int norm_email(const char *key, size_t n, char *out, size_t outsize,
                      const char **why)
{
    const char *at = memchr(key, '@', n);
    size_t i, local_end, o = 0;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c <= 0x20 || c == 0x7f) {
            *why = "an email key must not contain spaces or control characters";
            return -1;
        }
    }
    if (!at || memchr(at + 1, '@', n - (size_t)(at - key) - 1)) {
        *why = "an email key must contain exactly one '@'";
        return -1;
    }
    local_end = (size_t)(at - key);
    if (local_end == 0 || local_end + 1 == n) {
        *why = "an email key needs text before and after '@'";
        return -1;
    }
    {
        const char *plus = memchr(key, '+', local_end);
        if (plus)
            local_end = (size_t)(plus - key);
    }
    if (local_end == 0) {
        *why = "an email key needs a local part before '+'";
        return -1;
    }
    if (!out || local_end + (n - (size_t)(at - key)) >= outsize)
        return -2;
    for (i = 0; i < n; i++) {
        char c = key[i];
        if (i >= local_end && key + i < at)
            continue;                       /* the +tag */
        out[o++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    out[o] = '\0';
    return (int)o;
}

/*
 * Contract: see keynorm.h.  Every kind refuses an empty key and a NUL byte
 * inside keylen.  ip: see the file header; IPv4 is folded with ipv4_prefix,
 * IPv6 with ipv6_prefix, and the result carries "/N" when N is shorter than
 * the address.  email: bytes <= 0x20 and 0x7f are refused (nothing is
 * trimmed, so " a@b" is an error rather than a second key).
 */
int rls__key_normalize(int kind, int ipv4_prefix, int ipv6_prefix,
                  const char *key, size_t keylen, char *out, size_t outsize,
                  const char **why)
{
    const char *dummy;

    if (!why)
        why = &dummy;
    if (!key) {
        *why = "no key given";
        return -1;
    }
    if (keylen == 0) {
        *why = "empty key";
        return -1;
    }
    if (keylen > INT_MAX / 2) {
        *why = "key too long";
        return -1;
    }
    if (memchr(key, '\0', keylen)) {
        *why = "key contains a NUL byte";
        return -1;
    }
    switch (kind) {
    case KEY_STRING:
        return copy_out(key, keylen, out, outsize);
    case KEY_IP:
        if (ipv4_prefix < 0 || ipv4_prefix > 32 || ipv6_prefix < 0 ||
            ipv6_prefix > 128) {
            *why = "invalid IP prefix length";
            return -1;
        }
        return norm_ip(ipv4_prefix, ipv6_prefix, key, keylen, out, outsize, why);
    case KEY_EMAIL:
        return norm_email(key, keylen, out, outsize, why);
    default:
        *why = "unknown key kind";
        return -1;
    }
}

/* A dotted quad as parse_v4 accepts it (four parts 0..255, no leading
 * zero) is printed back by format_addr as it is written. */
static int v4_is_normal(const char *s, size_t n)
{
    size_t i = 0;
    for (int part = 0; part < 4; part++) {
        size_t start = i;
        unsigned v = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9' && i - start < 3)
            v = v * 10 + (unsigned)(s[i++] - '0');
        if (i == start || v > 255 || (i - start > 1 && s[start] == '0'))
            return 0;
        if (part < 3 && (i >= n || s[i++] != '.'))
            return 0;
    }
    return i == n;
}

/* norm_email's checks, and nothing it would change: no upper-case
 * letter, no +tag (a '+' before the '@'). */
static int email_is_normal(const char *key, size_t n)
{
    size_t at = n, ats = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c <= 0x20 || c == 0x7f || (c >= 'A' && c <= 'Z') || (c == '+' && ats == 0))
            return 0;
        if (c == '@' && ats++ == 0)
            at = i;
    }
    return ats == 1 && at > 0 && at + 1 < n;
}

int rls__key_is_normal(int kind, int ipv4_prefix, int ipv6_prefix, const char *key,
                       size_t keylen)
{
    if (!key || keylen == 0 || keylen > INT_MAX / 2 || memchr(key, '\0', keylen))
        return 0;
    switch (kind) {
    case KEY_STRING:
        return 1;
    case KEY_IP:
        return ipv4_prefix == 32 && ipv6_prefix >= 0 && ipv6_prefix <= 128 &&
               keylen < IP_TEXT_MAX && v4_is_normal(key, keylen);
    case KEY_EMAIL:
        return email_is_normal(key, keylen);
    default:
        return 0;
    }
}

/* ---- patterns ----------------------------------------------------------- */

/* addr/bits where addr has only IP characters and at least one '.' or ':',
 * and bits only digits (possibly none): meant as CIDR, so must be valid. */
static int looks_like_cidr(const char *text, const char *slash)
{
    const char *p;
    int sep = 0;

    if (slash == text)
        return 0;
    for (p = text; p < slash; p++) {
        if (*p == '.' || *p == ':')
            sep = 1;
        else if (hexval(*p) < 0)
            return 0;
    }
    for (p = slash + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return sep;
}

/*
 * Contract: see keynorm.h.  Classification, in order:
 *   ends with '*'          PREFIX (everything before the last '*'; "*"
 *                          alone matches every key)
 *   looks like addr/bits   CIDR; an invalid address, a prefix length out of
 *                          range (IPv4 0..32, IPv6 0..128) or host bits set
 *                          ("10.0.0.1/8") are errors
 *   anything else          EXACT (a bare address is an exact key: compare
 *                          it with the normalised key text)
 */
int rls__key_pattern_parse(const char *text, key_pattern *out, const char **why)
{
    const char *dummy, *slash;
    size_t len;

    if (!why)
        why = &dummy;
    if (!text || !*text || !out) {
        *why = "empty pattern";
        return -1;
    }
    memset(out, 0, sizeof *out);
    len = strlen(text);
    if (text[len - 1] == '*') {
        out->kind = PAT_PREFIX;
        out->len = len - 1;
        return 0;
    }
    slash = strrchr(text, '/');
    if (slash && looks_like_cidr(text, slash)) {
        unsigned char a[16], m[16];
        int is_v4, bits = 0, ndig = 0;
        const char *p;

        if (parse_addr(text, (size_t)(slash - text), a, &is_v4) != 0) {
            *why = "invalid address in CIDR pattern";
            return -1;
        }
        for (p = slash + 1; *p; p++, ndig++) {
            bits = bits * 10 + (*p - '0');
            if (bits > 128)
                break;
        }
        if (ndig == 0 || bits > (is_v4 && !memchr(text, ':', (size_t)(slash - text))
                                     ? 32 : 128)) {
            *why = "invalid prefix length in CIDR pattern";
            return -1;
        }
        /* "::ffff:10.0.0.0/104" is the IPv6 spelling of 10.0.0.0/8 */
        if (!memchr(text, ':', (size_t)(slash - text)))
            bits += 96;
        memcpy(m, a, 16);
        mask_bits(m, bits);
        if (memcmp(m, a, 16) != 0) {
            *why = "CIDR pattern has host bits set";
            return -1;
        }
        out->kind = PAT_CIDR;
        memcpy(out->addr, a, 16);
        out->bits = bits;
        return 0;
    }
    out->kind = PAT_EXACT;
    out->len = len;
    return 0;
}

/*
 * Parses a normalised IP key ("203.0.113.7", "2001:db8::/64") into its
 * 128-bit form and prefix length on that form.  Returns 0 or -1.
 */
static int parse_key_net(const char *key, size_t n, unsigned char a[16],
                         int *bits, int *is_v4)
{
    const char *slash = memchr(key, '/', n);
    size_t alen = slash ? (size_t)(slash - key) : n;
    int b = 0;

    if (parse_addr(key, alen, a, is_v4) != 0)
        return -1;
    if (slash) {
        size_t i, nd = n - alen - 1;
        if (nd == 0 || nd > 3)
            return -1;
        for (i = alen + 1; i < n; i++) {
            if (key[i] < '0' || key[i] > '9')
                return -1;
            b = b * 10 + (key[i] - '0');
        }
        if (b > (*is_v4 && !memchr(key, ':', alen) ? 32 : 128))
            return -1;
        if (*is_v4 && !memchr(key, ':', alen))
            b += 96;
    } else {
        b = 128;
    }
    *bits = b;
    return 0;
}

int rls__key_canonical(const char *key, size_t keylen, char *out, size_t outsize)
{
    const char *why = "";
    int n = norm_ip(32, 128, key, keylen, out, outsize, &why);
    if (n == -1)
        n = norm_email(key, keylen, out, outsize, &why);
    if (n == -1)
        n = copy_out(key, keylen, out, outsize);
    return n;
}

int rls__key_ip_net(const char *key, size_t keylen, unsigned char a[16], int *bits)
{
    int is_v4;
    if (!key || keylen >= IP_TEXT_MAX + 8 || memchr(key, '%', keylen))
        return -1;
    return parse_key_net(key, keylen, a, bits, &is_v4);
}

int rls__key_net_contains(const unsigned char net[16], int bits, const unsigned char a[16])
{
    return bits >= 0 && bits <= 128 && prefix_equal(net, a, bits);
}

/*
 * Contract: see keynorm.h.  CIDR: the key (an address, or a folded network
 * "2001:db8:1:2::/64") matches when it lies inside the pattern's network.
 * An IPv4 key never matches an IPv6 pattern wider than /96 ("::/0" means
 * every IPv6 address, not every address): IPv4 keys are matched by IPv4
 * patterns or by patterns inside ::ffff:0:0/96.
 */
int rls__key_pattern_match(const key_pattern *p, const char *text,
                      const char *key, size_t keylen)
{
    if (!p || !key)
        return 0;
    switch (p->kind) {
    case PAT_EXACT:
        return text && strlen(text) == keylen && memcmp(text, key, keylen) == 0;
    case PAT_PREFIX:
        return text && keylen >= p->len && memcmp(text, key, p->len) == 0;
    case PAT_CIDR: {
        unsigned char a[16];
        int bits, is_v4;
        if (keylen >= IP_TEXT_MAX + 8 ||
            parse_key_net(key, keylen, a, &bits, &is_v4) != 0)
            return 0;
        if (is_v4 && p->bits < 96)
            return 0;
        return bits >= p->bits && prefix_equal(a, p->addr, p->bits);
    }
    default:
        return 0;
    }
}

/*
 * Contract: see keynorm.h.  Ranks: PREFIX 1 + min(len, 999999) (1 for "*"),
 * CIDR 2000000 + bits on the 128-bit form, EXACT 3000000.
 */
int rls__key_pattern_rank(const key_pattern *p)
{
    if (!p)
        return 0;
    switch (p->kind) {
    case PAT_EXACT: return 3000000;
    case PAT_CIDR: return 2000000 + p->bits;
    case PAT_PREFIX: return 1 + (int)(p->len > 999999 ? 999999 : p->len);
    default: return 0;
    }
}

/* ---- display escaping --------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence (RFC 3629) at s, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t need, i;

    if (c < 0xc2 || c > 0xf4)
        return 0;
    need = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    if (c == 0xe0)
        lo = 0xa0;              /* no overlong 3-byte forms */
    else if (c == 0xed)
        hi = 0x9f;              /* no surrogates */
    else if (c == 0xf0)
        lo = 0x90;              /* no overlong 4-byte forms */
    else if (c == 0xf4)
        hi = 0x8f;              /* nothing above U+10FFFF */
    if (n < need || s[1] < lo || s[1] > hi)
        return 0;
    for (i = 2; i < need; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return need;
}

/*
 * Output with snprintf bookkeeping, but a unit (one byte, one escape, one
 * UTF-8 sequence) is written whole or not at all, and nothing after the
 * first unit that does not fit: a cut display string never ends in half an
 * escape or half a character.
 */
struct esc_out {
    char *buf;
    size_t size, len, written;
    int full;
};

static void put_unit(struct esc_out *o, const char *p, size_t n)
{
    if (!o->full && o->len + n < o->size) {
        memcpy(o->buf + o->len, p, n);
        o->written = o->len + n;
    } else {
        o->full = 1;
    }
    o->len += n;
}

/*
 * Contract: see keynorm.h.  Hex digits are lower case ("\x1b").  The C1
 * control characters U+0080..U+009F are valid UTF-8 but are escaped byte by
 * byte like other control characters ("\xc2\x9b"): some terminals act on
 * them.  When out is too small, output stops before the first unit (byte,
 * escape or UTF-8 sequence) that does not fit whole.  Returns the full
 * length, or -1 for NULL arguments or a length that would not fit an int.
 */
/* A valid UTF-8 sequence of k bytes that shows nothing but moves or hides
 * what follows (unicode.h): escaped byte by byte like a control byte. */
static int invisible_at(const unsigned char *s, size_t k)
{
    uint32_t cp = s[0] & (k == 2 ? 0x1f : k == 3 ? 0x0f : 0x07);
    for (size_t j = 1; j < k; j++)
        cp = cp << 6 | (s[j] & 0x3f);
    return rls__uni_is_invisible(cp);
}

int rls__key_escape(const char *key, size_t keylen, char *out, size_t outsize)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)key;
    struct esc_out o = { out, outsize, 0, 0, 0 };
    size_t i = 0;

    if ((!key && keylen > 0) || (!out && outsize > 0) ||
        keylen > (size_t)INT_MAX / 4 - 1)
        return -1;
    while (i < keylen) {
        unsigned char c = s[i];
        size_t k;

        if (c == '\\') {
            put_unit(&o, "\\\\", 2);
            i++;
        } else if (c >= 0x20 && c < 0x7f) {
            put_unit(&o, (const char *)s + i, 1);
            i++;
        } else if (c >= 0x80 && (k = utf8_seq(s + i, keylen - i)) > 0 &&
                   !(c == 0xc2 && s[i + 1] < 0xa0) && !invisible_at(s + i, k)) {
            put_unit(&o, (const char *)s + i, k);
            i += k;
        } else {
            char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
            put_unit(&o, e, 4);
            i++;
        }
    }
    if (outsize > 0)
        out[o.written] = '\0';
    return (int)o.len;
}
