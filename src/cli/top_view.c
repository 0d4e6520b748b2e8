/* top_view.c - `gpumon top`'s screen: bars in ASCII as htop draws them, history graphs in
 * eighth-block characters where the locale is UTF-8 (ASCII where it is not, so any terminal
 * shows them), colour by level where the terminal has colour and the user did not turn it off. */
#include "cli/top_view.h"

#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <ncurses.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/utf8.h"
#include "cli/term.h"

enum { C_GREEN = 1, C_YELLOW, C_RED, C_CYAN, C_TITLE, C_DIM };

static bool use_color;
static bool use_utf8;

void gm_top_view_start(bool color)
{
    /* Only the character set: numbers keep the C locale's decimal point. */
    setlocale(LC_CTYPE, "");
    use_utf8 = strcasecmp(nl_langinfo(CODESET), "UTF-8") == 0;
    set_escdelay(25); /* Esc cancels a filter being typed without a second's wait */
    initscr();
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    use_color = color && has_colors();
    if (use_color) {
        start_color();
        use_default_colors();
        init_pair(C_GREEN, COLOR_GREEN, -1);
        init_pair(C_YELLOW, COLOR_YELLOW, -1);
        init_pair(C_RED, COLOR_RED, -1);
        init_pair(C_CYAN, COLOR_CYAN, -1);
        init_pair(C_TITLE, COLOR_BLACK, COLOR_CYAN);
        init_pair(C_DIM, COLOR_BLUE, -1);
    }
}

void gm_top_view_end(void)
{
    endwin();
}

static attr_t pair(int p)
{
    return use_color ? COLOR_PAIR(p) : 0;
}

/* The colour of a level: green, yellow from warn, red from crit. */
static attr_t level(double v, double warn, double crit)
{
    return pair(v >= crit ? C_RED : v >= warn ? C_YELLOW : C_GREEN);
}

/* Writes text at (y, x), at most w columns. */
static void put(int y, int x, int w, attr_t a, const char *text)
{
    if (w <= 0)
        return;
    attron(a);
    mvaddnstr(y, x, text, w);
    attroff(a);
}

/* A bar as htop draws them: LABEL[|||||||      text] in w columns, filled to pct (0-100), the
 * text right-aligned inside it; an absent reading (NaN) is an empty bar saying N/A. */
static void bar(int y, int x, int w, const char *label, double pct, const char *text, attr_t a)
{
    int lw = (int)strlen(label);
    int inner = w - lw - 2;
    if (inner < 4)
        return;
    put(y, x, lw, A_BOLD, label);
    mvaddch(y, x + lw, '[');
    int fill = isnan(pct) ? 0 : (int)lround((pct < 0 ? 0 : pct > 100 ? 100 : pct) * inner / 100);
    int tl = (int)strlen(text);
    if (tl > inner)
        tl = inner;
    for (int i = 0; i < inner; i++) {
        int ti = i - (inner - tl);
        chtype ch = ti >= 0 ? (chtype)(unsigned char)text[ti] : i < fill ? '|' : ' ';
        attr_t at = ti >= 0 ? (isnan(pct) ? pair(C_DIM) : A_BOLD) : i < fill ? a : 0;
        mvaddch(y, x + lw + 1 + i, ch | at);
    }
    mvaddch(y, x + lw + 1 + inner, ']');
}

static void fmt_num(char *buf, size_t len, double v, const char *unit)
{
    if (isnan(v))
        snprintf(buf, len, "N/A");
    else
        snprintf(buf, len, "%.0f%s", v, unit);
}

/* The four bars of a GPU over width w from column x: util and memory on the first row, power
 * and temperature on the second (or all four on one row when two is false). */
