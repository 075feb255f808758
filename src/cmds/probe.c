// attnsweep probe: the probes of a trained trial (trial/probe.h) on the validation split,
// printed and written into its results file (store/h5probe.h).
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/args.h"
#include "cmds/cmds.h"
#include "common/util.h"
#include "data/dataset.h"
#include "invariants/grid.h"
#include "store/h5probe.h"
#include "store/h5store.h"
#include "trial/probe.h"

// "0,0.1,0.5" → o->sigma
static void parse_sigma(ProbeOptions *o, const char *text) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    o->n_sigma = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (o->n_sigma == (int)(sizeof o->sigma / sizeof o->sigma[0]))
            die(EXIT_BADINPUT, "probe: --sigma takes at most %zu levels", sizeof o->sigma / sizeof o->sigma[0]);
        o->sigma[o->n_sigma++] = args_number("probe", "--sigma", tok, 0, 100);
    }
    if (o->n_sigma == 0) die(EXIT_BADINPUT, "probe: --sigma needs at least one level");
}

static void print_matrix(const double *a, int n, const char *const *labels) {
    printf("      ");
    for (int j = 0; j < n; j++) printf(" %6s", labels[j]);
    putchar('\n');
    for (int i = 0; i < n; i++) {
        printf("%6s", labels[i]);
        for (int j = 0; j < n; j++) printf(" %6.3f", a[i * n + j]);
        putchar('\n');
    }
}

static void print_cka(const Probe *p) {
    enum { MAX_LABELS = 64 };
    char names[MAX_LABELS][16];
    const char *labels[MAX_LABELS];
    const int nl = p->layers + 1 < MAX_LABELS ? p->layers + 1 : MAX_LABELS;
    for (int i = 0; i < nl; i++) {
        if (i == 0)
            snprintf(names[i], sizeof names[i], "emb");
        else
            snprintf(names[i], sizeof names[i], "L%d", i - 1);
        labels[i] = names[i];
    }
    printf("linear CKA between layers (emb: the embeddings, Ll: block l's output):\n");
    if (nl == p->layers + 1) print_matrix(p->cka_layers, nl, labels);
    if (!p->cka_heads || p->heads > MAX_LABELS) return;
    for (int h = 0; h < p->heads; h++) {
        snprintf(names[h], sizeof names[h], "h%d", h);
        labels[h] = names[h];
    }
    for (int l = 0; l < p->layers; l++) {
        printf("linear CKA between the heads' outputs, layer %d:\n", l);
        print_matrix(p->cka_heads + (size_t)l * p->heads * p->heads, p->heads, labels);
    }
}

static void print_table(const Probe *p) {
    const char *kind = p->transform == TRANSFORM_PATCH ? "every patch's 49 pixels" : "the 784 pixels";
    printf("stability under a random orthogonal map of %s (seed %d): the same configuration trained on the "
           "transformed images (%d steps, %.1f s; val_accuracy %.4f)\n",
           kind, p->transform_seed, p->transformed.steps, p->transformed.seconds, p->transformed.val_accuracy);
    printf("%-22s %5s %12s %12s %9s  %-6s", "invariant", "layer", "original", "transformed", "change", "");
    if (p->has_control) printf(" %12s %9s", "seed+1", "change");
    putchar('\n');
    for (int i = 0; i < p->n_table; i++) {
        const ProbeRow *w = &p->table[i];
        char layer[8];
        snprintf(layer, sizeof layer, w->layer < 0 ? "all" : "%d", w->layer);
        printf("%-22s %5s %12.4f %12.4f %+8.1f%%  %-6s", w->name, layer, w->original, w->transformed, 100 * w->change,
               w->stays ? "stays" : "moves");
        if (p->has_control) printf(" %12.4f %+8.1f%%", w->control, 100 * w->control_change);
        putchar('\n');
    }
    printf("(stays: |change| <= %g%%; change = (transformed - original) / |original|)\n", 100 * p->tolerance);
}

// Spearman's ρ, or "n/a" when it is undefined (one head, or a constant side).
static const char *rho_text(char *buf, size_t n, double rho) {
    if (isnan(rho))
        snprintf(buf, n, "n/a");
    else
        snprintf(buf, n, "%+.3f", rho);
    return buf;
}

