/*
 * keys.h - the one key table of rltop (varnishstat style).
 *
 * RLTOP_KEYS generates the dispatch in rltop.c (key code -> handler), the
 * `?` help screen, the "Keys:" section of `rltop --help`, and through that
 * the check of the KEYS section of docs/man/rltop.1 in tests/tui, so the
 * bindings, the help and the manual cannot drift apart.
 *
 *   X(id, code, alt, label, help)
 *     id     handler key_<id>(app *) in actions.c / ops.c, returns RT_* flags
 *     code   the key (a character or a curses KEY_* code)
 *     alt    a second key with the same meaning, or 0
 *     label  how the help and the manual name the key(s)
 *     help   one line, lower case, no full stop
 */
#ifndef RLTOP_KEYS_H
#define RLTOP_KEYS_H

#define RLTOP_CTRL(c) ((c) & 0x1f)

#define RLTOP_KEYS(X)                                                                       \
    X(up, KEY_UP, 0, "Up", "select the previous row (k is not bound: htop's kill)")        \
    X(down, KEY_DOWN, 'j', "Down j", "select the next row")                                \
    X(pgup, KEY_PPAGE, 0, "PgUp", "scroll one page up")                                     \
    X(pgdn, KEY_NPAGE, ' ', "PgDn Space", "scroll one page down")                          \
    X(home, KEY_HOME, 'g', "Home g", "go to the first row")                                \
    X(end, KEY_END, 'G', "End G", "go to the last row")                                    \
    X(enter, '\n', KEY_ENTER, "Enter", "open or close the detail pane of the selected key") \
    X(close, 27, 0, "Esc", "close the detail pane, the help or a dialog")                  \
    X(next_view, '\t', 0, "Tab", "show the next view")                                     \
    X(prev_view, KEY_BTAB, 0, "Shift-Tab", "show the previous view")                        \
    X(view_keys, '1', 0, "1", "keys view: every tracked key and its most pressing limit")  \
    X(view_rules, '2', 0, "2", "rules view: rule-set versions, tiers and limits")          \
    X(view_blocks, '3', 0, "3", "blocks view: active blocks")                              \
    X(view_audit, '4', 0, "4", "audit view: recent changes by operators and tools")        \
    X(search, KEY_F(3), 0, "F3", "search keys as you type; F3 again: next match")         \
    X(filter, KEY_F(4), '/', "F4 /", "filter keys as you type (Esc clears the filter)")    \
    X(filter_bs, '\\', 0, "\\", "filter keys, as htop's backslash (the same as F4)")       \
    X(action, 'a', 0, "a", "filter keys by action (menu)")                                 \
    X(sort, 's', 0, "s", "sort keys by use, denials, key or soonest reset (cycles)")       \
    X(sort_menu, KEY_F(6), 0, "F6", "choose the sort column (menu)")                        \
    X(sort_prev, '<', ',', "< ,", "sort by the previous column")                            \
    X(sort_next, '>', '.', "> .", "sort by the next column")                                \
    X(invert, 'I', 0, "I", "invert the sort order")                                         \
    X(unblock, 'u', 0, "u",                                                                 \
      "unblock the selected key (in the blocks view: the selected block)")                 \
    X(block, 'b', 0, "b", "block the selected key for a duration, with a reason")          \
    X(tier, 't', 0, "t", "assign the selected key to a tier, optionally until a time")     \
    X(override, 'o', 0, "o", "override one limit for the selected key")                    \
    X(reset, 'r', 0, "r", "reset the counters of the selected key")                        \
    X(edit, 'e', 0, "e", "edit a limit of a tier (applies a new rule-set version)")       \
    X(rollback, 'R', 0, "R",                                                                \
      "roll back the rule set to an older version (in the rules view: the selected one)")  \
    X(refresh, RLTOP_CTRL('l'), KEY_F(5), "Ctrl-L F5", "sample and redraw now")            \
    X(help, '?', KEY_F(1), "? F1", "show or hide this help")                               \
    X(quit, 'q', KEY_F(10), "q F10", "quit")

#endif /* RLTOP_KEYS_H */
