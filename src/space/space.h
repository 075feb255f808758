// space.h: a sweep's search space, read from YAML with libyaml.
//
// The vocabulary is Weights & Biases' sweep configuration, so users feel at home:
//
//   name: fashion_variants           # optional; default: the file's stem
//   method: random                   # grid | random | sobol | evolution
//   metric: {name: reward, goal: maximize}
//   task: fashion_mnist              # extension: the task (or a parameter like any other)
//   seed: 7                          # extension: sampler, initialisation and data seeds
//   trials: 24                       # extension: how many trials (not for grid)
//   repeats: 2                       # extension: every configuration with this many seeds
//   budget: {steps: 600, eval_every: 100, time_limit: 600, checkpoint_every: 100, max_deaths: 2,
//            max_failures: 5}
//   resources: {mem: 4G}             # extension: the memory of one worker group
//   scheduler: {name: asha, min_steps: 100, eta: 3}   # max_steps: the budget's steps
//   evolution: {population: 8, sample_size: 3}
//   reward: {beta: 0.1, gamma: 0.1, modes: [heads], ideal_ranks: {heads: 4}, energy: 0.99}
//   parameters:
//     attention: {values: [mha, tucker, linear, grassmann]}
//     lr: {distribution: log_uniform_values, min: 0.0005, max: 0.005}
//     lambda_orth: {values: [0, 0.01, 0.1], probabilities: [0.5, 0.25, 0.25]}
//     d_model: {value: 64}
//     core_rank: {values: [1, 2], when: {attention: tucker}}
//
// Every parameter name is one of the trial parameters (params/config.h), with the
// same types and ranges as on the command line, unless the sweep runs a program.
//
// A sweep of the researcher's own program (W&B's keys; the protocol: trial/external.h):
//   program: train.py                # ${program}; relative to the working directory
//   command: [${env}, ${interpreter}, ${program}, ${args}]   # W&B's default
//   metric: {name: val_loss, goal: minimize}   # any name the program reports
//   early_terminate: {type: hyperband, min_iter: 3, eta: 3}   # ASHA: min_steps 3, eta 3
//   run_cap: 20                      # trials
//   resources: {gpus: 1, cpus: 4}    # per worker group
//   budget: {time_limit: 600, grace: 10, max_output_mb: 1024, steps: 1000}
//   reward: {accuracy: val_acc, beta: 0.1, ...}   # the key read as val_accuracy
//   parameters:
//     learning_rate: {min: 0.0001, max: 0.1}       # a real (uniform)
//     batch_size: {values: [16, 32, 64]}           # integers
//     optimizer: {values: ["adam", "sgd"]}         # texts
// Its parameters have any names (letters, digits, _ - ., at most 31 characters, at
// most 32 of them): program parameters (params/config.h), integers when every value or
// both bounds are integers (int_uniform; q_uniform with an integer q), reals for other
// numbers and ranges, texts otherwise (a quoted scalar is a text); values, ranges,
// conditions, repeats, every method and ASHA work on them as on the built-in ones. The
// trial parameters of the built-in engine (task, budget steps or epochs as the trial's
// length, eval_every) do not exist there, and its metric may be any name the program
// reports (test_* excepted); its goal is then minimize unless given (W&B's default).
// W&B's project, entity and description are accepted and ignored (validate lists them),
// metric target and early_terminate strict likewise; method bayes runs as tpe.
//
// Keys, [defaults]; method and parameters are required; a sampled method without trials
// (W&B's without run_cap) runs until stopped (until_stopped):
//   name [file stem]         1-64 characters; it names results/NAME.h5 with each but
//                            letters, digits, _ - . made '_' (W&B's names have spaces)
//   metric                   name: reward | val_accuracy | val_loss | val_bits_per_byte
//                            [reward] (trial/metrics.h: decisions read validation only;
//                            accuracy, loss, bits_per_byte and every test_* name are
//                            refused, val_bits_per_byte unless every trial is charlm);
//                            goal: maximize | minimize [minimize for the losses]
//   seed [1]                 0..2147482; trial seeds are seed*1000 + repeat
//   trials                   1..10^6, a multiple of repeats; grid: its size x repeats; with
//                            grid axes the samples of the other parameters (x repeats), each
//                            crossed with every combination of the axes
//   repeats [1]              1..1000
//   task [fashion_mnist]     a trial parameter set here or under parameters, not both
//   budget                   steps or epochs (not both), eval_every: trial parameters;
//                            time_limit: seconds per trial [0: none]; checkpoint_every:
//                            steps between a running trial's checkpoints [each evaluation;
//                            0: only when stopped by a signal]; max_deaths: a trial whose
//                            worker died this many times while running it is failed [2];
//                            max_failures: the sweep stops once the first this many trials
//                            a run records all failed the same way (trial_reason_key) [5;
//                            0: never]
//   resources                mem: the memory of one worker group (megabytes, or with K, M,
//                            G or T: 4G): a trial estimated to need more fails before it starts
//   scheduler                name: asha; min_steps (required) < max_steps; eta [3] >= 2;
//                            max_steps [the budget's steps; if both given, equal];
//                            per: configuration | trial [configuration] (asha.h)
//   evolution                population [8] >= 2, sample_size [3, at most population];
//                            read with any method, used by evolution
//   reward                   beta [0.1], gamma [0.1] >= 0; modes [heads] from heads,
//                            head_dim, model_dim, roles; ideal_ranks {mode: rank >= 1}
//                            for modes listed [r_max]; energy in (0, 1] [0.99]
//   parameters               NAME: one of
//     {value: x}                       fixed (in base; with `when`, a conditional value)
//     {values: [...], probabilities}   listed (distribution categorical or none);
//                                      probabilities: one per value, summing to 1 (unused by grid)
//     {min, max, distribution, q}      uniform | int_uniform | q_uniform (multiples of q [1]
//                                      in [min, max], drawn as round(uniform / q)·q) |
//                                      log_uniform_values (min > 0) | log_uniform, q_log_uniform,
//                                      inv_log_uniform (min, max: exponents) | q_log_uniform_values,
//                                      inv_log_uniform_values; default int_uniform for integers,
//                                      uniform for reals
//     {distribution, mu, sigma, a, b, q}   normal, q_normal, log_normal, q_log_normal (mu [0],
//                                      sigma [1]), beta, q_beta (a [1], b [1]), truncated to
//                                      the parameter's range (space/distribution.c)
//     when: {NAME: value or [values], ...}   applies only when all hold; NAME is fixed or
//                                      listed and defined earlier; otherwise the base value
//     grid: true                       (values or an integer range, a sampled method) a grid
//                                      axis: every sample of the other parameters is crossed
//                                      with every combination of the axes (Ray Tune's
//                                      grid_search with num_samples); an axis's when refers
//                                      only to axes, and with evolution, tpe or motpe no
//                                      sampled parameter's when refers to an axis
// Every combination of the swept values must pass config_check (heads divide d_model,
// core_rank <= heads, ...) and the task's data files must exist. Samplers and seeds:
// sampler.c; the scheduler's rungs and decisions: asha.h.
#ifndef ATTN_SPACE_H
#define ATTN_SPACE_H

