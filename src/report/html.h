// html.h: the report as JSON, and as one self-contained HTML page that draws it.
//
// The page embeds the JSON report (report_print_json: the very object --format json prints)
// under "report", beside what the charts need under "page": every trial's parameters,
// metrics, status, reason, seed, host, times, learning curve and invariant trace
// (Correlation and RankDeviation at each evaluation, trial_eval_point), the parameters'
// scales (log for log distributions), ASHA's rungs and the sweep's YAML. Its script and
// style (src/report/js/) are compiled in, so the page loads nothing at view time.
#ifndef ATTN_HTML_H
#define ATTN_HTML_H

#include <stdio.h>

#include "report/report.h"
#include "space/space.h"
#include "store/summary.h"

// The JSON report of file `path`, {file, sweep, metric, goal, trials, being_written, the
// tables of r (table_print_json_members), pareto_hypervolume when r has one}, printed
// through put as cJSON_PrintUnformatted prints it, one table row at a time.
void report_print_json(FILE *f, const SweepSummary *s, const char *path, const ReportOptions *o, const Report *r,
                       JsonPut put);

// The page, written to f one trial at a time (no tree of every trial's values is built),
// each trial's group read again from path for it (summary_groups_read); dies with one line
// when that read fails. s as summary_read reads it; spec is the sweep's space when its
// YAML loads here (the parameters' scales, ASHA's rungs), else NULL.
void report_html(FILE *f, const SweepSummary *s, const char *path, const ReportOptions *o, const Report *r,
                 const SweepSpec *spec);

#endif
