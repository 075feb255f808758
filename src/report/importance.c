// importance.c: fANOVA parameter importance (importance.h): a random forest as
// scikit-learn grows it, then each tree's functional ANOVA over the search-space box.
#include "report/importance.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

// scikit-learn's tolerances: values closer than this are one value for a split
// (FEATURE_THRESHOLD), and a node this pure is a leaf (EPSILON).
#define FEATURE_THRESHOLD 1e-7
#define PURE 2.220446049250313e-16
enum { MAX_CATEGORIES = 16 };  // one-hot columns of a parameter (its marginal's grid has 2^k cells)

// ---------------------------------------------------------------- the forest

typedef struct {
    int feature;  // −1: a leaf
    double threshold;
    int left, right;
    double value;  // a leaf's weighted mean of y
} Node;

typedef struct {
    int n, cap;
    Node *node;
} Tree;

typedef struct {
    const double *X, *y, *w;  // rows (n × d), targets, bootstrap weights (counts)
    int d;
    gsl_rng *rng;
    int *order;  // the columns in a random order, drawn at each node
    struct Keyed {
        double x;
        int row;
    } *keyed;    // scratch: a node's rows with their value of one column
} Grower;

static int by_x(const void *a, const void *b) {
    const double x = ((const struct Keyed *)a)->x, y = ((const struct Keyed *)b)->x;
    return (x > y) - (x < y);
}

static int tree_add(Tree *t) {
    if (t->n == t->cap) t->node = xrealloc(t->node, (size_t)(t->cap = 2 * t->cap + 16) * sizeof *t->node);
    t->node[t->n] = (Node){.feature = -1};
    return t->n++;
}

// The node of rows[0..n) at depth: a leaf, or the split of largest decrease in the
// weighted squared error over the columns in a random order (the first of equal ones).
static int grow(Tree *t, Grower *g, int *rows, int n, int depth) {
    const int at = tree_add(t);
    double sw = 0, sy = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        const double w = g->w[rows[i]], y = g->y[rows[i]];
        sw += w, sy += w * y, syy += w * y * y;
    }
    t->node[at].value = sy / sw;
    const double impurity = syy / sw - (sy / sw) * (sy / sw);
    if (n < 2 || depth >= FANOVA_MAX_DEPTH || impurity <= PURE) return at;
    gsl_ran_shuffle(g->rng, g->order, (size_t)g->d, sizeof *g->order);
    int best_f = -1;
    double best = -HUGE_VAL, best_thr = 0;
    struct Keyed *k = g->keyed;
    for (int c = 0; c < g->d; c++) {
        const int f = g->order[c];
        for (int i = 0; i < n; i++) k[i] = (struct Keyed){g->X[(size_t)rows[i] * g->d + f], rows[i]};
        qsort(k, (size_t)n, sizeof *k, by_x);
        if (k[n - 1].x <= k[0].x + FEATURE_THRESHOLD) continue;  // constant here
        double lw = 0, ly = 0;
        for (int i = 0; i + 1 < n; i++) {
            lw += g->w[k[i].row], ly += g->w[k[i].row] * g->y[k[i].row];
            if (k[i + 1].x <= k[i].x + FEATURE_THRESHOLD) continue;
            const double rw = sw - lw, ry = sy - ly;
            const double proxy = ly * ly / lw + ry * ry / rw;  // the decrease, up to a constant
            if (proxy > best) best = proxy, best_f = f, best_thr = k[i].x / 2 + k[i + 1].x / 2;
        }
    }
    if (best_f < 0) return at;
    int l = 0;  // the rows at or below the threshold first
    for (int i = 0; i < n; i++)
        if (g->X[(size_t)rows[i] * g->d + best_f] <= best_thr) k[l++].row = rows[i];
    for (int i = 0, r = l; i < n; i++)
        if (g->X[(size_t)rows[i] * g->d + best_f] > best_thr) k[r++].row = rows[i];
    for (int i = 0; i < n; i++) rows[i] = k[i].row;
    const int left = grow(t, g, rows, l, depth + 1);
    const int right = grow(t, g, rows + l, n - l, depth + 1);
    t->node[at] = (Node){.feature = best_f, .threshold = best_thr, .left = left, .right = right, .value = sy / sw};
    return at;
}