#include <stddef.h>

#include "params/config.h"
#include "trial/external.h"
#include "trial/metrics.h"
#include "trial/reward.h"
#include "trial/trial.h"

typedef enum { METHOD_GRID, METHOD_RANDOM, METHOD_SOBOL, METHOD_EVOLUTION, METHOD_TPE, METHOD_MOTPE } SweepMethod;

// The TPE sampler's settings (space/tpe.h), the YAML section `tpe:`: Optuna's defaults but
// for multivariate (on: better on every benchmark of scripts/bench/sampler_vs_optuna.sh).
typedef struct {
    int n_startup;        // random configurations before the model [10]
    double gamma;         // the good group: min(⌈gamma·n⌉, 25) of n observations [0.1]
    int candidates;       // draws from l(x) scored by l/g [24]
    int multivariate;     // joint kernels over the parameters without conditions [true]
    int constant_liar;    // configurations handed out and not reported count as the worst [true]
    double prior_weight;  // the prior kernel's weight [1]
    int history;          // the bad group: its most recent `history` observations, 0 all [500]
} TpeOptions;

enum { SPACE_MAX_OBJECTIVES = METRIC_MAX_OBJECTIVES };

// W&B's distributions with W&B's meaning (space/distribution.c). Finite supports (the
// gene an index): value, values, categorical, int_uniform, q_uniform. The others are
// continuous (the gene the value), drawn by the inverse of their distribution function.
typedef enum {
    DIST_VALUE,               // value: x (fixed; `distribution: constant` says the same)
    DIST_VALUES,              // values: [a, b, c] (with optional probabilities for random)
    DIST_UNIFORM,             // min/max reals
    DIST_INT_UNIFORM,         // min/max integers, inclusive
    DIST_Q_UNIFORM,           // round(uniform(min, max) / q) · q
    DIST_LOG_UNIFORM_VALUES,  // exp(uniform(log min, log max))
    DIST_CATEGORICAL,         // values with the distribution named explicitly
    DIST_CONSTANT,            // only as a YAML spelling: read as DIST_VALUE
    DIST_LOG_UNIFORM,         // exp(uniform(min, max)): min and max are natural-log exponents
    DIST_Q_LOG_UNIFORM,       // round(log_uniform / q) · q
    DIST_Q_LOG_UNIFORM_VALUES,  // round(log_uniform_values / q) · q
    DIST_INV_LOG_UNIFORM,     // x with log(1/x) uniform on [min, max]: exp(−uniform(min, max))
    DIST_INV_LOG_UNIFORM_VALUES,  // x with log(1/x) uniform on [log(1/max), log(1/min)]
    DIST_NORMAL,              // normal(mu [0], sigma [1])
    DIST_Q_NORMAL,            // round(normal / q) · q
    DIST_LOG_NORMAL,          // exp(normal(mu, sigma))
    DIST_Q_LOG_NORMAL,        // round(log_normal / q) · q
    DIST_BETA,                // beta(a [1], b [1]) on [0, 1]
    DIST_Q_BETA,              // round(beta / q) · q
} Distribution;