static void print_ablation(const Probe *p) {
    if (!p->ablation_loss) {
        printf("per-head ablation: none (grassmann mixing has no heads)\n");
        return;
    }
    const int L = p->layers, H = p->heads;
    printf("per-head ablation (the validation split with each head's W_O block zeroed; clean val_loss %.4f, "
           "val_accuracy %.4f), beside each head's redundancy (max |cos| to another head of the layer's head Gram):\n",
           p->clean_loss, p->clean_accuracy);
    printf("%5s %4s %9s %9s %12s %10s %10s\n", "layer", "head", "val_loss", "dloss", "val_accuracy", "daccuracy",
           "redundancy");
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < H; h++) {
            const int k = l * H + h;
            printf("%5d %4d %9.4f %+9.4f %12.4f %+10.4f %10.3f\n", l, h, p->ablation_loss[k],
                   p->ablation_loss[k] - p->clean_loss, p->ablation_accuracy[k],
                   p->ablation_accuracy[k] - p->clean_accuracy, p->redundancy[k]);
        }
        printf("%5d %4s %9.4f %+9.4f %12.4f %+10.4f\n", l, "all", p->layer_loss[l], p->layer_loss[l] - p->clean_loss,
               p->layer_accuracy[l], p->layer_accuracy[l] - p->clean_accuracy);
    }
    char buf[32];
    printf("Spearman rho(redundancy, dloss) over the heads:");
    for (int l = 0; l < L; l++) printf(" layer %d %s,", l, rho_text(buf, sizeof buf, p->spearman[l]));
    // Under no relation ρ over n heads has sd ≈ 1/√(n − 1): within 2 sd is chance.
    const int n = L * H;
    const double rho = p->spearman[L], sd = n > 1 ? 1 / sqrt(n - 1.0) : NAN;
    printf(" pooled (%d heads) %s (chance: sd %.2f)\n", n, rho_text(buf, sizeof buf, rho), sd);
    const char *reading =
        isnan(rho)           ? "undefined: too few heads, or every head costs the same"
        : fabs(rho) < 2 * sd ? "within chance (|rho| < 2 sd): ablation neither confirms nor contradicts the invariants"
        : rho < 0 ? "negative beyond chance: the heads the invariants call alike cost less to remove, as they expect"
                  : "positive beyond chance: the heads the invariants call alike cost more to remove, against them";
    printf("  %s\n", reading);
}

