// grid.c: a BLACS process grid over an MPI communicator.
#define _POSIX_C_SOURCE 200809L
#include "invariants/grid.h"

#include <cblas.h>
#include <stdlib.h>

static int mpi_started;

void grid_mpi_start(void) {
    int done;
    MPI_Initialized(&done);
    if (!done) {
        // Started without mpirun/srun: a lone process needs no daemon, no network
        // transport and no UCX, which cuts Open MPI's start-up from 0.5 s to 0.07 s.
        // Settings the user made win (setenv without overwrite).
        if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK")) {
            setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
            setenv("OMPI_MCA_pml", "ob1", 0);
            setenv("OMPI_MCA_btl", "self", 0);
        }
        MPI_Init(NULL, NULL);
        mpi_started = 1;
    }
    // One BLAS thread per rank in a job of several ranks, unless the user chose a number:
    // OpenBLAS otherwise starts a thread per core in every rank, which oversubscribes the
    // node, and the thread count changes the last bits of the results.
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1 && !getenv("OPENBLAS_NUM_THREADS") && !getenv("OMP_NUM_THREADS")) openblas_set_num_threads(1);
}

void grid_mpi_stop(void) {
    if (mpi_started) MPI_Finalize();
    mpi_started = 0;
}

// The grid is nprow × npcol with npcol the largest divisor of size not above √size, so
// 1 → 1×1, 2 → 2×1, 4 → 2×2, 6 → 3×2. Ranks are placed row-major ("Row" order).
void grid_init(BlacsGrid *g, MPI_Comm comm) {
    g->comm = comm;
    MPI_Comm_rank(comm, &g->rank);
    MPI_Comm_size(comm, &g->size);
    int npcol = 1;
    for (int c = 1; c * c <= g->size; c++)
        if (g->size % c == 0) npcol = c;
    int nprow = g->size / npcol;
    // The system handle only names comm for gridinit, which makes its own communicators;
    // it is released at once so the grid owns nothing but its context.
    int handle = Csys2blacs_handle(comm);
    g->ctxt = handle;
    Cblacs_gridinit(&g->ctxt, "Row", nprow, npcol);
    Cfree_blacs_system_handle(handle);
    Cblacs_gridinfo(g->ctxt, &g->nprow, &g->npcol, &g->myrow, &g->mycol);
    handle = Csys2blacs_handle(MPI_COMM_SELF);
    g->self_ctxt = handle;
    Cblacs_gridinit(&g->self_ctxt, "Row", 1, 1);
    Cfree_blacs_system_handle(handle);
}

void grid_free(BlacsGrid *g) {
    Cblacs_gridexit(g->self_ctxt);
    Cblacs_gridexit(g->ctxt);
    g->ctxt = g->self_ctxt = -1;
}
