/*
 * spec.h - helpers for the drop-in specification tests (test/dropin/spec_*.c):
 * MPI-only programs written from the MPI standard, not from xcoll's code,
 * in the style of MPICH's test suite. Each checks its own results, prints
 * " No Errors" from rank 0 when every rank passed, and exits non-zero
 * otherwise; the driver runs it under plain MPI, the Open MPI component
 * and the PMPI library.
 */
#ifndef XCOLL_TEST_SPEC_H
#define XCOLL_TEST_SPEC_H

#include <mpi.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int spec_errors;
static int spec_rank, spec_size;
static const char *spec_name;

/* At most this many error lines per rank: one bug often breaks thousands
 * of elements. */
#define SPEC_MAX_REPORTS 20

static void spec_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void spec_fail(const char *fmt, ...)
{
    va_list ap;
    if (spec_errors++ >= SPEC_MAX_REPORTS)
        return;
    fprintf(stdout, "%s: rank %d of %d: ", spec_name, spec_rank, spec_size);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

/* An MPI call that must succeed (the tests run with MPI_ERRORS_RETURN). */
#define SPEC_MPI(call)                                                           \
    do {                                                                         \
        int rc_ = (call);                                                        \
        if (rc_ != MPI_SUCCESS) {                                                \
            char msg_[MPI_MAX_ERROR_STRING];                                     \
            int len_ = 0;                                                        \
            MPI_Error_string(rc_, msg_, &len_);                                  \
            spec_fail("%s:%d: %s failed: %s", __FILE__, __LINE__, #call, msg_);  \
        }                                                                        \
    } while (0)

static void *spec_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", spec_name, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void spec_init(int *argc, char ***argv, const char *name)
{
    spec_name = name;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &spec_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &spec_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

/* Sums the errors of all ranks; rank 0 prints the verdict. */
static int spec_finish(void)
{
    int total = 0;
    MPI_Allreduce(&spec_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (spec_rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
        fflush(stdout);
    }
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}

#endif
