// schema.h: the results file's vocabulary, owned here once. Its writer (h5store.c), its
// readers (summary.c, h5read.c), `attnsweep schema` and every Python reader
// (python/attnsweep/results.py reads the copy each file carries in its root attribute
// `schema`) take the format version, the tables' columns, their units and the status
// names from here; the metrics come from the metric table (trial/metrics.h) and the
// parameters from the parameter table (params/config.h), which this composes.
//
//   /                    root attributes (schema_root_attributes)
//   /summary             one row per trial: trial_lead_columns, the parameters, the
//                        metrics, a program's own metric, trial_trail_columns
//   /trials/NNNNNN/curves      one row per evaluation (schema_curve_columns)
//   /trials/NNNNNN/invariants  one row per evaluation (schema_trace_columns)
#ifndef ATTN_SCHEMA_H
#define ATTN_SCHEMA_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "trial/metrics.h"

// The layout version in the root attribute format_version; readers refuse others.
// Format 3: the validation and test metrics (val_*, test_*) and the curves' val_ columns;
// the output side of each layer (weights_out/), the function-level scores and their chance.
// Format 4: the whole network's view of each softmax-family layer (circuits/circuits.h):
// weights/ [heads, d_k, d_model + 1, 3] with the normalisation folded in and the biases
// as the last column, weights_out/ [d_model + 1, width] centred, and function-level scores
// whose QK forms are weighted by what each head writes.
// Format 5: the reward charges its invariant terms beyond chance (trial/reward.h
// RewardTerms; root attribute reward_terms): /summary's correlation_z, eff_rank_z,
// rank_deviation_excess and correlation_excess columns, the trace's nulls (invariants'
// chance), each layer score's mixing flag.
// Format 6: the file says what it is ranked by and how it is laid out: root attributes
// metric, goal, objectives and schema (this vocabulary as JSON).
enum { SCHEMA_FORMAT_VERSION = 6 };

// A column of a table whose rows are C structs: its name, type, unit and where its field
// is (an offset into CurvePoint for the curves; the trace's arrays are laid out by
// h5store.c, the offsets here are 0).
typedef struct {
    const char *name;
    ColumnType type;
    const char *unit;
    size_t offset;
    const char *shape;  // "" for a scalar; an array's shape in the trace's dimension names
    const char *about;
} SchemaColumn;

extern const SchemaColumn schema_curve_columns[];  // step (int32), then float64 columns
extern const int n_schema_curve_columns;
extern const SchemaColumn schema_trace_columns[];  // step, correlation, eff_rank, head_sv, chance
extern const int n_schema_trace_columns;

// A root attribute of a sweep's results file.
typedef struct {
    const char *name, *type, *about;
} SchemaAttribute;
extern const SchemaAttribute schema_root_attributes[];
extern const int n_schema_root_attributes;

// The vocabulary as one JSON object: format_version, statuses (name, whether its
// metrics were measured, whether it is recorded), metrics (trial/metrics.h: name, label,
// unit, goal, use, charlm_only), costs, tables (summary: its lead and trail columns and
// where the parameters and metrics go; curves; invariants), root attributes. The caller
// deletes it.
cJSON *schema_json(void);
// The same as unformatted text, for the root attribute `schema`; the caller frees it with
// cJSON_free.
char *schema_json_text(void);

#endif
