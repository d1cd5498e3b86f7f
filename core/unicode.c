/*
 * unicode.c - see unicode.h.  The ranges are Unicode 15.1's general
 * categories Cf, Zl and Zp (DerivedGeneralCategory.txt); a character
 * assigned to Cf later is shown raw until it is added here, which only
 * costs layout, never safety against control sequences (those are bytes
 * below 0x20, DEL and C1, escaped by rls__key_escape itself).
 */
#include "unicode.h"

#include <stddef.h>

static const struct { uint32_t lo, hi; } invisible[] = {
    {0x00AD, 0x00AD},   /* soft hyphen */
    {0x0600, 0x0605},   /* Arabic number signs */
    {0x061C, 0x061C},   /* Arabic letter mark */
    {0x06DD, 0x06DD},
    {0x070F, 0x070F},
    {0x0890, 0x0891},
    {0x08E2, 0x08E2},
    {0x180E, 0x180E},   /* Mongolian vowel separator */
    {0x200B, 0x200F},   /* zero-width space, (non-)joiner, LRM, RLM */
    {0x2028, 0x202E},   /* line/paragraph separators, LRE RLE PDF LRO RLO */
    {0x2060, 0x2064},   /* word joiner, invisible operators */
    {0x2066, 0x206F},   /* LRI RLI FSI PDI, deprecated format characters */
    {0xFEFF, 0xFEFF},   /* zero-width no-break space, byte order mark */
    {0xFFF9, 0xFFFB},   /* interlinear annotation */
    {0x110BD, 0x110BD},
    {0x110CD, 0x110CD},
    {0x13430, 0x1343F}, /* Egyptian hieroglyph format controls */
    {0x1BCA0, 0x1BCA3}, /* shorthand format controls */
    {0x1D173, 0x1D17A}, /* musical symbol format controls */
    {0xE0001, 0xE0001}, /* language tag */
    {0xE0020, 0xE007F}, /* tag characters */
};

int rls__uni_is_invisible(uint32_t cp)
{
    if (cp < invisible[0].lo)
        return 0;
    for (size_t i = 0; i < sizeof invisible / sizeof invisible[0]; i++)
        if (cp >= invisible[i].lo && cp <= invisible[i].hi)
            return 1;
    return 0;
}
