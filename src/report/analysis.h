// analysis.h: the report's sections' shared picture of a sweep (private to src/report/):
// its parameters and variants, its finished trials, its configurations (every parameter
// but the seed) with their repeats, and the columns and cells every table of trials
// shares. report.c builds it once (analyse) and hands it to each section: the leaderboard,
// the variants and the verdict (report.c), the Pareto front (pareto.c), the ablations and
// the dose-response (ablation.c), failures and pruning (failures.c).
#ifndef ATTN_REPORT_ANALYSIS_H
#define ATTN_REPORT_ANALYSIS_H

#include "report/report.h"
#include "report/stats.h"
#include "report/table.h"
#include "trial/metrics.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// A configuration: every parameter but the seed. Its trials with different seeds are its
// repeats; trials with the same seed are the same run (same seed, same numbers: a random
// sweep may draw a configuration twice) and count once in the statistics.
typedef struct {
    char *key;                 // "name=value\n" for every parameter that varies and every λ, not the seed
    const SummaryRow *first;   // its trial with the lowest id
    int seeds;                 // distinct seeds among its trials of any status
    int n;                     // its finished trials, one per seed (the lowest id), in ok[]
    const SummaryRow **ok;
} Config;

typedef struct {
    const SweepSummary *s;
    const ReportOptions *o;
    const Metric *extra[2];    // the report's metric and its test twin, where not shown already
    int n_extra;
    // The parameters: the trial parameters, or for a program's sweep its parameters (from
    // the first trial's configuration, kept in first for their names) and the seed. The
    // variant is the attention parameter; a program's sweep has one when its program has a
    // text parameter so named.
    TrialConfig *first;
    int n_params;
    const ParamSpec **params;
    ParamSpec *program;        // the specs made for a program's parameters
    char (*columns)[PROGRAM_NAME + 8];  //   and their columns
    int n_variants;
    const char **variants;     // the variants' names, in table order
    int *swept;                // per parameter: differs across trials (the variant: always shown apart)
    int n_ok;
    const SummaryRow **ok;     // finished trials, by id
    int n_configs;
    Config *configs;           // sorted by key
    int *order;                // configs by attention variant, then first trial
    int has_repeats;           // some configuration has more than one seed
    int duplicates;            // finished trials left out of the statistics: a seed seen before
} Analysis;

static inline int is_ok(const SummaryRow *t) { return t->status == TRIAL_OK; }
// A real parameter (a λ) of a configuration, by name.
double *lambda_at(TrialConfig *c, const char *name);
double lambda_of(const TrialConfig *c, const char *name);

void analyse(const SweepSummary *s, const ReportOptions *o, Analysis *a);
void analysis_free(Analysis *a);
// The configuration of c's parameters (all but the seed), NULL if no trial has it.
const Config *find_config(const Analysis *a, const TrialConfig *c);
// The variant of c: its attention variant, or its program's parameter "attention"; NULL
// when a program has none.
const char *variant_text(const TrialConfig *c);
// Index of c's variant in a->variants (-1: none).
int variant_of(const Analysis *a, const TrialConfig *c);

// The columns of the parameters shown (swept; the variant first, in its own column; the
// seed when with_seed; not skip, or every parameter whose name begins with it when it
// ends in '*'), and a row's cells of them (empty where a parameter does not apply).
void param_columns(Table *t, const Analysis *a, int with_seed, const char *skip);
void param_cells(Table *t, const Analysis *a, const TrialConfig *c, int with_seed, const char *skip);
// A metric's column: its name, its label with the unit.
void metric_column(Table *t, const Metric *m, ColumnKind kind);
// Every table of trials has the metrics marked shown (trial/metrics.h), then the report's
// metric and its test twin where not among them: their columns, a trial's cells of them,
// and n with mean ± sd of each over trials[0..n).
void shown_columns(Table *t, const Analysis *a, ColumnKind kind);
void shown_cells(Table *t, const Analysis *a, const SummaryRow *x);
void stats_cells(Table *t, const Analysis *a, const SummaryRow *const *trials, int n);
SampleStats stats_of(const SummaryRow *const *t, int n, const Metric *m);
// The notes of the tables of statistics: the sweep's metric, and the trials that repeated
// a configuration with its seed.
void metric_note(Table *t, const Analysis *a);
void duplicates_note(Table *t, const Analysis *a);

// The sections besides report.c's: the Pareto front; each regulariser's ablation table
// (out[0..3)) and the dose-response (out[3]); failures by status, by reason, and ASHA's
// savings.
Table *pareto(const Analysis *a, ParetoVolume *volume);  // the volume: a sweep with objectives
enum { ABLATION_TABLES = 4 };
void ablation_tables(const Analysis *a, Table **out);
Table *by_status(const Analysis *a);
Table *by_reason(const Analysis *a);
Table *asha(const Analysis *a);

#endif
