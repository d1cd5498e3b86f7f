/*
 * suggest.c - "did you mean" for rlctl's command line, as git does for a
 * mistyped command: the candidate nearest to what was typed, by edit
 * distance (insertions, deletions, substitutions and swaps of two
 * neighbours, each costing 1), if it is near enough to be a typo rather
 * than another word.
 */
#include <string.h>
#include "rlctl.h"

#define SUGGEST_MAX 64   /* longer words get no suggestion */

/* Optimal string alignment distance of a and b (both < SUGGEST_MAX). */
static int distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    static int d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* Contract in rlctl.h. */
const char *suggest(const char *word, const char *const *cands, int n)
{
    const char *best = NULL;
    int bestd = 0;
    size_t wl = word ? strlen(word) : 0;
    if (wl == 0 || wl >= SUGGEST_MAX)
        return NULL;
    /* a third of the word, at least 1 and at most 2 edits: "chek" ->
     * "check", "lst" -> "list", but "x" suggests nothing */
    int most = wl >= 6 ? 2 : 1;
    for (int i = 0; i < n; i++) {
        if (!cands[i] || strlen(cands[i]) >= SUGGEST_MAX)
            continue;
        int d = distance(word, cands[i]);
        if (d <= most && d < (int)strlen(cands[i]) && (!best || d < bestd)) {
            best = cands[i];
            bestd = d;
        }
    }
    return best;
}