int cmd_probe(int argc, char **argv) {
    const char *path = NULL, *sigma = NULL;
    int trial = 0, quiet = 0, transform = -1;
    ProbeOptions o;
    probe_options_default(&o);
    const Option options[] = {
        OPT_INT("--trial", &trial, 0, INT_MAX, "N", "the trial of the results file [0]"),
        OPT_INT("--cka-examples", &o.cka_examples, 0, 1e9, "N",
                "validation examples the CKA reads, all their tokens (0: the whole split) [1000]"),
        OPT_STRING("--sigma", NULL, &sigma, "LIST",
                   "noise levels, comma-separated: images in normalised pixels, tokens in units\n"
                   "of the embeddings' RMS [0,0.1,0.25,0.5,1]"),
        OPT_INT("--noise-seed", &o.noise_seed, 0, 1e9, "S", "seed of the noise [1]"),
        OPT_INT("--maps", &o.maps, 0, 64, "K", "attention maps of validation examples 0..K-1 [4]"),
        OPT_CHOICE("--transform", &transform, transform_names, "KIND",
                   "none, patch (a random orthogonal 49 x 49 map of every patch's pixels) or\n"
                   "pixels (a random orthogonal 784 x 784 map of the image): train the same\n"
                   "configuration on transformed images and compare its invariants\n"
                   "[patch for fashion_mnist, none otherwise]"),
        OPT_INT("--transform-seed", &o.transform_seed, 0, 1e9, "S", "seed of the orthogonal map [1]"),
        OPT_NUMBER("--tolerance", &o.tolerance, 0, 1e6, "T", "an invariant stays when |relative change| <= T [0.1]"),
        OPT_FLAG("--seed-control", NULL, &o.seed_control, 1,
                 "also train the untransformed configuration with seed + 1: each invariant's\n"
                 "change from the seed alone, beside the transform's"),
        OPT_FLAG("--quiet", "-q", &quiet, 1, "no training progress lines on stderr"),
        OPT_END,
    };
    const Command cmd = {"probe", "attnsweep probe RESULTS.h5 [--trial N] [options]",
                         "Rebuilds a trained trial from its stored parameters and probes it on the\n"
                         "validation split: linear CKA between the heads' outputs and between the\n"
                         "layers, accuracy under Gaussian input noise, the loss with each head removed\n"
                         "beside the heads' redundancy in the head Gram (Spearman's rho), attention maps,\n"
                         "and (fashion_mnist) the same configuration trained on orthogonally transformed\n"
                         "images with a table of the invariants that stay and that move. Writes /trials/NNNNNN/probe\n"
                         "into the file (replacing an earlier probe) and prints the numbers.\n\n",
                         options, NULL,
                         {1, "one results file only", "which results file? (attnsweep probe RESULTS.h5)"}};
    args_parse(&cmd, argc, argv, &path);
    if (sigma) parse_sigma(&o, sigma);

    char err[1024];
    TrialResult r;
    if (h5store_read_trial(path, trial, &r, err, sizeof err) != 0) die(EXIT_BADINPUT, "probe: %s", err);
    if (r.run.dir)
        die(EXIT_BADINPUT,
            "probe: %s: trial %d ran the sweep's program (%s): probe rebuilds the built-in engine's models only "
            "(its weights, %s, are scored by attnsweep score)",
            path, trial, r.run.command ? r.run.command : "",
            r.run.checkpoint && r.run.checkpoint[0] ? r.run.checkpoint : "none recorded");
    if (!trial_status_measured(r.status))
        die(EXIT_BADINPUT, "probe: %s: trial %d is %s: nothing trained to probe", path, trial, trial_status_names[r.status]);
    if (!r.params)
        die(EXIT_BADINPUT, "probe: %s: trial %d has no stored parameters (the file was written before attnsweep stored "
            "them; train it again to probe it)", path, trial);
    o.transform = transform >= 0 ? (TransformKind)transform
                                 : r.config.task == TASK_FASHION_MNIST ? TRANSFORM_PATCH : TRANSFORM_NONE;
    if (o.transform != TRANSFORM_NONE && r.config.task != TASK_FASHION_MNIST)
        die(EXIT_BADINPUT, "probe: --transform %s applies to fashion_mnist only (trial %d is %s; use --transform none)",
            transform_names[o.transform], trial, task_names[r.config.task]);
    check_output("probe", path);

    grid_mpi_start();
    int world;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (world > 1) die(EXIT_BADINPUT, "probe: runs on one rank (this job has %d)", world);
    BlacsGrid grid;
    grid_init(&grid, MPI_COMM_SELF);

    Dataset *data = dataset_open(&r.config);
    const DatasetInfo info = dataset_info(data);
    Model m;
    if (probe_rebuild(&m, &r, &info, err, sizeof err) != 0) die(EXIT_BADINPUT, "probe: %s: %s", path, err);
    Probe p = {0};
    probe_measure(&p, &m, data, &o);
    probe_ablate_heads(&p, &m, data);
    probe_redundancy(&p, &r);
    model_free(&m);
    dataset_free(data);

    printf("attnsweep probe: %s trial %d (%s on %s, val_accuracy %.4f): %d validation examples, %ld token rows\n", path,
           trial, attention_names[r.config.attention], task_names[r.config.task], r.val_accuracy, p.n_examples,
           p.n_rows);
    print_cka(&p);
    printf("accuracy under Gaussian input noise (the validation split):\n");
    for (int i = 0; i < p.n_sigma; i++)
        printf("  sigma %6.3f  val_accuracy %.4f  val_loss %.4f\n", p.sigma[i], p.noise_accuracy[i], p.noise_loss[i]);
    print_ablation(&p);
    if (p.maps) printf("attention maps of validation examples 0..%d: probe/attention\n", p.n_maps - 1);
    if (o.transform != TRANSFORM_NONE) {
        probe_transform(&p, &r, &o, &grid, quiet ? NULL : stderr);
        print_table(&p);
    }
    h5store_write_probe(path, trial, &p);
    printf("wrote %s (/trials/%06d/probe)\n", path, trial);
    probe_free(&p);
    trial_result_free(&r);
    grid_free(&grid);
    return 0;
}
