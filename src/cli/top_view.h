/* top_view.h - `gpumon top`'s screen on ncurses: a title, the host, per-GPU bars (utilization,
 * memory, power, temperature), the history graphs of one GPU, the process list with a selected
 * row, and a line of keys, prompts and messages. Graphs are block characters where the locale
 * is UTF-8, ASCII elsewhere. It draws a frame (top_source.h) and the state the keys change, in
 * two steps: the layout (where each part goes, computed without the terminal) and the drawing
 * of it. Reading keys and acting on them is cmd_top.c's. */
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

/* Where each part of the screen goes, for a frame, the view's state and a terminal size: rows
 * count from 0 at the top, and a row of -1 is a part not drawn. Computed apart from the
 * terminal, which gm_top_view_draw then draws it on. */
typedef struct gm_top_layout {
    bool too_small; /* below the minimum: the screen only says so, and nothing else is set */
    /* The GPUs from gpu_y, gpus_shown of them: each on two rows (bars in pairs, p-state and fan
     * under the name) or on one (four narrow bars), then a row saying how many more when not
     * all fit. */
    int gpu_y;
    bool gpu_two_rows;
    int gpu_name_w;
    unsigned gpus_shown;
    int more_gpus_y;
    /* The history of graph_gpu over graph_rows rows from graph_y (0: no graphs), two graphs of
     * graph_w columns side by side; with graph_four, two more from graph_y + graph_top_rows.
     * graph_gpu is the state's, or the first GPU when graphs are drawn and the state's has left
     * the frame. */
    unsigned graph_gpu;
    int graph_y, graph_rows, graph_top_rows, graph_w;
    bool graph_four;
    /* The process list: its header, then list_rows rows from list_y. proc_rows of them show
     * processes from the first-th (procs_drawn of them, the selected one reversed); the last,
     * status_y (-1: none), says how many more there are and which filter hides some. */
    int header_y, list_y, list_rows, proc_rows, status_y;
    size_t nvis;     /* processes matching the filter */
    size_t selected; /* the selection, within them */
    size_t first, procs_drawn;
    size_t below; /* processes past the last row drawn: the "+N more" */
    size_t page;  /* rows PgUp/PgDn move by */
    int keys_y;   /* the keys, a question or a message */
} gm_top_layout;

/* The layout of f and st on a terminal of cols x rows: touches no terminal. */
void gm_top_view_layout(const gm_top_frame *f, const gm_top_view_state *st, int cols, int rows,
                        gm_top_layout *out);

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
