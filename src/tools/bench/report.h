/* bench/report.h — what llmchat-bench prints: a table (a header, then a row per shape
 * with its notes on the lines below), or one JSON object per shape with --json; with
 * --sweep a row (or an object) per thread count. Part of the benchmark. */
#ifndef LLMCHAT_BENCH_REPORT_H
#define LLMCHAT_BENCH_REPORT_H

#include <stdbool.h>

#include "bench_options.h"
#include "measure.h"
#include "shapes.h"
#include "side_by_side.h"
#include "tui_timing.h"

/* One shape's figures as one JSON line: r (an "error" when it failed), the TUI column
 * tr, the side-by-side sr when against, the bandwidth measured at the start. */
void report_json(const shape *s, const shape_result *r, const tui_result *tr, const side_result *sr,
                 bool against, double bw_start);

/* The table's heading: the kernels and threads of the first shape r, the bandwidth at
 * the start, the column names. */
void report_table_header(const shape_result *r, double bw_start);

/* One shape's row of the table, and the lines under it: the roofline's range, --long,
 * --scaling, the TUI, llama.cpp, a warning when other processes took the CPUs. */
void report_row(const shape *s, const shape_result *r, const tui_result *tr, const side_result *sr,
                bool against);

/* --sweep: the heading of a shape's table (nothing with --json), and one thread
 * count's row (JSON: an object); theirs: llama-bench ran beside. */
void report_sweep_header(const bench_options *o, const shape *s, const char *path,
                         const char *llama_bench, const char *anchor_why);
void report_sweep_row(const bench_options *o, const shape *s, int threads, side_result *sr,
                      bool theirs);

#endif
