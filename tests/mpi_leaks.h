// mpi_leaks.h: included once by each C test that starts MPI. Open MPI keeps allocations
// past MPI_Finalize, which LeakSanitizer (on in the ASan build, detect_leaks=1 in
// scripts/test.sh) reports from frames it cannot name: leak checking is off for these
// programs. (Checked with the MPI libraries suppressed: no reported leak has a frame in
// attnsweep's code.) The script tests keep leak checking, with tests/lsan-openmpi.supp.
#ifndef ATTN_MPI_LEAKS_H
#define ATTN_MPI_LEAKS_H

int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return 1; }

#endif
