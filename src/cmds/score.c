// attnsweep score: the invariants of a trial's or a checkpoint's attention tensors on a
// BLACS grid over all ranks of the job, a per-layer table, and the scores in HDF5.
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmds/args.h"
#include "cmds/cmds.h"
#include "common/util.h"
#include "invariants/grid.h"
#include "invariants/score.h"
#include "io/safetensors.h"
#include "params/config_json.h"
#include "store/h5store.h"
#include "trial/reward.h"

static int mode_index(TensorView view, const char *name) {
    const int n = tensor_mode_index(view, name);
    if (n < 0) {
        const char *const *m = tensor_mode_names[view];
        die(EXIT_BADINPUT, "score: unknown mode '%s' of the %s tensor (allowed: %s, %s, %s, %s or 0..3)", name,
            tensor_view_names[view], m[0], m[1], m[2], m[3]);
    }
    return n;
}

// "heads,src_dim" → use_mode
static void parse_modes(RewardSpec *r, const char *text) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    int any = 0;
    for (int n = 0; n < 4; n++) r->use_mode[n] = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) r->use_mode[mode_index(r->tensor, tok)] = any = 1;
    if (!any) die(EXIT_BADINPUT, "score: --modes needs at least one mode");
}

// "heads=4,src_dim=32" → ideal_rank
static void parse_ideal(RewardSpec *r, const char *text) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (!eq) die(EXIT_BADINPUT, "score: --ideal-ranks takes MODE=RANK pairs, got '%s'", tok);
        *eq = 0;
        r->ideal_rank[mode_index(r->tensor, tok)] = args_number("score", "--ideal-ranks", eq + 1, 1, 1e9);
    }
}

// What is being scored: a trial of a results file or a checkpoint.
typedef struct {
    int is_trial;
    TrialResult trial;
    AttentionLayers model;
    int n_layers;
} Input;

// Layer l of the input as scoring reads it.
static LayerWeights input_layer(const Input *in, int l) {
    if (in->is_trial) return trial_layer_weights(&in->trial, l);
    const AttentionLayers *m = &in->model;
    LayerWeights w = {.grassmann = m->dims[3] == 1, .qkv = m->weights[l], .out = m->out ? m->out[l] : NULL};
    memcpy(w.dims, m->dims, sizeof w.dims);
    memcpy(w.out_dims, m->out_dims, sizeof w.out_dims);
    return w;
}

enum { KIND_HDF5, KIND_SAFETENSORS, KIND_OTHER };