// ---------------------------------------------------------------- functional ANOVA of a tree

// The leaves of a tree over the unit box (columns rescaled to [0, 1]): each one's box
// (lo, hi: n × d), value and volume.
typedef struct {
    int n, d;
    double *lo, *hi, *value, *volume;
} Leaves;

static void leaves_of(const Tree *t, int node, double *lo, double *hi, Leaves *out) {
    const Node *x = &t->node[node];
    if (x->feature < 0) {
        const int k = out->n++;
        memcpy(out->lo + (size_t)k * out->d, lo, (size_t)out->d * sizeof *lo);
        memcpy(out->hi + (size_t)k * out->d, hi, (size_t)out->d * sizeof *hi);
        double v = 1;
        for (int j = 0; j < out->d; j++) v *= hi[j] - lo[j];
        out->value[k] = x->value, out->volume[k] = v;
        return;
    }
    const int f = x->feature;
    const double saved_hi = hi[f], saved_lo = lo[f];
    hi[f] = x->threshold;
    leaves_of(t, x->left, lo, hi, out);
    hi[f] = saved_hi, lo[f] = x->threshold;
    leaves_of(t, x->right, lo, hi, out);
    lo[f] = saved_lo;
}

static int by_value(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Index of x among edges[0..n) (x is one of them: a leaf's bound is a threshold or 0 or 1).
static int edge_index(const double *edges, int n, double x) {
    const double *at = bsearch(&x, edges, (size_t)n, sizeof *edges, by_value);
    return at ? (int)(at - edges) : -1;
}

// The variance of the marginal of the columns cols[0..k) over the box, weighted by volume
// (Optuna's _FanovaTree.get_marginal_variance): the marginal is constant on the cells of
// the grid the tree's thresholds on those columns cut, and a leaf adds its value times its
// volume in the other columns to every cell of its box. edges[c]: 0, the thresholds on
// column cols[c] in order, 1 (n_edges[c] of them).
static double marginal_variance(const Leaves *lv, const int *cols, int k, double *const *edges, const int *n_edges) {
    long cells = 1;  // with one more slot along the first column (the running sums' end)
    for (int c = 0; c < k; c++) cells *= c ? n_edges[c] - 1 : n_edges[c];
    double *acc = xcalloc((size_t)cells, sizeof *acc);
    int a[MAX_CATEGORIES], b[MAX_CATEGORIES], at[MAX_CATEGORIES];
    for (int i = 0; i < lv->n; i++) {
        double inside = 1;  // the leaf's extent in the columns of the marginal
        for (int c = 0; c < k; c++) {
            const double lo = lv->lo[(size_t)i * lv->d + cols[c]], hi = lv->hi[(size_t)i * lv->d + cols[c]];
            a[c] = edge_index(edges[c], n_edges[c], lo), b[c] = edge_index(edges[c], n_edges[c], hi);
            inside *= hi - lo;
            at[c] = a[c];
        }
        const double add = lv->value[i] * lv->volume[i] / inside;
        for (;;) {  // over the leaf's cells in the other columns; along the first, its two ends
            long base = 0, stride = n_edges[0];
            for (int c = 1; c < k; c++) base += at[c] * stride, stride *= n_edges[c] - 1;
            acc[base + a[0]] += add, acc[base + b[0]] -= add;
            int c = 1;
            while (c < k && ++at[c] == b[c]) at[c] = a[c], c++;
            if (c >= k) break;
        }
    }
    // running sums along the first column give each cell's sum; then the weighted variance
    double sw = 0, sv = 0, svv = 0;
    const long rest = cells / n_edges[0];
    for (long r = 0; r < rest; r++) {
        double run = 0, w_rest = 1;
        for (int c = 1, q = (int)r; c < k; c++) {
            const int m = n_edges[c] - 1;
            w_rest *= edges[c][q % m + 1] - edges[c][q % m];
            q /= m;
        }
        for (int e = 0; e + 1 < n_edges[0]; e++) {
            run += acc[r * n_edges[0] + e];
            const double w = w_rest * (edges[0][e + 1] - edges[0][e]);
            sw += w, sv += w * run, svv += w * run * run;
        }
    }
    free(acc);
    const double mean = sv / sw, var = svv / sw - mean * mean;
    return var > 0 ? var : 0;
}

int fanova_importance(const double *X, const double *y, int n, int d, const double *lo, const double *hi,
                      const int *param_of, int n_params, unsigned long seed, double *importance) {
    double *unit = xmalloc((size_t)n * d * sizeof *unit);  // the columns on [0, 1]
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++)
            unit[(size_t)i * d + j] = hi[j] > lo[j] ? (X[(size_t)i * d + j] - lo[j]) / (hi[j] - lo[j]) : 0;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    Grower g = {.X = unit, .y = y, .d = d, .rng = rng, .order = xmalloc((size_t)d * sizeof(int)),
                .keyed = xmalloc((size_t)n * sizeof *g.keyed)};
    double *w = xmalloc((size_t)n * sizeof *w);
    int *rows = xmalloc((size_t)n * sizeof *rows);
    double *sum = xcalloc((size_t)n_params, sizeof *sum);
    double *lo_box = xmalloc((size_t)d * sizeof(double)), *hi_box = xmalloc((size_t)d * sizeof(double));
    double **edges = xcalloc((size_t)d, sizeof *edges);
    int *n_edges = xcalloc((size_t)d, sizeof *n_edges), *cols = xmalloc((size_t)d * sizeof *cols);
    Leaves lv = {.d = d, .lo = xmalloc((size_t)n * d * sizeof(double)), .hi = xmalloc((size_t)n * d * sizeof(double)),
                 .value = xmalloc((size_t)n * sizeof(double)), .volume = xmalloc((size_t)n * sizeof(double))};
    int used = 0;  // trees that vary
    for (int tree = 0; tree < FANOVA_TREES; tree++) {
        // a bootstrap sample: n draws with replacement, as counts; the rows drawn grow the tree
        memset(w, 0, (size_t)n * sizeof *w);
        for (int i = 0; i < n; i++) w[gsl_rng_uniform_int(rng, (unsigned long)n)] += 1;
        int m = 0;
        for (int i = 0; i < n; i++)
            if (w[i] > 0) rows[m++] = i;
        for (int j = 0; j < d; j++) g.order[j] = j;
        g.w = w;
        Tree t = {0};
        grow(&t, &g, rows, m, 0);
        for (int j = 0; j < d; j++) lo_box[j] = 0, hi_box[j] = 1;
        lv.n = 0;
        leaves_of(&t, 0, lo_box, hi_box, &lv);
        double mean = 0, var = 0;
        for (int i = 0; i < lv.n; i++) mean += lv.value[i] * lv.volume[i];
        for (int i = 0; i < lv.n; i++) var += lv.volume[i] * (lv.value[i] - mean) * (lv.value[i] - mean);
        if (var > 0) {
            used++;
            for (int j = 0; j < d; j++) {  // each column's cut points
                edges[j] = xrealloc(edges[j], (size_t)(t.n + 2) * sizeof **edges);
                int e = 0;
                edges[j][e++] = 0;
                for (int k = 0; k < t.n; k++)
                    if (t.node[k].feature == j) edges[j][e++] = t.node[k].threshold;
                edges[j][e++] = 1;
                qsort(edges[j], (size_t)e, sizeof **edges, by_value);
                int u = 1;
                for (int k = 1; k < e; k++)
                    if (edges[j][k] != edges[j][u - 1]) edges[j][u++] = edges[j][k];
                n_edges[j] = u;
            }
            for (int p = 0; p < n_params; p++) {
                int k = 0;
                double *pe[MAX_CATEGORIES];
                int pn[MAX_CATEGORIES];
                for (int j = 0; j < d && k < MAX_CATEGORIES; j++)
                    if (param_of[j] == p) cols[k] = j, pe[k] = edges[j], pn[k] = n_edges[j], k++;
                if (k) sum[p] += marginal_variance(&lv, cols, k, pe, pn) / var;
            }
        }
        free(t.node);
    }
    double total = 0;
    for (int p = 0; p < n_params; p++) total += sum[p] / (used ? used : 1);
    for (int p = 0; p < n_params; p++) importance[p] = used && total > 0 ? sum[p] / used / total : NAN;
    for (int j = 0; j < d; j++) free(edges[j]);
    free(edges), free(n_edges), free(cols), free(lo_box), free(hi_box);
    free(lv.lo), free(lv.hi), free(lv.value), free(lv.volume);
    free(unit), free(w), free(rows), free(sum), free(g.order), free(g.keyed);
    gsl_rng_free(rng);
    return used && total > 0 ? 0 : -1;
}

// ---------------------------------------------------------------- the report's table

// A parameter as the forest sees it: a number on [lo, hi], or one-hot over its values.
typedef struct {
    const ParamSpec *p;
    int categorical;
    int n_values;
    char values[MAX_CATEGORIES][CONFIG_TEXT + 64];
    double lo, hi;
} Encoded;

void sweep_params(const SweepSummary *s, SweepParams *out) {
    memset(out, 0, sizeof *out);
    const TrialConfig *first = out->first = s->n_trials ? summary_config(s, &s->trials[0]) : NULL;
    const int program = first && first->n_program > 0, n = program ? first->n_program : config_nparams;
    out->p = xcalloc((size_t)n + 1, sizeof *out->p);
    out->program = xcalloc((size_t)n + 1, sizeof *out->program);
    out->columns = xcalloc((size_t)n + 1, sizeof *out->columns);
    for (int k = 0; k < n; k++) {
        const ParamSpec *p = &config_params[k];
        if (program) {
            metric_param_column(first->program[k].name, out->columns[k], sizeof out->columns[k]);
            config_program_param(&out->program[k], first->program[k].name, out->columns[k], first->program[k].type, k);
            p = &out->program[k];
        }
        if (strcmp(p->name, "seed")) out->p[out->n++] = p;
    }
}

void sweep_params_free(SweepParams *sp) {
    free(sp->first);
    free(sp->p);
    free(sp->program);
    free(sp->columns);
    memset(sp, 0, sizeof *sp);
}

const SpaceParam *sweep_space_param(const SweepSpec *spec, const char *name) {
    for (int i = 0; spec && i < spec->n_params; i++)
        if (!strcmp(spec->params[i].param->name, name)) return &spec->params[i];
    return NULL;
}

// Whether p varies among the trials rows[0..n) (seen through v), and its encoding; 0 when it
// does not, or has more than MAX_CATEGORIES values (*too_many set).
static int encode(Encoded *e, const ParamSpec *p, const SweepSpec *spec, const SummaryRow *const *rows, int n,
                  ConfigView *v, int *too_many) {
    *e = (Encoded){.p = p, .lo = HUGE_VAL, .hi = -HUGE_VAL};
    const SpaceParam *sp = sweep_space_param(spec, p->name);
    const int number = p->type == PT_INT || p->type == PT_REAL;
    e->categorical = !number || (sp && (sp->dist == DIST_VALUES || sp->dist == DIST_CATEGORICAL));
    char text[CONFIG_TEXT + 64];
    for (int i = 0; i < n; i++) {
        const TrialConfig *c = config_view(v, rows[i]);
        if (number) e->lo = fmin(e->lo, config_number(c, p)), e->hi = fmax(e->hi, config_number(c, p));
        config_format(c, p, text, sizeof text);
        int k = 0;
        while (k < e->n_values && k < MAX_CATEGORIES && strcmp(e->values[k], text)) k++;
        if (k == MAX_CATEGORIES) {
            *too_many |= e->categorical;
            if (e->categorical) return 0;
        } else if (k == e->n_values) {
            snprintf(e->values[e->n_values++], sizeof e->values[0], "%s", text);
        }
    }
    if (e->n_values < 2) return 0;
    if (sp && !e->categorical) {  // the distribution's bounds, as Optuna's search space has them
        const int continuous = sp->dist != DIST_INT_UNIFORM && sp->dist != DIST_Q_UNIFORM;
        e->lo = fmin(e->lo, continuous ? sp->lo : sp->min), e->hi = fmax(e->hi, continuous ? sp->hi : sp->max);
    }
    return 1;
}

Table *importance_table(const SweepSummary *s, const ReportOptions *o, const SweepSpec *spec) {
    const Metric *m = summary_metric(s, o->metric);
    const SummaryRow **rows = xcalloc((size_t)(s->n_trials ? s->n_trials : 1), sizeof *rows);
    double *y = xcalloc((size_t)(s->n_trials ? s->n_trials : 1), sizeof *y);
    int n = 0;
    for (int i = 0; i < s->n_trials; i++)
        if (s->trials[i].status == TRIAL_OK && isfinite(summary_value(&s->trials[i], m)))
            y[n] = summary_value(&s->trials[i], m), rows[n++] = &s->trials[i];
    SweepParams cand;
    sweep_params(s, &cand);
    ConfigView *v = config_view_new(s);
    Encoded *enc = xcalloc((size_t)cand.n + 1, sizeof *enc);
    int n_params = 0, d = 0, too_many = 0;
    for (int k = 0; k < cand.n; k++)
        if (encode(&enc[n_params], cand.p[k], spec, rows, n, v, &too_many))
            d += enc[n_params].categorical ? enc[n_params].n_values : 1, n_params++;
    double *X = xcalloc((size_t)(n ? n : 1) * (d ? d : 1), sizeof *X), *lo = xcalloc((size_t)d + 1, sizeof *lo),
           *hi = xcalloc((size_t)d + 1, sizeof *hi), *importance = xcalloc((size_t)n_params + 1, sizeof *importance);
    int *param_of = xcalloc((size_t)d + 1, sizeof *param_of);
    for (int p = 0, j = 0; p < n_params; p++) {
        const Encoded *e = &enc[p];
        const int width = e->categorical ? e->n_values : 1;
        for (int c = 0; c < width; c++) {
            param_of[j + c] = p;
            lo[j + c] = e->categorical ? 0 : e->lo, hi[j + c] = e->categorical ? 1 : e->hi;
        }
        for (int i = 0; i < n; i++) {
            if (!e->categorical) {
                X[(size_t)i * d + j] = config_number(config_view(v, rows[i]), e->p);
                continue;
            }
            char text[CONFIG_TEXT + 64];
            config_format(config_view(v, rows[i]), e->p, text, sizeof text);
            for (int c = 0; c < width; c++) X[(size_t)i * d + j + c] = !strcmp(e->values[c], text);
        }
        j += width;
    }
    const int ok = n_params > 0 && fanova_importance(X, y, n, d, lo, hi, param_of, n_params, 1, importance) == 0;

    char title[256];
    snprintf(title, sizeof title, "Parameter importance (fANOVA) for %s over %d finished trials", o->metric, n);
    Table *t = table_new("importance", title);
    table_note(t, "the fraction of the variance of %s that each parameter's main effect explains, by a random forest "
                  "of %d trees (Optuna's default evaluator, fANOVA); the importances sum to 1",
               o->metric, FANOVA_TREES);
    table_note(t, "%s; listed and text parameters one-hot", spec ? "numbers on their distributions' bounds"
                                                               : "numbers on the range seen (the sweep's YAML does not load here)");
    if (too_many) table_note(t, "parameters with more than %d values are left out", MAX_CATEGORIES);
    if (!ok) table_note(t, "nothing to compare: fewer than two finished trials with different %s, or no parameter varies",
                        o->metric);
    table_column(t, "parameter", "parameter", COL_TEXT, NULL);
    table_column(t, "importance", "importance", COL_REAL, "%.3f");
    for (int done = 0; ok && done < n_params; done++) {  // best first
        int best = -1;
        for (int p = 0; p < n_params; p++)
            if (importance[p] >= 0 && (best < 0 || importance[p] > importance[best])) best = p;
        table_row(t);
        table_text(t, "%s", enc[best].p->name);
        table_number(t, importance[best]);
        importance[best] = -1;
    }
    sweep_params_free(&cand);  // after the names are copied
    free(rows), free(y), free(enc), free(v);
    free(X), free(lo), free(hi), free(importance), free(param_of);
    return t;
}