typedef struct {
    const ParamSpec *param;  // the trial parameter (config_params)
    int n_values;
    char **values;           // as text, each already validated by config_set
} Condition;

typedef struct {
    const ParamSpec *param;
    Distribution dist;
    int n_values;
    char **values;           // DIST_VALUE(S)/CATEGORICAL: the candidates as text
    double *probabilities;   // NULL or n_values weights summing to 1
    double min, max, q;      // continuous and integer distributions, as the YAML gives them
    double mu, sigma;        // normal and log_normal (and their q_): of x, or of log x
    double a, b;             // beta, q_beta
    // continuous: the law's distribution function at the parameter's range, F(range)
    // within [u_lo, u_hi] (an unbounded law is drawn truncated to the range and to its
    // central 1 − 2·10⁻⁹), and the smallest and largest value a draw gives
    double u_lo, u_hi, lo, hi;
    int grid;                // `grid: true`: a grid axis, crossed with every sample of the rest
    int n_when;
    Condition *when;         // the parameter applies only when every condition holds
    int line, col;           // where the YAML defined it (1-based), for messages
} SpaceParam;

typedef struct {
    char *path;              // the YAML file
    char *name;              // sweep name
    char *text;              // the whole YAML text (stored in the results file)
    SweepMethod method;
    char metric[32];         // reward | val_accuracy | val_loss | val_bits_per_byte
    int maximize;            // goal
    int trials;              // trials to run (grid: the grid's size × repeats; a sampled sweep
                             // with grid axes: the YAML's trials × grid_points)
    int grid_points;         // combinations of the grid axes (1 without; method grid: 1)
    int until_stopped;       // a sampled sweep without trials (W&B's without run_cap): it runs
                             // until stopped, trials being the most it can number
    int repeats;
    int seed;
    TrialConfig base;        // defaults, then the task, budget and every fixed value
    int n_params;
    SpaceParam *params;      // the swept parameters, in file order
    double time_limit;       // seconds per trial; 0 = none
    int checkpoint_every;    // steps between checkpoints of a running trial; -1: at each evaluation, 0: none
    int max_deaths;          // a trial whose worker died this many times while running it is failed
    int max_failures;        // the first trials of a run that, all failed the same way, stop it (0: never)
    double mem_bytes;        // resources.mem: the memory of one worker group; 0 = not limited
    int asha, min_steps, eta, max_steps;  // scheduler (asha = 0: every trial runs its budget)
    int asha_per_trial;                   // per: trial (each repeat decided alone) [0: per configuration]
    int population, sample_size;          // evolution
    const char *method_alias;             // "bayes" when the YAML said W&B's name for tpe, else NULL
    TpeOptions tpe;                       // tpe, motpe
    int n_objectives;                     // motpe: 2..SPACE_MAX_OBJECTIVES; otherwise 1 (the metric)
    char objective[SPACE_MAX_OBJECTIVES][32];
    int objective_maximize[SPACE_MAX_OBJECTIVES];
    RewardSpec reward;
    double energy;           // numerical-rank threshold for scoring
    // A program's sweep (program.n_command > 0): its command and protocol settings, its
    // parameters' specs (MAX_PROGRAM_PARAMS, names and columns owned here), and the
    // metric when it is a name of the program's own (metric_program).
    ProgramSpec program;
    ParamSpec *program_params;
    int n_program_params;
    Metric program_metric;
    int n_notes;             // what validate says about W&B keys: ignored ones, mappings
    char **notes;
} SweepSpec;