// What the file's first bytes say it is: the HDF5 signature (a results file), an 8-byte
// header length then '{' (safetensors), or neither. Only the safetensors reader's
// verdict counts for the last two; KIND_OTHER turns its message into a plainer one.
static int file_kind(const char *path) {
    static const unsigned char magic[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    unsigned char head[9];
    struct stat st;
    if (stat(path, &st) != 0) die(EXIT_BADINPUT, "score: %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) die(EXIT_BADINPUT, "score: %s: not a regular file", path);
    FILE *f = fopen(path, "rb");
    if (!f) die(EXIT_BADINPUT, "score: %s: %s", path, strerror(errno));
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n >= sizeof magic && memcmp(head, magic, sizeof magic) == 0) return KIND_HDF5;
    const size_t len = strlen(path);  // a sharded checkpoint's model.safetensors.index.json
    if (len > 5 && !strcmp(path + len - 5, ".json")) return KIND_SAFETENSORS;
    return n == sizeof head && head[8] == '{' ? KIND_SAFETENSORS : KIND_OTHER;
}

static void read_input(Input *in, const char *path, int trial, int heads) {
    char err[1024];
    memset(in, 0, sizeof *in);
    const int kind = file_kind(path);
    in->is_trial = kind == KIND_HDF5;
    if (in->is_trial) {
        if (h5store_read_trial(path, trial, &in->trial, err, sizeof err) != 0) die(EXIT_BADINPUT, "score: %s", err);
        if (in->trial.n_layers == 0)
            die(EXIT_BADINPUT, "score: %s: trial %d has no attention weights (status %s)", path, trial, trial_status_names[in->trial.status]);
        in->n_layers = in->trial.n_layers;
    } else {
        if (safetensors_attention(path, heads, &in->model, err, sizeof err) != 0) {
            if (kind == KIND_OTHER)
                die(EXIT_BADINPUT, "score: %s: neither an HDF5 results file nor a safetensors file", path);
            die(EXIT_BADINPUT, "score: %s", err);
        }
        attention_layers_whole_network(&in->model);
        in->n_layers = in->model.n_layers;
    }
}

// The first of n floats that is NaN or infinite, or -1.
static long first_nonfinite(const float *x, long n) {
    for (long i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return -1;
}

// Every weight finite: a diverged trial's NaNs would reach LAPACK as an internal error
// ("dgeqrf ... info -4"); one clear line instead (the safetensors reader refuses them itself).
static void check_finite(const Input *in, const char *path) {
    for (int l = 0; in->is_trial && l < in->n_layers; l++) {
        const LayerWeights w = input_layer(in, l);
        const long nq = (long)w.dims[0] * w.dims[1] * w.dims[2] * w.dims[3];
        const long no = w.out ? (long)w.out_dims[0] * w.out_dims[1] : 0;
        const long bad = first_nonfinite(w.qkv, nq), bad_out = w.out ? first_nonfinite(w.out, no) : -1;
        if (bad < 0 && bad_out < 0) continue;
        const float v = bad >= 0 ? w.qkv[bad] : w.out[bad_out];
        die(EXIT_BADINPUT, "score: %s: trial %d (status %s): layer %d's %s weights hold %s (a diverged run?): nothing to score",
            path, in->trial.id, trial_status_names[in->trial.status], l, bad >= 0 ? "attention" : "output",
            isnan(v) ? "NaN" : "an infinity");
    }
}

// "results/x.h5" → "results/x.scores.h5"; "m/model.safetensors" → "m/model.scores.h5"
static void default_output(char *out, size_t len, const char *path) {
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
    snprintf(out, len, "%.*s.scores.h5", (int)stem, path);
}

static void print_table(const Input *in, const char *path, const LayerScore *s, const double *secs, TensorView view,
                        const BlacsGrid *g) {
    const int *dims = s[0].dims;
    const char *const *m = tensor_mode_names[view];
    printf("attnsweep score: %s", path);
    if (in->is_trial)
        printf(" trial %d (%s on %s, val_accuracy %.4f)", in->trial.id, attention_names[in->trial.config.attention],
               task_names[in->trial.config.task], in->trial.val_accuracy);
    else
        printf(" (%s, %d heads; %s)", in->model.family, in->model.dims[0], in->model.form);
    printf(": %d layers, %s tensor [%s %d, %s %d, %s %d, %s %d], on a %d x %d grid\n", in->n_layers,
           tensor_view_names[view], m[0], dims[0], m[1], dims[1], m[2], dims[2], m[3], dims[3], g->nprow, g->npcol);
    printf("%5s  %-19s  %-27s  %9s  %6s  %6s  %7s  %-19s  %7s  %7s  %6s  %8s\n", "layer", "numerical ranks",
           "effective ranks", "head corr", "chance", "z", "heads z", "tucker ranks", "fit", "cp rank", "cp fit", "time");
    for (int l = 0; l < in->n_layers; l++) {
        const LayerScore *x = &s[l];
        char num[32], eff[48], tr[32];
        snprintf(num, sizeof num, "%d %d %d %d", x->num_rank[0], x->num_rank[1], x->num_rank[2], x->num_rank[3]);
        snprintf(eff, sizeof eff, "%.2f %.2f %.2f %.2f", x->eff_rank[0], x->eff_rank[1], x->eff_rank[2], x->eff_rank[3]);
        snprintf(tr, sizeof tr, "%d %d %d %d", x->tucker_ranks[0], x->tucker_ranks[1], x->tucker_ranks[2],
                 x->tucker_ranks[3]);
        printf("%5d  %-19s  %-27s  %9.4f  %6.4f  %6.1f  %7.1f  %-19s  %7.4f  %7d  %6.4f  %6.0f ms\n", l, num, eff,
               x->correlation, x->correlation_chance, correlation_z(x), eff_rank_z(x), tr, x->tucker_fit, x->cp_rank,
               x->cp_fit, 1e3 * secs[l]);
    }
}

static cJSON *layer_json(const LayerScore *x) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "num_rank", cJSON_CreateIntArray(x->num_rank, 4));
    cJSON_AddItemToObject(o, "eff_rank", cJSON_CreateDoubleArray(x->eff_rank, 4));
    cJSON_AddItemToObject(o, "core_energy", cJSON_CreateDoubleArray(x->core_energy, 4));
    cJSON_AddItemToObject(o, "head_sv", cJSON_CreateDoubleArray(x->sv[0], x->n_sv[0]));
    cJSON_AddBoolToObject(o, "mixing", x->mixing);  // Grassmann's: no heads, no head terms in the reward
    cJSON_AddNumberToObject(o, "correlation", x->correlation);
    cJSON_AddNumberToObject(o, "correlation_chance", x->correlation_chance);
    cJSON_AddNumberToObject(o, "correlation_chance_sd", x->correlation_chance_sd);  // null for Grassmann
    cJSON_AddNumberToObject(o, "correlation_z", correlation_z(x));
    cJSON_AddNumberToObject(o, "eff_rank_heads_chance", x->eff_rank_chance);  // null for Grassmann
    cJSON_AddNumberToObject(o, "eff_rank_heads_chance_sd", x->eff_rank_chance_sd);
    cJSON_AddNumberToObject(o, "eff_rank_heads_z", eff_rank_z(x));
    cJSON_AddItemToObject(o, "tucker_ranks", cJSON_CreateIntArray(x->tucker_ranks, 4));
    cJSON_AddNumberToObject(o, "tucker_fit", x->tucker_fit);
    cJSON_AddNumberToObject(o, "cp_rank", x->cp_rank);
    cJSON_AddNumberToObject(o, "cp_fit", x->cp_fit);
    return o;
}

