// config.h: one trial's configuration and the one table that describes every parameter.
//
// The table drives the command line (--d-model), the YAML search space (d_model),
// the --json output and the HDF5 attributes, so a parameter has one name, one
// default and one allowed range everywhere. TrialConfig is plain data (no pointers)
// so the sweep coordinator can send it to a worker as bytes.
#ifndef ATTN_CONFIG_H
#define ATTN_CONFIG_H

#include <stddef.h>

typedef enum { TASK_FASHION_MNIST, TASK_CHARLM, TASK_RECALL, TASK_COUNT } TaskKind;
typedef enum { ATTN_MHA, ATTN_TUCKER, ATTN_LINEAR, ATTN_GRASSMANN, ATTN_COUNT } AttnKind;
// grassmann's block: the paper's (h ↦ LN(u + FFN(u)), u = LN(mix(h)): post-LN, the
// mixer's gate the only path around it) or pre-LN (h + mix(LN(h)), then h + FFN(LN(h))).
typedef enum { GRASSMANN_PAPER, GRASSMANN_PRELN, GRASSMANN_BLOCK_COUNT } GrassmannBlock;

// MAX_OFFSETS per layer; a schedule has one group per layer (at most MAX_OFFSET_GROUPS,
// the most layers) or one for all, and its text fits CONFIG_TEXT, so at most
// MAX_OFFSETS_ALL offsets in all ("1,"... takes two characters an offset).
enum { MAX_OFFSETS = 16, MAX_OFFSET_GROUPS = 64, CONFIG_TEXT = 256, MAX_OFFSETS_ALL = CONFIG_TEXT / 2 };

typedef struct {
    int task;            // TaskKind
    int attention;       // AttnKind
    int d_model, heads, layers, mlp_ratio;
    int core_rank;       // tucker: R, rank of the head-interaction core (1 <= R <= heads)
    int grassmann_rank;  // grassmann: r, reduced dimension
    int grassmann_block;  // grassmann: GrassmannBlock
    // grassmann: the offset schedule, groups of causal offsets Δ one after the other
    // (n_offsets in all, group g has group_len[g]); one group serves every layer, or
    // there is one per layer. Read a layer's with config_layer_offsets.
    int offsets[MAX_OFFSETS_ALL], n_offsets;
    int group_len[MAX_OFFSET_GROUPS], n_groups;
    int seq_len;         // charlm: bytes per training window
    int recall_pairs;    // recall: key-value pairs (and as many queries) per sequence
    int recall_vocab;    // recall: token vocabulary (first half keys, second half values)
    int steps;           // optimizer steps; 0 = derive from epochs
    double epochs;
    int batch;
    double lr, min_lr_ratio, weight_decay, clip, warmup_frac;
    int seed;
    int eval_every;      // steps between evaluations; 0 = about 10 per run
    int eval_batches;    // held-out batches per evaluation; 0 = the whole held-out set
    double lambda_orth, lambda_nuclear, lambda_stability, lambda_l2;
    int stability_window;  // k in ||s(W_t) - s(W_{t-k})||^2
    char data_dir[CONFIG_TEXT];  // "" = the Debian package's directory for the task
} TrialConfig;

typedef enum { PT_INT, PT_REAL, PT_CHOICE, PT_TEXT, PT_INTLIST } ParamType;

typedef struct {
    const char *name;  // YAML name; on the command line --name with '_' as '-'
    ParamType type;
    size_t offset;     // into TrialConfig
    double def, min, max;              // PT_INT, PT_REAL (inclusive range)
    const char *const *choices;        // PT_CHOICE: NULL-terminated names
    const char *def_text;              // PT_CHOICE, PT_TEXT, PT_INTLIST default
    const char *help;
} ParamSpec;

extern const ParamSpec config_params[];
extern const int config_nparams;

extern const char *const task_names[];       // indexed by TaskKind
extern const char *const attention_names[];  // indexed by AttnKind
extern const char *const grassmann_block_names[];  // indexed by GrassmannBlock

void config_defaults(TrialConfig *c);
// Find a parameter by YAML or command-line spelling; NULL if unknown.
const ParamSpec *config_find(const char *name);
// The known name closest to `name` (edit distance), for "did you mean" hints.
const char *config_closest(const char *name);
// Parse `text` into the parameter. On error returns -1 and writes a message
// saying what is allowed into err (no file/line prefix: the caller adds it).
int config_set(TrialConfig *c, const ParamSpec *p, const char *text, char *err, size_t errlen);
// Cross-parameter checks (heads divide d_model, core_rank <= heads, ...).
int config_check(const TrialConfig *c, char *err, size_t errlen);
// The parameter's current value as text (for tables, JSON and HDF5 attributes).
void config_format(const TrialConfig *c, const ParamSpec *p, char *out, size_t outlen);
// Whether the parameter matters for this configuration (core_rank only for tucker, ...).
int config_relevant(const TrialConfig *c, const ParamSpec *p);
// Layer l's Grassmann offsets (*n of them): its own group of the schedule, or the one
// group of every layer.
const int *config_layer_offsets(const TrialConfig *c, int l, int *n);
// The parameter's /summary column (and its key in attnsweep report): its YAML name,
// except that "steps" (steps asked for, 0 = from epochs) is "config_steps" beside the
// result column "steps" (optimizer steps taken).
const char *config_column(const ParamSpec *p);

#endif