// The sweep's metric: one of the metric table's, or the program's own.
const Metric *space_metric(const SweepSpec *s);
// motpe's objective k: one of the metric table's, or the program's own (at most one).
const Metric *space_objective_metric(const SweepSpec *s, int k);
// Whether the sweep runs a program (trial/external.h) rather than the built-in engine.
int space_is_program(const SweepSpec *s);

// What guards libyaml wherever attnsweep reads YAML (its time grows with the nesting
// squared: 10^5 levels of [ take minutes): at most 1 MiB, flow lists and mappings nested
// at most 64 deep (outside comments). 0, or -1 with where (1-based) and why.
int space_yaml_guard(const char *text, size_t len, int *line, int *col, char *why, size_t whylen);

// Load and validate. On error returns -1 with one line in err:
// "FILE:LINE:COL: what is wrong (what is allowed)", and s is left empty.
int space_load(SweepSpec *s, const char *path, char *err, size_t errlen);
// The same from text in memory (path only names it in messages).
int space_parse(SweepSpec *s, const char *path, const char *text, size_t len, char *err, size_t errlen);
void space_free(SweepSpec *s);

// Whether every `when` condition of p holds in c (p applies to that configuration).
int space_condition_holds(const SpaceParam *p, const TrialConfig *c);

// The YAML spellings ("grid", "log_uniform_values"), for messages and reports.
const char *space_method_name(SweepMethod m);
const char *space_distribution_name(Distribution d);

// The number of distinct configurations (grid product honouring conditions), or -1
// when a continuous distribution makes it infinite (LONG_MAX: more than that).
long space_size(const SweepSpec *s);

// ---- samplers (sampler.c): reproducible from the sweep seed.
typedef struct Sampler Sampler;

Sampler *sampler_create(const SweepSpec *s);
void sampler_free(Sampler *sm);
// Trial `id` (0-based, < s->trials): its configuration (base + sampled values, seed set
// from the sweep seed and the repeat; with grid axes, sample id / repeats / grid_points at
// the axes' combination id / repeats % grid_points). grid, random and sobol give trial id
// the same configuration every time (so a resumed sweep regenerates the same trials);
// evolution samples from the population of results reported so far. Returns 0, or -1 when
// evolution needs more results before it can sample (the caller asks again later).
int sampler_config(Sampler *sm, int id, TrialConfig *out);
// A finished trial (its id, configuration, status and metrics), for the samplers that
// learn from results (evolution, tpe, motpe): the sweep's metric, or motpe's objectives,
// with the YAML's goals; a failed trial is the worst (evolution) or ignored (TPE), a
// pruned one ranks after the completed ones (TPE). Other samplers ignore it.
void sampler_report(Sampler *sm, const TrialResult *r);
// sampler_report in two steps, for a resume from a snapshot (docs/run.md, Snapshots): what it
// takes from a trial as sampler_report_size numbers (its genes, from its configuration,
// then its objective values; none for the samplers that do not learn), and the report of
// trial id with them.
int sampler_report_size(const Sampler *sm);
void sampler_report_take(const Sampler *sm, const TrialResult *r, double *out);
void sampler_report_numbers(Sampler *sm, int id, TrialStatus status, const double *in);
// A failed trial from before a resume that runs again (run --retry-failed) instead of
// being reported: sampler_config gives it the configuration it failed with, and its
// result is reported when it comes.
void sampler_retry(Sampler *sm, const TrialResult *r);
// Whether the method's configurations depend on the results reported (so a resumed sweep
// cannot check them against what the YAML gives): evolution, tpe, motpe.
int space_adaptive(const SweepSpec *s);

#endif