static void gpu_bars(const gm_top_gpu *g, int y, int x, int w, bool two)
{
    char t[64];
    double mem_pct = g->mem_total_mib > 0 ? 100 * g->mem_used_mib / g->mem_total_mib : NAN;
    double pw_pct = g->power_limit_w > 0 ? 100 * g->power_w / g->power_limit_w : NAN;
    int bw = two ? (w - 1) / 2 : (w - 3) / 4;
    int x1 = x + bw + 1, x2 = two ? x : x1 + bw + 1, x3 = x2 + bw + 1;
    int y2 = two ? y + 1 : y;

    fmt_num(t, sizeof t, g->util_pct, "%");
    bar(y, x, bw, two ? "UTIL" : "U", g->util_pct, t, level(g->util_pct, 70, 90));
    if (isnan(mem_pct))
        snprintf(t, sizeof t, "N/A");
    else if (two)
        snprintf(t, sizeof t, "%.0f/%.0fMiB", g->mem_used_mib, g->mem_total_mib);
    else
        snprintf(t, sizeof t, "%.0f%%", mem_pct);
    bar(y, x1, bw, two ? "MEM " : "M", mem_pct, t, level(mem_pct, 70, 90));
    if (isnan(g->power_w))
        snprintf(t, sizeof t, "N/A");
    else if (two && !isnan(g->power_limit_w))
        snprintf(t, sizeof t, "%.0f/%.0fW", g->power_w, g->power_limit_w);
    else
        snprintf(t, sizeof t, "%.0fW", g->power_w);
    bar(y2, x2, bw, two ? "POW " : "P", pw_pct, t, level(pw_pct, 80, 95));
    fmt_num(t, sizeof t, g->temp_c, "C");
    bar(y2, x3, bw, two ? "TEMP" : "T", g->temp_c, t, level(g->temp_c, 70, 85));
}

/* A history graph of one series in w x h cells under a title row: the newest reading at the
 * right edge, each column filled to its value against 100, in eighths of a cell with block
 * characters (whole cells of '|' in ASCII). */
