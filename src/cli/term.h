/* term.h - what the CLI's terminal views share (query's table, top): whether to colour, the
 * terminal's width and its styles (GPU names are shortened by base/utf8.h). */
#ifndef GM_CLI_TERM_H
#define GM_CLI_TERM_H

#include <stdbool.h>
#include <stddef.h>

typedef enum gm_color_mode { GM_COLOR_AUTO = 0, GM_COLOR_ALWAYS, GM_COLOR_NEVER } gm_color_mode;

/* "auto", "always" or "never" (also "yes"/"no", as ls takes them) into *out; false otherwise. */
bool gm_term_parse_color(const char *arg, gm_color_mode *out);

/* Whether output to fd gets colour: always, never, or (auto) when fd is a terminal, NO_COLOR
 * is unset or empty (no-color.org) and TERM is not "dumb". */
bool gm_term_use_color(gm_color_mode mode, int fd);

/* Columns of the terminal on fd; 0 when fd is not a terminal or does not say. */
int gm_term_columns(int fd);

/* Lines of the terminal on fd; 0 when fd is not a terminal or does not say. */
int gm_term_rows(int fd);

/* ANSI SGR sequences, or "" without colour. */
typedef struct gm_term_style {
    const char *bold, *dim, *red, *yellow, *green, *cyan, *reset;
} gm_term_style;

/* The sequences for color on or off. */
gm_term_style gm_term_style_for(bool color);

/* The colour of a level: green below warn, yellow from warn, red from crit. */
const char *gm_term_level(const gm_term_style *st, double value, double warn, double crit);

#endif
