// grid.h: a BLACS process grid over an MPI communicator, each rank's own 1×1 grid, and
// the BLACS and ScaLAPACK prototypes (Debian ships no headers for them: Fortran symbols,
// lower case with a trailing underscore, every argument by pointer).
//
// Every scoring routine takes a grid; on one rank it is a 1×1 grid and the same code
// runs (SPLATT's lesson: the distributed path is the single-rank path plus exchanges).
#ifndef ATTN_GRID_H
#define ATTN_GRID_H

#include <mpi.h>

typedef struct {
    MPI_Comm comm;       // the ranks of the grid (not owned)
    int ctxt;            // BLACS context
    int nprow, npcol;    // grid shape: as square as the rank count allows, nprow >= npcol
    int myrow, mycol;
    int rank, size;      // in comm
    int self_ctxt;       // BLACS context of a 1×1 grid holding this rank alone
                         // (unfolding_svd.c deals whole dense problems to single ranks and
                         // solves each on it)
} BlacsGrid;

// MPI for the verbs that compute on a grid, started once they have checked their input
// (bad input fails fast, without MPI's start-up). Without mpirun MPI starts as a
// singleton. In a job of several ranks it sets one BLAS thread per rank unless
// OPENBLAS_NUM_THREADS or OMP_NUM_THREADS is set. grid_mpi_stop finalises only what grid_mpi_start began; an error exit
// skips it, which mpirun reports as a failed rank.
void grid_mpi_start(void);
void grid_mpi_stop(void);

// Collective over comm. MPI must be initialised.
void grid_init(BlacsGrid *g, MPI_Comm comm);
void grid_free(BlacsGrid *g);

// ---- BLACS (C interface, in libscalapack-openmpi)
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);

// ---- ScaLAPACK (Fortran interface)
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc,
               const int *icsrc, const int *ictxt, const int *lld, int *info);
void pdgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a, const int *ia,
              const int *ja, const int *desca, double *s, double *u, const int *iu, const int *ju,
              const int *descu, double *vt, const int *ivt, const int *jvt, const int *descvt, double *work,
              const int *lwork, int *info);
void pdsytrd_(const char *uplo, const int *n, double *a, const int *ia, const int *ja, const int *desca, double *d,
              double *e, double *tau, double *work, const int *lwork, int *info);
void pdormtr_(const char *side, const char *uplo, const char *trans, const int *m, const int *n, const double *a,
              const int *ia, const int *ja, const int *desca, const double *tau, double *c, const int *ic,
              const int *jc, const int *descc, double *work, const int *lwork, int *info);

#endif