static void graph(int y, int x, int w, int h, const char *title, const float *v, size_t n,
                  double warn, double crit)
{
    static const char *const eighths[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    put(y, x, w, A_BOLD, title);
    for (int c = 0; c < w; c++) {
        long k = (long)n - w + c;
        double val = k >= 0 ? v[k] : NAN;
        long fill = isnan(val) ? 0 : lround((val > 100 ? 100 : val < 0 ? 0 : val) * h * 8 / 100);
        if (!use_utf8)
            fill = (fill + 4) / 8 * 8;
        if (!isnan(val) && val > 0 && fill == 0)
            fill = use_utf8 ? 1 : 8; /* something is not nothing */
        attr_t a = isnan(val) ? 0 : level(val, warn, crit);
        for (int r = 0; r < h; r++) {
            long cell = fill - 8L * (h - 1 - r); /* eighths of this cell that are filled */
            cell = cell < 0 ? 0 : cell > 8 ? 8 : cell;
            if (cell > 0) {
                attron(a);
                if (use_utf8)
                    mvaddstr(y + 1 + r, x + c, eighths[cell]);
                else
                    mvaddch(y + 1 + r, x + c, '|');
                attroff(a);
            } else if (r == h - 1) {
                mvaddch(y + 1 + r, x + c, '_' | pair(C_DIM));
            }
        }
    }
}

static const char *sort_name(gm_top_sort s)
{
    return s == GM_TOP_SORT_CPU   ? "CPU"
           : s == GM_TOP_SORT_PID ? "PID"
           : s == GM_TOP_SORT_SM  ? "SM"
                                  : "GPU memory";
}

/* Writes text from row y on, broken at spaces into lines of at most w columns; returns the row
 * after the last. */
static int put_wrapped(int y, int w, attr_t a, const char *text)
{
    while (*text && y < LINES) {
        int len = (int)strlen(text);
        int cut = len;
        if (len > w) {
            cut = w;
            while (cut > 0 && text[cut] != ' ')
                cut--;
            if (cut == 0)
                cut = w; /* one word longer than the line: cut it */
        }
        attron(a);
        mvaddnstr(y++, 0, text, cut);
        attroff(a);
        text += cut;
        while (*text == ' ')
            text++;
    }
    return y;
}

static void too_small(void)
{
    erase();
    char line[160];
    snprintf(line, sizeof line, "gpumon top needs a terminal of at least %dx%d (this one is %dx%d)",
             GM_TOP_MIN_COLS, GM_TOP_MIN_ROWS, COLS, LINES);
    int y = LINES / 2 - 2;
    y = put_wrapped(y < 0 ? 0 : y, COLS, 0, line);
    put_wrapped(y, COLS, 0, "enlarge it, or press q to quit");
    refresh();
}

static void draw_help(void)
{
    static const char *const lines[] = {
        "gpumon top: keys",
        "",
        "  q, F10            quit",
        "  Up/Down, j/k      select a process; PgUp, PgDn, Home, End scroll",
        "  K, F9             send SIGTERM to the selected process (asks first;",
        "                    only your own processes unless root, and only",
        "                    processes of this host)",
        "  u                 show one user's processes (Enter alone: all)",
        "  /                 show processes whose user or command has a text",
        "  s                 sort by the next column: GPU memory, CPU, PID, SM",
        "  m, c, p, S        sort by GPU memory, CPU, PID, SM share",
        "  g, Tab            graph the next GPU's history",
        "  ?, h              this help (any key closes it)",
    };
    int nl = (int)(sizeof lines / sizeof *lines), tw = 0;
    for (int i = 0; i < nl; i++)
        if ((int)strlen(lines[i]) > tw)
            tw = (int)strlen(lines[i]);
    int h = nl + 2, w = tw + 4;
    if (w > COLS)
        w = COLS;
    if (h > LINES)
        h = LINES;
    int y0 = (LINES - h) / 2, x0 = (COLS - w) / 2;
    for (int r = 0; r < h; r++) {
        attron(A_REVERSE);
        mvhline(y0 + r, x0, ' ', w);
        attroff(A_REVERSE);
        if (r >= 1 && r - 1 < nl)
            put(y0 + r, x0 + 2, w - 4, A_REVERSE, lines[r - 1]);
    }
}

static bool proc_matches(const gm_top_proc *p, const gm_top_view_state *st)
{
    if (!st->filter[0])
        return true;
    if (st->filter_user)
        return strcmp(p->user, st->filter) == 0;
    return strcasestr(p->user, st->filter) || strcasestr(p->command, st->filter);
}

size_t gm_top_view_count(const gm_top_frame *f, const gm_top_view_state *st)
{
    size_t n = 0;
    for (size_t i = 0; i < f->nproc; i++)
        n += proc_matches(&f->procs[i], st);
    return n;
}

const gm_top_proc *gm_top_view_proc(const gm_top_frame *f, const gm_top_view_state *st, size_t i)
{
    for (size_t k = 0; k < f->nproc; k++)
        if (proc_matches(&f->procs[k], st) && i-- == 0)
            return &f->procs[k];
    return NULL;
}

/* A process's age as ps shows it: MM:SS, HH:MM:SS, then days. */
static void fmt_elapsed(char *buf, size_t len, double s)
{
    if (isnan(s)) {
        snprintf(buf, len, "-");
        return;
    }
    long t = (long)s;
    if (t >= 86400)
        snprintf(buf, len, "%ldd%02ldh", t / 86400, t % 86400 / 3600);
    else if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t % 3600 / 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

/* Rows: title, host, the GPUs, the graphs, the list's header and rows, the keys. The GPUs come
 * first; the list gets a row per process (at least 3) up to half of what is left; the graphs
 * take the rest, so a taller terminal draws taller graphs. */
enum { GRAPH_MIN_ROWS = 8 }; /* a graph: a title row and 7 rows */

/* The GPUs' rows from row 2; returns the row below them. */
static int layout_gpus(const gm_top_frame *f, int rows, gm_top_layout *l)
{
    int avail = rows - 3 - 1 - 3; /* what the GPUs and the graph may take, 3 list rows kept */
    int n = (int)f->ngpu;
    /* Two rows each while a graph still fits under them, or when one row each leaves no room
     * for a graph anyway. */
    bool two =
        2 * n + GRAPH_MIN_ROWS <= avail || (2 * n <= avail && n > 0 && n + GRAPH_MIN_ROWS > avail);
    int per = two ? 2 : 1;
    int gpu_rows = per * n;
    if (gpu_rows > avail)
        gpu_rows = avail;
    int shown = per * n > gpu_rows ? (gpu_rows - 1) / per : n; /* a row says how many more */
    l->gpu_y = 2;
    l->gpu_two_rows = two;
    l->gpu_name_w = two ? 22 : 14;
    l->gpus_shown = (unsigned)shown;
    int y = l->gpu_y + per * shown;
    if (shown < n)
        l->more_gpus_y = y++;
    return y;
}

/* The graphs' rows from row y, what the list leaves; returns the row below them. */
static int layout_graphs(const gm_top_frame *f, const gm_top_view_state *st, int cols, int rows,
                         int y, gm_top_layout *l)
{
    int rest = rows - 1 - y - 1; /* below the GPUs: the graphs and the list without its header */
    int want = (int)l->nvis + (f->proc_dropped ? 1 : 0);
    if (want > rest / 2)
        want = rest / 2;
    if (want < 3)
        want = 3;
    int gh = rest - want;
    l->graph_gpu = st->graph_gpu;
    if (gh < GRAPH_MIN_ROWS || f->ngpu == 0)
        return y;
    if (l->graph_gpu >= f->ngpu)
        l->graph_gpu = 0;
    l->graph_y = y;
    l->graph_rows = gh;
    l->graph_w = (cols - 3) / 2;
    /* Utilization and memory side by side, and power and temperature under them when there
     * is room for two rows of graphs. */
    l->graph_four = gh >= 2 * GRAPH_MIN_ROWS;
    l->graph_top_rows = l->graph_four ? gh / 2 : gh;
    return y + gh;
}

/* The list from row y: a window of it that follows the selection, its last row saying how many
 * more there are when they do not all fit, and which filter hides some. */
static void layout_list(const gm_top_frame *f, const gm_top_view_state *st, int rows, int y,
                        gm_top_layout *l)
{
    size_t nvis = l->nvis;
    l->header_y = y;
    l->list_y = y + 1;
    l->list_rows = rows - 1 - l->list_y;
    if (l->list_rows < 0)
        l->list_rows = 0;
    size_t list_rows = (size_t)l->list_rows;
    bool more = nvis > list_rows || (f->proc_dropped && nvis >= list_rows);
    bool status = (more || st->filter[0]) && list_rows > 0;
    l->proc_rows = status ? l->list_rows - 1 : l->list_rows;
    l->status_y = status ? l->list_y + l->list_rows - 1 : -1;
    size_t pr = (size_t)l->proc_rows;
    l->page = pr > 0 ? pr : 1;

    size_t sel = st->selected, first = st->first;
    if (sel >= nvis)
        sel = nvis ? nvis - 1 : 0;
    if (sel < first)
        first = sel;
    if (pr > 0 && sel >= first + pr)
        first = sel - pr + 1;
    if (first + pr > nvis) /* a shorter list: no empty rows below it */
        first = nvis > pr ? nvis - pr : 0;
    l->selected = sel;
    l->first = first;
    l->procs_drawn = nvis - first < pr ? nvis - first : pr;
    l->below = nvis - first - l->procs_drawn;
}

void gm_top_view_layout(const gm_top_frame *f, const gm_top_view_state *st, int cols, int rows,
                        gm_top_layout *out)
{
    *out = (gm_top_layout){.more_gpus_y = -1, .graph_y = -1, .status_y = -1};
    out->too_small = cols < GM_TOP_MIN_COLS || rows < GM_TOP_MIN_ROWS;
    if (out->too_small)
        return;
    out->nvis = gm_top_view_count(f, st);
    int y = layout_gpus(f, rows, out);
    y = layout_graphs(f, st, cols, rows, y, out);
    layout_list(f, st, rows, y, out);
    out->keys_y = rows - 1;
}

/* The title row: what is watched, the host, driver and CUDA, the interval and the time. */
static void draw_title(const gm_top_frame *f, const gm_top_view_state *st)
{
    char line[512];
    char when[16] = "--:--:--";
    if (f->time_ms) {
        time_t t = (time_t)(f->time_ms / 1000);
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(when, sizeof when, "%H:%M:%S", &tm);
    }
    attron(pair(C_TITLE) | A_BOLD | (use_color ? 0 : A_REVERSE));
    mvhline(0, 0, ' ', COLS);
    snprintf(line, sizeof line, " gpumon top  %s  %s  driver %s  CUDA %s  every %gs", st->where,
             f->hostname[0] ? f->hostname : "?", f->driver[0] ? f->driver : "N/A",
             f->cuda[0] ? f->cuda : "N/A", st->interval_s);
    mvaddnstr(0, 0, line, COLS - 9);
    mvaddnstr(0, COLS - 9, when, 8);
    attroff(pair(C_TITLE) | A_BOLD | A_REVERSE);
}

/* The host's row, or why the last reading failed. */
static void draw_host(const gm_top_frame *f)
{
    if (f->error[0]) {
        put(1, 0, COLS, pair(C_RED) | A_BOLD, f->error);
        return;
    }
    char line[512];
    size_t n = (size_t)snprintf(line, sizeof line, "host");
    if (!isnan(f->host_cpu_pct))
        n += (size_t)snprintf(line + n, sizeof line - n, "  cpu %.1f%%", f->host_cpu_pct);
    else if (!isnan(f->host_cpus)) /* the first reading has no CPU rate yet */
        n += (size_t)snprintf(line + n, sizeof line - n, "  cpu --");
    if (!isnan(f->host_cpus))
        n += (size_t)snprintf(line + n, sizeof line - n, " of %.0f", f->host_cpus);
    if (!isnan(f->host_mem_used_gib))
        n += (size_t)snprintf(line + n, sizeof line - n, "  mem %.1f / %.1f GiB",
                              f->host_mem_used_gib, f->host_mem_total_gib);
    snprintf(line + n, sizeof line - n, "  %u GPU%s  %zu process%s  provider %s", f->ngpu,
             f->ngpu == 1 ? "" : "s", f->nproc + f->proc_dropped,
             f->nproc + f->proc_dropped == 1 ? "" : "es", f->provider);
    put(1, 0, COLS, 0, line);
}

/* One GPU from row y: its index and name (underlined when graphed), then its bars. */
static void draw_gpu(const gm_top_gpu *g, int y, const gm_top_layout *l, bool graphed)
{
    char line[512];
    int name_w = l->gpu_name_w;
    char name[GM_NAME_LEN];
    gm_utf8_shorten_name(g->name, (size_t)name_w, name, sizeof name);
    snprintf(line, sizeof line, "%-3u %-*s", g->index, name_w, name);
    put(y, 0, 4 + name_w, graphed ? A_BOLD | A_UNDERLINE : A_BOLD, line);
    int x = 4 + name_w + 1;
    if (g->lost) {
        put(y, x, COLS - x, pair(C_RED) | A_BOLD, "GPU is lost (fell off the bus)");
        return;
    }
    if (l->gpu_two_rows) {
        char fan[16];
        fmt_num(fan, sizeof fan, g->fan_pct, "%");
        snprintf(line, sizeof line, "    %-3s fan %s", g->pstate[0] ? g->pstate : "", fan);
        put(y + 1, 0, 4 + name_w, 0, line);
    }
    gpu_bars(g, y, x, COLS - x, l->gpu_two_rows);
}

static void draw_gpus(const gm_top_frame *f, const gm_top_view_state *st, const gm_top_layout *l)
{
    int per = l->gpu_two_rows ? 2 : 1;
    for (unsigned i = 0; i < l->gpus_shown; i++)
        draw_gpu(&f->gpus[i], l->gpu_y + per * (int)i, l, i == st->graph_gpu);
    if (l->more_gpus_y >= 0) {
        char line[128];
        unsigned more = f->ngpu - l->gpus_shown;
        snprintf(line, sizeof line, "... %u more GPU%s (a taller terminal shows them)", more,
                 more == 1 ? "" : "s");
        put(l->more_gpus_y, 0, COLS, pair(C_DIM), line);
    }
}

/* The graphed GPU's history: utilization and memory, then power and temperature. */
static void draw_graphs(const gm_top_frame *f, const gm_top_view_state *st, const gm_top_layout *l)
{
    if (!l->graph_rows)
        return;
    const gm_top_gpu *g = &f->gpus[l->graph_gpu];
    int y = l->graph_y, w = l->graph_w, h1 = l->graph_top_rows;
    char title[128];
    snprintf(title, sizeof title, "GPU %u utilization %% (%.0f s)", g->index, st->interval_s * w);
    graph(y, 1, w, h1 - 1, title, g->hist[GM_TOP_H_UTIL], g->nhist, 70, 90);
    snprintf(title, sizeof title, "GPU %u memory used %%", g->index);
    graph(y, w + 2, w, h1 - 1, title, g->hist[GM_TOP_H_MEM], g->nhist, 70, 90);
    if (!l->graph_four)
        return;
    int h2 = l->graph_rows - h1 - 1;
    snprintf(title, sizeof title, "GPU %u power %% of its limit", g->index);
    graph(y + h1, 1, w, h2, title, g->hist[GM_TOP_H_POWER], g->nhist, 80, 95);
    snprintf(title, sizeof title, "GPU %u temperature C", g->index);
    graph(y + h1, w + 2, w, h2, title, g->hist[GM_TOP_H_TEMP], g->nhist, 70, 85);
}

/* The list's header: '*' marks the column the list is sorted by. */
static void draw_list_header(const gm_top_view_state *st, int y)
{
    char line[256];
    attron(A_BOLD | A_REVERSE);
    mvhline(y, 0, ' ', COLS);
    snprintf(line, sizeof line, "%7s %-10s %3s %9s %4s %6s %8s %8s  %s",
             st->sort == GM_TOP_SORT_PID ? "PID*" : "PID", "USER", "GPU",
             st->sort == GM_TOP_SORT_GPU_MEM ? "GPU-MEM*" : "GPU-MEM",
             st->sort == GM_TOP_SORT_SM ? "SM%*" : "SM%",
             st->sort == GM_TOP_SORT_CPU ? "CPU%*" : "CPU%", "HOST-MEM", "ELAPSED", "COMMAND");
    mvaddnstr(y, 0, line, COLS);
    attroff(A_BOLD | A_REVERSE);
}

/* A process's row, absent readings as N/A (GPU memory) or '-'. */
static void fmt_proc(char *line, size_t len, const gm_top_proc *p)
{
    char gm[16], cpu[16], rss[16], age[16], sm[8] = "-";
    if (isnan(p->gpu_mem_mib))
        snprintf(gm, sizeof gm, "N/A");
    else
        snprintf(gm, sizeof gm, "%.0fMiB", p->gpu_mem_mib);
    if (!isnan(p->sm_pct))
        snprintf(sm, sizeof sm, "%.0f", p->sm_pct);
    if (isnan(p->cpu_pct))
        snprintf(cpu, sizeof cpu, "-");
    else
        snprintf(cpu, sizeof cpu, "%.1f", p->cpu_pct);
    if (isnan(p->rss_mib))
        snprintf(rss, sizeof rss, "-");
    else
        snprintf(rss, sizeof rss, "%.0fMiB", p->rss_mib);
    fmt_elapsed(age, sizeof age, p->elapsed_s);
    snprintf(line, len, "%7u %-10.10s %3u %9s %4s %6s %8s %8s  %s", p->pid,
             p->user[0] ? p->user : "?", p->gpu, gm, sm, cpu, rss, age,
             p->command[0] ? p->command : "?");
}

/* The processes' rows, the selected one reversed, or why there are none. */
static void draw_procs(const gm_top_frame *f, const gm_top_view_state *st, const gm_top_layout *l)
{
    if (l->nvis == 0 && l->proc_rows > 0)
        put(l->list_y, 2, COLS - 2, pair(C_DIM),
            f->nproc ? "no process matches the filter (u or / changes it, Enter alone clears it)"
                     : "no GPU processes");
    for (size_t r = 0; r < l->procs_drawn; r++) {
        char line[512];
        int y = l->list_y + (int)r;
        fmt_proc(line, sizeof line, gm_top_view_proc(f, st, l->first + r));
        bool sel = l->first + r == l->selected;
        if (sel) {
            attron(A_REVERSE);
            mvhline(y, 0, ' ', COLS);
        }
        mvaddnstr(y, 0, line, COLS);
        if (sel)
            attroff(A_REVERSE);
    }
}

/* The list's last row: the filter, how many more (or above), and how to scroll. */
static void draw_list_status(const gm_top_frame *f, const gm_top_view_state *st,
                             const gm_top_layout *l)
{
    if (l->status_y < 0)
        return;
    char line[512] = "";
    size_t n = 0;
    if (st->filter[0])
        n = (size_t)snprintf(line, sizeof line, "  %s %s: %zu of %zu",
                             st->filter_user ? "user" : "filter", st->filter, l->nvis, f->nproc);
    if (l->below)
        n += (size_t)snprintf(line + n, sizeof line - n, "  +%zu more", l->below);
    else if (l->first)
        n += (size_t)snprintf(line + n, sizeof line - n, "  %zu above", l->first);
    if (f->proc_dropped)
        n += (size_t)snprintf(line + n, sizeof line - n, " (and %zu not read)", f->proc_dropped);
    if (l->nvis > (size_t)l->proc_rows)
        snprintf(line + n, sizeof line - n, "  (Up/Down, PgUp/PgDn scroll)");
    put(l->status_y, 0, COLS, pair(C_DIM), line);
}

/* The bottom row: a filter being typed, a question, the last action's result, or the keys. */
static void draw_keys(const gm_top_view_state *st, int y)
{
    char line[512];
    attr_t a = 0;
    if (st->input) {
        snprintf(line, sizeof line, "%s: %s_   (Enter apply, Esc cancel)",
                 st->input_kind == 'u' ? "show the processes of user" : "show processes matching",
                 st->input_buf);
        a = A_BOLD;
    } else if (st->confirm) {
        snprintf(line, sizeof line, "%s [y/N]", st->prompt);
        a = A_BOLD | (use_color ? pair(C_RED) : A_REVERSE);
    } else if (st->message[0]) {
        snprintf(line, sizeof line, "%s", st->message);
        a = A_BOLD | (st->message_error ? pair(C_RED) : pair(C_GREEN));
    } else {
        snprintf(line, sizeof line,
                 "q quit  j/k select  K kill  u user  / filter  s sort (%s)  ? help",
                 sort_name(st->sort));
        a = pair(C_CYAN);
    }
    put(y, 0, COLS, a, line);
}

void gm_top_view_draw(const gm_top_frame *f, gm_top_view_state *st)
{
    gm_top_layout l;
    gm_top_view_layout(f, st, COLS, LINES, &l);
    if (l.too_small) {
        too_small();
        return;
    }
    erase();
    draw_title(f, st);
    draw_host(f);
    draw_gpus(f, st, &l);
    draw_graphs(f, st, &l);
    draw_list_header(st, l.header_y);
    draw_procs(f, st, &l);
    draw_list_status(f, st, &l);
    draw_keys(st, l.keys_y);
    if (st->help)
        draw_help();
    refresh();
    /* The layout keeps the selection in the list and the graph on a GPU of the frame. */
    st->graph_gpu = l.graph_gpu;
    st->selected = l.selected;
    st->first = l.first;
    st->list_rows = l.page;
}