int cmd_score(int argc, char **argv) {
    malloc_keep_pages();
    const char *path = NULL, *output = NULL, *modes = NULL, *ideal = NULL;
    int trial = 0, heads = 0, json = 0;
    ScoreOptions o;
    score_options_default(&o);
    RewardSpec spec;
    reward_spec_default(&spec);
    int tensor = spec.tensor;  // TensorView
    const Option options[] = {
        OPT_INT("--trial", &trial, 0, INT_MAX, "N", "trial of a results file (default 0, what attnsweep train writes)"),
        OPT_INT("--heads", &heads, 1, 65536, "H", "heads of a safetensors model (default: config.json beside it)"),
        OPT_CHOICE("--tensor", &tensor, tensor_view_names, "VIEW", "function (default) or parameters"),
        OPT_NUMBER("--beta", &spec.beta, 0, REWARD_WEIGHT_MAX, "B", "reward weight of RankDeviation (0.1)"),
        OPT_NUMBER("--gamma", &spec.gamma, 0, REWARD_WEIGHT_MAX, "G", "reward weight of Correlation (0.1)"),
        OPT_STRING("--modes", NULL, &modes, "LIST", "modes RankDeviation averages over (heads)"),
        OPT_STRING("--ideal-ranks", NULL, &ideal, "LIST",
                   "ideal effective rank per mode, e.g. heads=4,src_dim=32\n(default: each mode's full rank)"),
        OPT_NUMBER("--energy", &o.energy, REWARD_ENERGY_MIN, 1, "E", "numerical-rank energy threshold (0.99)"),
        OPT_INT("--cp-rank-max", &o.cp_rank_max, 1, 256, "R", "CP ranks tried, 1..R (min(8, heads x roles))"),
        OPT_FLAG("--no-cp", NULL, &o.cp, 0, "skip the CP rank sweep"),
        OPT_STRING("--output", "-o", &output, "FILE", "where the scores go (default: FILE.scores.h5 beside the input)"),
        OPT_FLAG("--json", NULL, &json, 1, "print the scores as one JSON object"),
        OPT_FLAG("--verbose", NULL, &o.verbose, 1, "HOOI and CP-ALS iterations on stderr"),
        OPT_END,
    };
    const Command cmd = {"score", "mpirun -np N attnsweep score TRIAL.h5 | MODEL.safetensors [options]",
                         "Scores every layer's attention tensor: by default the function-level tensor\n"
                         "T[heads, dest_dim, src_dim, roles] of each head's QK form and OV map (Grassmann:\n"
                         "the output features' mixing forms), or with --tensor parameters the weight tensor\n"
                         "W[heads, head_dim, model_dim, roles]: the singular values and ranks of each\n"
                         "unfolding, Tucker (HOSVD + HOOI) and CP rank sweeps, head correlation beside its\n"
                         "chance level (the rotation null: each head's objects rotated at random, spectra\n"
                         "kept; z its standard scores), and the reward, which charges what is beyond chance:\n"
                         "  reward = val_accuracy - beta*(RankDeviation - its chance) - gamma*(Correlation - its chance)\n"
                         "with RankDeviation = mean |eff_rank - ideal| / r_max over layers and --modes, its chance\n"
                         "the same at the null's mean effective rank (heads mode; other modes have no null and\n"
                         "are charged as measured), Correlation = mean |cosine| between heads, its chance the\n"
                         "null's mean. A layer at chance pays nothing in expectation; Grassmann's mixing has no\n"
                         "heads and pays no head terms. The N ranks form one BLACS grid.\n\n",
                         options,
                         "Modes: function view heads, dest_dim, src_dim, roles; parameter view heads, head_dim,\n"
                         "model_dim, roles (or 0..3 in either).\n",
                         {1, "one input file only",
                          "which file? (attnsweep score TRIAL.h5 | MODEL.safetensors)"}};
    args_parse(&cmd, argc, argv, &path);
    spec.tensor = tensor;
    if (modes) parse_modes(&spec, modes);  // after --tensor, whose mode names they use
    if (ideal) parse_ideal(&spec, ideal);
    char out_path[4096];
    if (output)
        snprintf(out_path, sizeof out_path, "%s", output);
    else
        default_output(out_path, sizeof out_path, path);

    struct stat in_st, out_st;  // -o naming the input would replace it by a file without its invariants
    if (stat(path, &in_st) == 0 && stat(out_path, &out_st) == 0 && in_st.st_dev == out_st.st_dev &&
        in_st.st_ino == out_st.st_ino)
        die(EXIT_BADINPUT, "score: -o %s is the input file; write the scores to another file", out_path);

    grid_mpi_start();
    BlacsGrid g;
    grid_init(&g, MPI_COMM_WORLD);
    Input in;
    read_input(&in, path, trial, heads);
    check_finite(&in, path);
    if (spec.tensor == TENSOR_FUNCTION && !(in.is_trial ? in.trial.weights_out != NULL : in.model.out != NULL))
        die(EXIT_BADINPUT,
            "score: %s has no output projections, which the function-level tensor needs; "
            "score its parameter tensor with --tensor parameters",
            path);
    if (g.rank == 0) check_output("score", out_path);

    LayerScore *s = xcalloc((size_t)in.n_layers, sizeof *s);
    double *secs = xcalloc((size_t)in.n_layers, sizeof *secs);
    double t0 = now_seconds();
    for (int l = 0; l < in.n_layers; l++) {
        double ts = now_seconds();
        const LayerWeights w = input_layer(&in, l);
        score_layer(&s[l], &w, spec.tensor, &o, &g);
        secs[l] = now_seconds() - ts;
    }
    RewardTerms terms;
    reward_terms_of_scores(&terms, s, in.n_layers, &spec);
    const double seconds = now_seconds() - t0;

    if (g.rank == 0) {
        double reward = NAN;
        if (in.is_trial) {
            TrialResult *r = &in.trial;
            reward = reward_value(r->val_accuracy, &terms, &spec);
            if (r->scores)
                for (int l = 0; l < r->n_layers; l++) layer_score_free(&r->scores[l]);
            free(r->scores);
            r->scores = s;  // the trial now owns the scores
            r->reward_spec = spec;
            trial_set_terms(r, &terms);
            r->reward = reward;
            write_trial_file(out_path, r, "score");
        } else {
            ModelScoresMeta meta = {.source = path, .family = in.model.family, .names = in.model.names,
                                    .spec = spec, .terms = terms};
            h5store_write_model_scores(out_path, &meta, s, in.n_layers);
        }
        if (json) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "source", path);
            cJSON_AddStringToObject(j, "output", out_path);
            cJSON_AddStringToObject(j, "tensor", tensor_view_names[spec.tensor]);
            if (!in.is_trial) cJSON_AddStringToObject(j, "form", in.model.form);
            cJSON_AddNumberToObject(j, "ranks", g.size);
            cJSON *layers = cJSON_AddArrayToObject(j, "layers");
            for (int l = 0; l < in.n_layers; l++) cJSON_AddItemToArray(layers, layer_json(&s[l]));
            cJSON_AddNumberToObject(j, "rank_deviation", terms.rank_deviation);
            cJSON_AddNumberToObject(j, "correlation", terms.correlation);
            cJSON_AddNumberToObject(j, "correlation_chance", terms.correlation_chance);
            cJSON_AddNumberToObject(j, "correlation_z", terms.correlation_z);  // null without a null
            cJSON_AddNumberToObject(j, "eff_rank_z", terms.eff_rank_z);
            cJSON_AddNumberToObject(j, "rank_deviation_excess", terms.rank_deviation_excess);
            cJSON_AddNumberToObject(j, "correlation_excess", terms.correlation_excess);
            cJSON_AddNumberToObject(j, "reward", reward);  // null for a checkpoint (no val_accuracy)
            cJSON_AddNumberToObject(j, "seconds", seconds);
            char *text = cJSON_PrintUnformatted(j);
            puts(text);
            free(text);
            cJSON_Delete(j);
        } else {
            print_table(&in, path, s, secs, spec.tensor, &g);
            printf("RankDeviation %.4f (beyond chance %+.4f, heads z %.1f)  Correlation %.4f (chance %.4f, beyond "
                   "%+.4f, z %.1f)",
                   terms.rank_deviation, terms.rank_deviation_excess, terms.eff_rank_z, terms.correlation,
                   terms.correlation_chance, terms.correlation_excess, terms.correlation_z);
            if (in.is_trial)
                printf("\nreward %.4f = %.4f - %g x %+.4f - %g x %+.4f (the terms beyond chance)", reward,
                       in.trial.val_accuracy, spec.beta, terms.rank_deviation_excess, spec.gamma,
                       terms.correlation_excess);
            printf("\nscored in %.2f s; wrote %s\n", seconds, out_path);
        }
    }
    if (!in.is_trial || g.rank != 0) {
        for (int l = 0; l < in.n_layers; l++) layer_score_free(&s[l]);
        free(s);
    }
    free(secs);
    if (in.is_trial)
        trial_result_free(&in.trial);
    else
        attention_layers_free(&in.model);
    grid_free(&g);
    return 0;
}
