// grid.c: a BLACS process grid over an MPI communicator.
#include "invariants/grid.h"

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
}

void grid_free(BlacsGrid *g) {
    Cblacs_gridexit(g->ctxt);
    g->ctxt = -1;
}
