/* term.c - colour decisions, terminal width and short GPU names for the terminal views. */
#include "cli/term.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

bool gm_term_parse_color(const char *arg, gm_color_mode *out)
{
    if (strcmp(arg, "auto") == 0)
        *out = GM_COLOR_AUTO;
    else if (strcmp(arg, "always") == 0 || strcmp(arg, "yes") == 0)
        *out = GM_COLOR_ALWAYS;
    else if (strcmp(arg, "never") == 0 || strcmp(arg, "no") == 0)
        *out = GM_COLOR_NEVER;
    else
        return false;
    return true;
}

bool gm_term_use_color(gm_color_mode mode, int fd)
{
    if (mode != GM_COLOR_AUTO)
        return mode == GM_COLOR_ALWAYS;
    const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
    return isatty(fd) && !(no && *no) && !(term && strcmp(term, "dumb") == 0);
}

int gm_term_columns(int fd)
{
    struct winsize ws;
    if (!isatty(fd) || ioctl(fd, TIOCGWINSZ, &ws) != 0)
        return 0;
    return ws.ws_col;
}

int gm_term_rows(int fd)
{
    struct winsize ws;
    if (!isatty(fd) || ioctl(fd, TIOCGWINSZ, &ws) != 0)
        return 0;
    return ws.ws_row;
}

gm_term_style gm_term_style_for(bool color)
{
    if (!color)
        return (gm_term_style){"", "", "", "", "", "", ""};
    return (gm_term_style){"\033[1m",  "\033[2m",  "\033[31m", "\033[33m",
                           "\033[32m", "\033[36m", "\033[0m"};
}

const char *gm_term_level(const gm_term_style *st, double value, double warn, double crit)
{
    return value >= crit ? st->red : value >= warn ? st->yellow : st->green;
}
