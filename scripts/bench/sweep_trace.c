// sweep_trace.c: a PMPI interposition library for the sweep benchmarks
// (scripts/bench/sweep_scaling.sh, coordinator_overhead.sh). Loaded with
//   mpirun -x LD_PRELOAD=sweep_trace.so -x SWEEP_TRACE_DIR=DIR attnsweep run ...
// it writes DIR/rankN.log, one line per event, times in Unix seconds (CLOCK_REALTIME,
// comparable across the ranks of one machine), CPU in seconds (getrusage, all threads):
//   init T CPU PID            after MPI_Init returned
//   send TAG PEER T           before an MPI_Send or MPI_Isend on MPI_COMM_WORLD (the sweep
//                             protocol: the coordinator hands out trials by MPI_Isend)
//   recv TAG PEER T           after an MPI_Recv on MPI_COMM_WORLD returned
//   finalize T CPU            on entering MPI_Finalize
// Tags are those of src/sweep/protocol.h (1 READY, 2 TRIAL, 3 DONE, 4 EVAL,
// 5 DECISION, 6 STOP, 7 RESULT). The runner itself is not changed; the library only
// watches it. Build: cmake --build build --target sweep_trace (build/bench/sweep_trace.so)
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static FILE *trace;

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

static void open_trace(void) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *dir = getenv("SWEEP_TRACE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%d.log", dir ? dir : ".", rank);
    trace = fopen(path, "w");
    if (trace) fprintf(trace, "init %.6f %.6f %d\n", wall(), cpu(), (int)getpid());
}

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    open_trace();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    open_trace();
    return rc;
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    if (trace && comm == MPI_COMM_WORLD) fprintf(trace, "send %d %d %.6f\n", tag, dest, wall());
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    if (trace && comm == MPI_COMM_WORLD) fprintf(trace, "send %d %d %.6f\n", tag, dest, wall());
    return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status) {
    MPI_Status st;
    int rc = PMPI_Recv(buf, count, type, source, tag, comm, &st);
    if (trace && comm == MPI_COMM_WORLD) fprintf(trace, "recv %d %d %.6f\n", st.MPI_TAG, st.MPI_SOURCE, wall());
    if (status != MPI_STATUS_IGNORE) *status = st;
    return rc;
}

int MPI_Finalize(void) {
    if (trace) {
        fprintf(trace, "finalize %.6f %.6f\n", wall(), cpu());
        fclose(trace);
        trace = NULL;
    }
    return PMPI_Finalize();
}
