// h5store.h: the results file (HDF5), the one format every tool reads.
//
//   /                    attributes: version, sweep, yaml, seed, start_time, end_time
//   /summary             compound table, one row per trial (see README "Results file")
//   /trials/NNNNNN/      attributes (config as JSON, status, reason, rank, host, times)
//        curves/         step, lr, train_loss, eval_loss, eval_accuracy, penalty, seconds
//        weights/layerK  final attention tensor [groups, d_group, d_model, roles], float32
//        invariants/     step, correlation [n, layers], eff_rank [n, layers, 4], head_sv [n, layers, heads]
//        scores/layerK   invariants of the final tensor (sv_mode0..3, ranks, fits, CP)
//
// Only one process (the coordinator, or attnsweep train) writes a file. Every
// h5store_write_trial ends with H5Fflush, so a trial written is a trial kept.
#ifndef ATTN_H5STORE_H
#define ATTN_H5STORE_H

#include "common/trial.h"

typedef struct H5Store H5Store;

typedef struct {
    const char *sweep;      // sweep name ("train" for attnsweep train)
    const char *yaml;       // the full search-space text (for train: the config as YAML)
    int seed;
    double start_time;      // Unix time
} StoreMeta;

// Create (truncate) the file and write the root attributes. Exits with one clear
// line (code 1) if the file cannot be created.
H5Store *h5store_create(const char *path, const StoreMeta *meta);
// Append the trial: one /summary row and its /trials/NNNNNN group; then flush.
void h5store_write_trial(H5Store *s, const TrialResult *r);
// Write end_time and close.
void h5store_close(H5Store *s, double end_time);

// A scores file for a model that is not a trial (attnsweep score MODEL.safetensors):
// root attributes version, format_version, source, family, beta, gamma,
// rank_deviation, correlation; scores/layerK as in a trial, each with its "name".
// Written through PATH.partial and renamed.
typedef struct {
    const char *source, *family;
    char **names;  // n_layers layer names
    RewardSpec spec;
    double rank_deviation, correlation;
} ModelScoresMeta;
void h5store_write_model_scores(const char *path, const ModelScoresMeta *meta, const LayerScore *scores,
                                int n_layers);

// Read trial `id` back (config, status, metrics, curve, weights). Returns 0, or -1
// with a one-line reason in err (not an HDF5 file, no such trial, other version...).
int h5store_read_trial(const char *path, int id, TrialResult *out, char *err, size_t errlen);

#endif
