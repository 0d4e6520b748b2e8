/* top_view.h - `gpumon top`'s screen on ncurses: a title, the host, per-GPU bars (utilization,
 * memory, power, temperature), the history graphs of one GPU, the process list with a selected
 * row, and a line of keys, prompts and messages. Graphs are block characters where the locale
 * is UTF-8, ASCII elsewhere. It draws a frame (top_source.h) and the
 * state the keys change; reading keys and acting on them is cmd_top.c's. */
#ifndef GM_CLI_TOP_VIEW_H
#define GM_CLI_TOP_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/top_source.h"

/* The smallest terminal the view draws into; below it, a message says so. */
#define GM_TOP_MIN_COLS 80
#define GM_TOP_MIN_ROWS 24

typedef struct gm_top_view_state {
    gm_top_sort sort;
    size_t selected;    /* row of the process list (index into the sorted frame) */
    size_t first;       /* the list's first visible row */
    unsigned graph_gpu; /* position in the frame of the GPU whose history is drawn */
    double interval_s;  /* between readings, for the title and the graph's time span */
    const char *where;  /* what is watched: a provider or a daemon's URL */
    bool confirm;       /* a kill awaits y/n: prompt holds the question */
    bool help;          /* the key list is shown over the screen */
    char prompt[320];   /* the question of a confirmation */
    char message[320];  /* the result of the last action, shown until the next key */
    bool message_error;
    size_t list_rows; /* set by draw: process rows visible, for paging */
    /* The process list shows only the processes matching filter ("" shows all): the user's
     * name exactly when filter_user, else a substring of the user or the command. */
    char filter[64];
    bool filter_user;
    /* A filter being typed at the bottom line: input_kind 'u' (a user) or '/' (any text). */
    bool input;
    char input_kind;
    char input_buf[64];
} gm_top_view_state;

/* Takes the terminal (curses mode, no echo, keys as codes, hidden cursor), with colour when
 * color and the terminal has it. */
void gm_top_view_start(bool color);

/* Draws f and st onto the whole screen, or the too-small message. */
void gm_top_view_draw(const gm_top_frame *f, gm_top_view_state *st);

/* The processes the list shows (those matching the filter), in the frame's order: how many,
 * and the i-th (NULL past the end). The selection indexes these. */
size_t gm_top_view_count(const gm_top_frame *f, const gm_top_view_state *st);
const gm_top_proc *gm_top_view_proc(const gm_top_frame *f, const gm_top_view_state *st, size_t i);

/* Gives the terminal back as it was. */
void gm_top_view_end(void);

#endif
