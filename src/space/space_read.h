// space_read.h: what the files that read a sweep file share; not for other modules.
//
// space.c reads the top level and the sections and drives the rest: space_yaml.c (the
// guard, the node tree and its positions, the one-line messages, the readers of a node),
// space_values.c (a parameter's value, always through config_set), space_params.c (the
// parameters section and its conditions) and space_check.c (the checks over the whole
// space). A reader that fails leaves one line "FILE:LINE:COL: message" in L->err and
// returns -1 (space_fail).
#ifndef ATTN_SPACE_READ_H
#define ATTN_SPACE_READ_H

#include <yaml.h>

#include "space/space.h"

enum {
    MAX_FILE_BYTES = 1 << 20,
    MAX_TRIALS = 1000000,
};

// The keys of the top level, and of the scheduler (checked against the budget once the
// whole file is read), in the order they are read.
enum { TOP_NAME, TOP_METHOD, TOP_PROGRAM, TOP_COMMAND, TOP_METRIC, TOP_OBJECTIVES, TOP_SEED, TOP_REPEATS, TOP_TRIALS,
       TOP_RUN_CAP, TOP_TASK, TOP_BUDGET, TOP_EVOLUTION, TOP_TPE, TOP_SCHEDULER, TOP_EARLY_TERMINATE, TOP_REWARD,
       TOP_RESOURCES, TOP_PARAMETERS, TOP_PROJECT, TOP_ENTITY, TOP_DESCRIPTION, TOP_N };
enum { SCHED_NAME, SCHED_MIN_STEPS, SCHED_ETA, SCHED_MAX_STEPS, SCHED_PER, SCHED_N };

typedef struct {
    int line, col;  // 1-based; line 0: not given
} Mark;

typedef struct {
    SweepSpec *s;
    const char *path, *text;
    size_t len;
    char *err;
    size_t errlen;
    yaml_document_t doc;
    int have_doc;
    Mark root;               // the top mapping
    yaml_node_t *top[TOP_N];
    Mark top_at[TOP_N];
    yaml_node_t *sched[SCHED_N];  // the scheduler's values, checked once the file is read
    const char *sched_what, *sched_section;  // "scheduler asha" in "scheduler", or W&B's
    const char *sched_min, *sched_max;       //   early_terminate, with its keys
    int budget_steps;        // a program's sweep: budget steps (0: none)
    Mark *set_at;            // per trial parameter: where the file fixes or sweeps it
    const char **set_in;     //   and in which section
    yaml_node_t **when;      // per swept parameter: its `when` mapping (NULL: none)
    Mark metric_at;          // the metric's name
} Loader;

// ---- the YAML (space_yaml.c)
// The guard (space_yaml_guard), then libyaml's one document into L->doc.
int space_load_yaml(Loader *L);
// The message "PATH:LINE:COL: ..." into L->err, on one line; returns -1.
int space_fail(Loader *L, Mark m, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
// A line validate prints about the file (a W&B key ignored, a mapping to attnsweep's).
void space_note(Loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
Mark space_mark(const yaml_node_t *n);
yaml_node_t *space_node(Loader *L, int index);
// A scalar's text; NULL for lists, mappings and texts holding a NUL byte.
const char *space_text(const yaml_node_t *n);
// How a node reads in a message: 'text', nothing, a list, a mapping.
const char *space_describe(const yaml_node_t *n, char *buf, size_t len);
// The number of names (NULL-terminated), and the index of name among names[0..n), or -1.
int space_name_count(const char *const *names);
int space_find_name(const char *name, const char *const *names, int n);
// A mapping key: it must be a scalar.
int space_key_text(Loader *L, const yaml_node_t *k, const char **out);
// The value of key in mapping map, or NULL.
yaml_node_t *space_map_get(Loader *L, yaml_node_t *map, const char *key);
// Reads the mapping `map` whose keys come from keys[0..n): val[k] and key_at[k] get key k's
// value and position (val[k] NULL when absent). what names it in messages (NULL: the top).
int space_read_section(Loader *L, yaml_node_t *map, const char *what, const char *const *keys, int n,
                       yaml_node_t **val, Mark *key_at);
// A number from a scalar: whole (an integer) or real, in [lo, hi] (lo excluded if lo_open).
int space_read_number(Loader *L, yaml_node_t *n, const char *what, int whole, double lo, double hi, int lo_open,
                      double *out);
int space_read_int(Loader *L, yaml_node_t *n, const char *what, int lo, int hi, int *out);
// One of names (NULL-terminated).
int space_read_choice(Loader *L, yaml_node_t *n, const char *what, const char *const *names, int *out);
extern const char *const space_bool_names[];  // false, true

// ---- parameter values (space_values.c)
// The trial parameter of that name (it must exist), and its index in config_params.
const ParamSpec *space_param_named(const char *name);
int space_param_index(const ParamSpec *p);
// How a scalar reads: an integer, another number, or a text (any quoted scalar).
typedef enum { SCALAR_INT, SCALAR_REAL, SCALAR_TEXT } ScalarKind;
ScalarKind space_scalar_kind(const yaml_node_t *n);
// Whether a value reaches the program as W&B's Python object rather than a number or a
// text: a boolean, None, a list or a mapping.
int space_structured(const yaml_node_t *n);
// Parse n into c's field for p, with config_set's rules and message; text (TEXT_MAX
// bytes, or NULL) gets the value as written.
int space_set_value(Loader *L, TrialConfig *c, const ParamSpec *p, yaml_node_t *n, char *text);
// Record where the file sets p (at m, in the section `where`); a second place is an error.
int space_claim(Loader *L, const ParamSpec *p, Mark m, const char *where);

// ---- the parameters section (space_params.c)
// The mapping of parameter names (under parent's parameters when parent is not NULL).
int space_read_parameters(Loader *L, yaml_node_t *map, const char *parent);
// The `when` conditions of the parameters read, once all of them are.
int space_resolve_conditions(Loader *L);

// ---- the checks over the whole space (space_check.c), once the file is read.
int space_check(Loader *L);

#endif
