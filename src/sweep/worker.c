// worker.c: a worker group's loop. The group's leader asks the coordinator for trials;
// every rank of the group trains the trial together (data parallel) and scores it on
// the group's BLACS grid; the leader reports rungs and sends the result.
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "space/asha.h"
#include "sweep/protocol.h"
#include "sweep/worker.h"
#include "trial/external.h"
#include "trial/pack.h"
#include "trial/runner.h"
#include "trial/trialdir.h"

typedef struct {
    const SweepComms *sc;
    const TrialAssign *trial;
    int next_rung;  // index of the next rung to report
    int reports;    // evaluations that held the metric (W&B's hyperband iterations)
} WorkerTrial;

// Whether evaluation e is at the trial's next ASHA rung: the first evaluation at or past
// it. A rung is a step, or with count_reports (a W&B hyperband) a number of evaluations
// that held the metric.
static int at_next_rung(WorkerTrial *w, const EvalPoint *e, long total_steps) {
    const int counted = w->sc->program->count_reports;
    if (counted && !isfinite(sweep_eval_metric(&w->sc->goal, e))) return 0;
    const int at = counted ? ++w->reports : e->step;
    return asha_at_rung(w->trial->rungs, w->trial->n_rungs, w->next_rung, at, total_steps);
}

// The leader's report of evaluation e at the next rung (replayed: one passed before a
// checkpoint, which needs no answer).
static void send_report(const WorkerTrial *w, const EvalPoint *e, int replayed) {
    RungReport rep = {.id = w->trial->id, .step = e->step, .rung = w->next_rung,
                      .metric = sweep_eval_metric(&w->sc->goal, e), .replayed = replayed};
    MPI_Send(&rep, sizeof rep, MPI_BYTE, 0, TAG_EVAL, MPI_COMM_WORLD);
}

// ASHA: at each rung the leader asks the coordinator; the answer goes to the whole group.
// Nonzero = stop (pruned).
static int at_eval(void *ctx, const EvalPoint *e, long total_steps) {
    WorkerTrial *w = ctx;
    if (!at_next_rung(w, e, total_steps)) return 0;
    int go_on = 1;
    if (w->sc->group_rank == 0) {
        send_report(w, e, 0);
        MPI_Recv(&go_on, 1, MPI_INT, 0, TAG_DECISION, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Bcast(&go_on, 1, MPI_INT, 0, w->sc->group);
    w->next_rung++;
    return !go_on;
}

// A trial continued from its checkpoint: it went on past the rungs its curve passed. The
// coordinator may not know their metrics (a resume's, or another job's when its lease ran
// out): the leader reports them again, replayed, as a resume replays a recorded trial's,
// so that ASHA's rungs hold what an uninterrupted run's would.
static void on_resume(void *ctx, long step, const EvalPoint *evals, int n_evals, long total_steps) {
    WorkerTrial *w = ctx;
    const TrialAssign *t = w->trial;
    if (w->sc->group_rank == 0)
        fprintf(stderr, "sweep: trial %d continues from its checkpoint after step %ld of %ld\n", t->id, step, total_steps);
    for (int i = 0; i < n_evals; i++) {
        if (!at_next_rung(w, &evals[i], total_steps)) continue;
        if (w->sc->group_rank == 0) send_report(w, &evals[i], 1);
        w->next_rung++;
    }
}

// Asked while the trial runs, on every rank; the runner combines the answers over the group.
static int should_stop(void *ctx) {
    WorkerTrial *w = ctx;
    if (sweep_signalled()) return 1;
    if (w->sc->group_rank != 0) return 0;
    int flag;
    MPI_Iprobe(0, TAG_STOP, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (flag) MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return flag;
}

void sweep_worker(const SweepComms *sc) {
    malloc_keep_pages();
    BlacsGrid grid;
    grid_init(&grid, sc->group);
    TrialRunner *runner = sc->program->n_command ? trial_external_runner(sc->program) : trial_builtin_runner();
    int ask = 1;           // the leader has no RESULT out that asks for the next trial
    for (;;) {
        // The leader asks (READY, or the last RESULT asked); the group learns the answer
        // (a trial, or -1: leave).
        TrialAssign t;
        if (sc->group_rank == 0) {
            if (ask) MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
            MPI_Status st;
            sweep_probe(0, MPI_COMM_WORLD, &st);
            if (st.MPI_TAG == TAG_STOP) {  // a stop for a trial that had already finished
                MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                sweep_probe(0, MPI_COMM_WORLD, &st);
            }
            if (st.MPI_TAG == TAG_DONE) {
                MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                t.id = -1;
            } else {
                MPI_Recv(&t, sizeof t, MPI_BYTE, 0, TAG_TRIAL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        MPI_Request told;  // the group's other ranks wait with the leader, without spinning
        MPI_Ibcast(&t, sizeof t, MPI_BYTE, 0, sc->group, &told);
        sweep_wait(&told);
        if (t.id < 0) break;
        sweep_stop_marker(NULL, 0);  // the last trial's result was taken: a new trial came

        ScoreOptions so;
        score_options_default(&so);
        so.energy = t.energy;
        WorkerTrial w = {.sc = sc, .trial = &t};
        const TrialHooks hooks = {.on_eval = at_eval, .should_stop = should_stop, .ctx = &w, .grid = &grid,
                                  .reward = &t.reward, .score = &so, .group = &sc->group, .time_limit = t.time_limit,
                                  .id = t.id, .device_slot = sc->device_slot, .trial_dir = t.trial_dir,
                                  .checkpoint_every = t.checkpoint_every, .on_resume = on_resume,
                                  .mem_limit = t.mem_limit};
        TrialResult r;
        if (sc->group_rank == 0 && trial_dir_make(t.trial_dir) == 0) sweep_stop_marker(t.trial_dir, t.handout_time);
        trial_run(runner, &t.config, &hooks, &r);  // armed until the next trial: its result may yet be lost
        r.rank = sc->world_rank;
        ask = r.status == TRIAL_INTERRUPTED;
        if (sc->group_rank == 0 && !ask) {
            Bytes b = {0};
            trial_pack(&b, &r);
            MPI_Send(b.data, (int)b.len, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
            bytes_free(&b);
        }
        trial_result_free(&r);
    }
    trial_runner_free(runner);
    grid_free(&grid);
}
