// config.h: one trial's configuration and the one table that describes every parameter.
//
// The table drives the command line (--d-model), the YAML search space (d_model),
// the --json output and the HDF5 attributes, so a parameter has one name, one
// default and one allowed range everywhere. TrialConfig is plain data (no pointers)
// so the sweep coordinator can send it to a worker as bytes.
//
// A sweep that runs the researcher's own program (space.h: `program`, `command`) has
// parameters of any names instead, which only that program reads: "program
// parameters". Each lives in a slot of TrialConfig.program that carries its name, type
// and value, so a configuration describes itself (in the journal, the results file
// and the messages); the sweep makes a ParamSpec for each (config_program_param) through
// which every function below treats it as it treats the table's.
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
enum { MAX_PROGRAM_PARAMS = 32, PROGRAM_NAME = 32, PROGRAM_TEXT = 64 };

typedef enum { PT_INT, PT_REAL, PT_CHOICE, PT_TEXT, PT_INTLIST } ParamType;

// One program parameter of a configuration. Integers and reals are doubles (integers
// up to 2^53 exactly), texts at most PROGRAM_TEXT - 1 bytes.
typedef struct {
    char name[PROGRAM_NAME];  // "": the slot is unused
    int type;                 // PT_INT, PT_REAL or PT_TEXT
    int set;                  // 0: the configuration does not have it (its `when` fails)
    double number;            // PT_INT, PT_REAL
    char text[PROGRAM_TEXT];  // PT_TEXT
} ProgramValue;

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
    int n_program;               // slots of program in use (a program's sweep), in the sweep's order
    ProgramValue program[MAX_PROGRAM_PARAMS];
} TrialConfig;

typedef struct {
    const char *name;  // YAML name; on the command line --name with '_' as '-'
    ParamType type;
    size_t offset;     // into TrialConfig
    double def, min, max;              // PT_INT, PT_REAL (inclusive range)
    const char *const *choices;        // PT_CHOICE: NULL-terminated names
    const char *def_text;              // PT_CHOICE, PT_TEXT, PT_INTLIST default
    const char *help;
    int program;                       // a program parameter: offset is its ProgramValue slot
    const char *column;                // its /summary column when not its name, or NULL
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
// Edit distance (insertions, deletions, substitutions; '-' and '_' alike), INT_MAX past 63
// characters; and the one of names[0..n) closest to name, within about one edit per three
// characters, or NULL.
int name_distance(const char *a, const char *b);
const char *closest_name(const char *name, const char *const *names, int n);
// Parse `text` into the parameter. On error returns -1 and writes a message
// saying what is allowed into err (no file/line prefix: the caller adds it).
int config_set(TrialConfig *c, const ParamSpec *p, const char *text, char *err, size_t errlen);
// A number into an integer or real parameter without its text, when config_set would
// take the text of it as it is (an integer below 1e15 or a finite real, in range): 0, else
// -1 with c untouched (config_set of its text then says why it is refused).
int config_set_number(TrialConfig *c, const ParamSpec *p, double v);
// Cross-parameter checks (heads divide d_model, core_rank <= heads, ...).
int config_check(const TrialConfig *c, char *err, size_t errlen);
// The parameter's current value as text (for tables, JSON and HDF5 attributes).
void config_format(const TrialConfig *c, const ParamSpec *p, char *out, size_t outlen);
// Whether the parameter matters for this configuration (core_rank only for tucker, ...;
// a program parameter when it is set).
int config_relevant(const TrialConfig *c, const ParamSpec *p);
// The value of a PT_INT or PT_REAL parameter.
double config_number(const TrialConfig *c, const ParamSpec *p);
// Layer l's Grassmann offsets (*n of them): its own group of the schedule, or the one
// group of every layer.
const int *config_layer_offsets(const TrialConfig *c, int l, int *n);
// The parameter's /summary column (and its key in attnsweep report): its YAML name,
// except that "steps" (steps asked for, 0 = from epochs) is "config_steps" beside the
// result column "steps" (optimizer steps taken), and so is a program parameter named
// like a result column (config_program_param).
const char *config_column(const ParamSpec *p);

// ---- program parameters
// The spec of program parameter `name` of type PT_INT, PT_REAL or PT_TEXT in slot `slot`
// of TrialConfig.program, with /summary column `column` (NULL: the name); the caller
// keeps both texts. Its range is any finite number (integers within ±2^53); config_set
// then parses, checks and sets it, config_format gives "" while it is not set.
void config_program_param(ParamSpec *p, const char *name, const char *column, ParamType type, int slot);
// Give c's slot for p its name and type, not set (a program parameter of the sweep that
// this configuration may lack).
void config_program_declare(TrialConfig *c, const ParamSpec *p);
// The slot of program parameter `name` in c, or NULL.
const ProgramValue *config_program_find(const TrialConfig *c, const char *name);
// A program parameter's value as text: integers without a point, reals in the fewest
// digits that read back as the same double, texts as they are.
void config_program_format(const ProgramValue *v, char *out, size_t outlen);

#endif
