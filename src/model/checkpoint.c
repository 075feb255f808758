// checkpoint.c: a run's state to bytes and back (checkpoint.h).
//
//   shared: u64 floats; f32 params[floats], adam_m[floats], adam_v[floats];
//           u32 layers; per layer: i32 count, u32 ring entries, f64 ring[entries];
//           i64 step, loss_n; f64 loss_sum, penalty, train_seconds, seconds;
//           u32 n_curve; per point: i32 step, f64 lr, train_loss, val_loss, val_accuracy,
//           penalty, seconds
//   rank:   u32 generator state bytes, the bytes; the data position (dataset.h)
#include "model/checkpoint.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

enum { CURVE_POINT_BYTES = 4 + 6 * 8 };

void checkpoint_save_shared(Bytes *b, const Model *m, const TrainState *st) {
    const size_t n = m->params_arena.total;
    bytes_put_le(b, n, 8);
    bytes_put_array(b, m->params_arena.mem, n, 4);
    bytes_put_array(b, m->adam_m, n, 4);
    bytes_put_array(b, m->adam_v, n, 4);
    bytes_put_u32(b, (uint32_t)m->L);
    for (int l = 0; l < m->L; l++) {
        const StabilityHistory *h = &m->stability[l];
        const size_t entries = h->ring ? (size_t)h->window * h->G : 0;
        bytes_put_i32(b, h->count);
        bytes_put_u32(b, (uint32_t)entries);
        bytes_put_array(b, h->ring, entries, 8);
    }
    bytes_put_i64(b, st->step);
    bytes_put_i64(b, st->loss_n);
    const double v[] = {st->loss_sum, st->penalty, st->train_seconds, st->seconds};
    bytes_put_array(b, v, 4, 8);
    bytes_put_u32(b, (uint32_t)st->n_curve);
    for (int i = 0; i < st->n_curve; i++) {
        const CurvePoint *c = &st->curve[i];
        bytes_put_i32(b, c->step);
        const double p[] = {c->lr, c->train_loss, c->val_loss, c->val_accuracy, c->penalty, c->seconds};
        bytes_put_array(b, p, 6, 8);
    }
}

int checkpoint_load_shared(ByteReader *rd, Model *m, TrainState *st) {
    const size_t n = (size_t)br_i64(rd);
    if (!rd->failed && n != m->params_arena.total)
        br_fail(rd, "%zu parameters, this model has %zu", n, m->params_arena.total);
    br_array(rd, m->params_arena.mem, rd->failed ? 0 : n, 4);
    br_array(rd, m->adam_m, rd->failed ? 0 : n, 4);
    br_array(rd, m->adam_v, rd->failed ? 0 : n, 4);
    const uint32_t layers = br_u32(rd);
    if (!rd->failed && layers != (uint32_t)m->L) br_fail(rd, "%u layers, this model has %d", layers, m->L);
    for (int l = 0; l < m->L && !rd->failed; l++) {
        StabilityHistory *h = &m->stability[l];
        const int count = br_i32(rd);
        const uint32_t entries = br_u32(rd);
        const size_t want = h->ring ? (size_t)h->window * h->G : 0;
        if (!rd->failed && (entries != want || count < 0)) br_fail(rd, "layer %d: a stability history of %u entries", l, entries);
        br_array(rd, h->ring, rd->failed ? 0 : want, 8);
        h->count = rd->failed ? 0 : count;
    }
    st->step = br_i64(rd);
    st->loss_n = br_i64(rd);
    double v[4] = {0};
    br_array(rd, v, 4, 8);
    st->loss_sum = v[0], st->penalty = v[1], st->train_seconds = v[2], st->seconds = v[3];
    const int n_curve = br_count(rd, CURVE_POINT_BYTES, "curve points");
    if (rd->failed || st->step < 0 || st->loss_n < 0) {
        br_fail(rd, "not a training state");
        return -1;
    }
    if (n_curve > st->cap) {
        st->curve = xrealloc(st->curve, (size_t)n_curve * sizeof(CurvePoint));
        st->cap = n_curve;
    }
    st->n_curve = n_curve;
    for (int i = 0; i < n_curve; i++) {
        CurvePoint *c = &st->curve[i];
        memset(c, 0, sizeof *c);
        c->step = br_i32(rd);
        double p[6] = {0};
        br_array(rd, p, 6, 8);
        c->lr = p[0], c->train_loss = p[1], c->val_loss = p[2], c->val_accuracy = p[3], c->penalty = p[4];
        c->seconds = p[5];
    }
    return rd->failed ? -1 : 0;
}

void checkpoint_save_rank(Bytes *b, const Dataset *d, const TrainState *st) {
    const size_t n = gsl_rng_size(st->rng);
    bytes_put_u32(b, (uint32_t)n);
    memcpy(bytes_extend(b, n), gsl_rng_state(st->rng), n);
    dataset_save_position(d, b);
}

int checkpoint_load_rank(ByteReader *rd, Dataset *d, TrainState *st) {
    const size_t want = gsl_rng_size(st->rng);
    const uint32_t n = br_u32(rd);
    if (!rd->failed && n != want) br_fail(rd, "a generator state of %u bytes, this one has %zu", n, want);
    const unsigned char *state = br_take(rd, rd->failed ? 0 : want);
    if (state && !rd->failed) memcpy(gsl_rng_state(st->rng), state, want);
    return rd->failed || dataset_restore_position(d, rd) != 0 ? -1 : 0;
}
