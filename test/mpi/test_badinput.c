/* test_badinput: every bad argument gets its status, never a crash or a
 * hang, and the communicator still works afterwards.
 *
 * Every rank makes the same calls in the same order, so a check that
 * fails on one rank cannot leave the others waiting in a collective: bad
 * arguments must be refused before any communication starts. The
 * communicator has a timeout so that a library which does start
 * communicating fails the test instead of hanging it. */
#include "common.h"

#include <stdint.h>

static const xcoll_dtype_t BAD_DTYPE = (xcoll_dtype_t)99;
static const xcoll_op_t BAD_OP = (xcoll_op_t)99;

static int32_t sbuf[64], rbuf[64 * 64];

static int allgather_fails(const void *s, void *r, size_t bytes, void *ctx)
{
    (void)s;
    (void)r;
    (void)bytes;
    (void)ctx;
    return -1;
}

static int allgather_mpi(const void *s, void *r, size_t bytes, void *ctx)
{
    (void)ctx;
    return MPI_Allgather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, MPI_COMM_WORLD) ==
                   MPI_SUCCESS ? 0 : -1;
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "test_badinput");
    int rank = tc.rank, size = tc.size;
    xcoll_comm_t comm = tc_comm_create(MPI_COMM_WORLD, 20.0);
    xcoll_request_t req = NULL;
    const size_t huge = SIZE_MAX / 2;   /* * 4 bytes overflows */
    int done = 0;

    /* --- NULL buffers with count > 0 --- */
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_allreduce(NULL, rbuf, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_allreduce(sbuf, NULL, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_allreduce(XCOLL_IN_PLACE, NULL, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_bcast(NULL, 4, XCOLL_INT32, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_allgather(NULL, rbuf, 4, XCOLL_INT32, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_allgather(sbuf, NULL, 4, XCOLL_INT32, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_reduce_scatter(NULL, rbuf, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_reduce_scatter(sbuf, NULL, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_alltoall(NULL, rbuf, 4, XCOLL_INT32, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_alltoall(sbuf, NULL, 4, XCOLL_INT32, comm, NULL));
    /* A NULL send buffer is an error on every rank of reduce/gather (each
     * rank contributes); recvbuf NULL at the root too. */
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_reduce(NULL, rbuf, 4, XCOLL_INT32, XCOLL_SUM, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_gather(NULL, rbuf, 4, XCOLL_INT32, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_scatter(sbuf, NULL, 4, XCOLL_INT32, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_send(NULL, 4, XCOLL_INT32, 0, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_recv(NULL, 4, XCOLL_INT32, 0, 0, comm, NULL));

    /* --- XCOLL_IN_PLACE where no in-place form is documented: the marker
     * is the address 1, no buffer. Each right after the same call with real
     * buffers, which a repeat may shortcut (the express lane). Not the
     * rooted calls' buffers that only the root reads: there the others
     * would go on into the collective. --- */
    {
        void *const ip = (void *)(uintptr_t)XCOLL_IN_PLACE;
        const int peer = (rank + 1) % size;
        TC_EXPECT(XCOLL_OK, xcoll_allreduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_allreduce(sbuf, ip, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_allreduce(XCOLL_IN_PLACE, ip, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
        TC_EXPECT(XCOLL_OK, xcoll_bcast(rbuf, 4, XCOLL_INT32, 0, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_bcast(ip, 4, XCOLL_INT32, 0, comm, NULL));
        TC_EXPECT(XCOLL_OK, xcoll_allgather(sbuf, rbuf, 4, XCOLL_INT32, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_allgather(sbuf, ip, 4, XCOLL_INT32, comm, NULL));
        TC_EXPECT(XCOLL_OK, xcoll_reduce_scatter(rbuf, sbuf, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_reduce_scatter(rbuf, ip, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
        TC_EXPECT(XCOLL_OK, xcoll_alltoall(sbuf, rbuf, 4, XCOLL_INT32, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_alltoall(XCOLL_IN_PLACE, ip, 4, XCOLL_INT32, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_alltoall(sbuf, ip, 4, XCOLL_INT32, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_send(XCOLL_IN_PLACE, 4, XCOLL_INT32, peer, 0, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_recv(ip, 4, XCOLL_INT32, peer, 0, comm, NULL));
    }

    /* --- dtype and op --- */
    TC_EXPECT(XCOLL_ERR_INVALID_DTYPE, xcoll_allreduce(sbuf, rbuf, 4, BAD_DTYPE, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_DTYPE, xcoll_allreduce(sbuf, rbuf, 4, (xcoll_dtype_t)-1, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_DTYPE, xcoll_allreduce(sbuf, rbuf, 4, XCOLL_DTYPE_COUNT, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_DTYPE, xcoll_bcast(sbuf, 4, BAD_DTYPE, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_DTYPE, xcoll_allgather(sbuf, rbuf, 4, BAD_DTYPE, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_DTYPE, xcoll_alltoall(sbuf, rbuf, 4, BAD_DTYPE, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_DTYPE, xcoll_gather(sbuf, rbuf, 4, BAD_DTYPE, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_DTYPE, xcoll_scatter(sbuf, rbuf, 4, BAD_DTYPE, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_DTYPE, xcoll_send(sbuf, 4, BAD_DTYPE, 0, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_OP, xcoll_allreduce(sbuf, rbuf, 4, XCOLL_INT32, BAD_OP, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_OP, xcoll_allreduce(sbuf, rbuf, 4, XCOLL_INT32, (xcoll_op_t)-1, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_OP, xcoll_allreduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_OP_COUNT, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_OP, xcoll_reduce(sbuf, rbuf, 4, XCOLL_INT32, BAD_OP, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_OP, xcoll_reduce_scatter(sbuf, rbuf, 4, XCOLL_INT32, BAD_OP, comm, NULL));
    static const xcoll_dtype_t floats[] = { XCOLL_FLOAT16, XCOLL_BFLOAT16, XCOLL_FLOAT32, XCOLL_FLOAT64 };
    static const xcoll_op_t bitwise[] = { XCOLL_BAND, XCOLL_BOR, XCOLL_BXOR };
    for (int d = 0; d < 4; d++)
        for (int o = 0; o < 3; o++) {
            TC_EXPECT(XCOLL_ERR_INVALID_OP, xcoll_allreduce(sbuf, rbuf, 4, floats[d], bitwise[o], comm, NULL));
            TC_EXPECT(XCOLL_ERR_INVALID_OP, xcoll_reduce(sbuf, rbuf, 4, floats[d], bitwise[o], 0, comm, NULL));
            TC_EXPECT(XCOLL_ERR_INVALID_OP, xcoll_reduce_scatter(sbuf, rbuf, 4, floats[d], bitwise[o], comm, NULL));
        }

    /* --- roots --- */
    const int bad_roots[] = { -1, size, size + 100, INT32_MIN };
    for (int i = 0; i < 4; i++) {
        int root = bad_roots[i];
        TC_EXPECT(XCOLL_ERR_INVALID_ROOT, xcoll_bcast(rbuf, 4, XCOLL_INT32, root, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ROOT, xcoll_reduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_SUM, root, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ROOT, xcoll_gather(sbuf, rbuf, 4, XCOLL_INT32, root, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ROOT, xcoll_scatter(sbuf, rbuf, 4, XCOLL_INT32, root, comm, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_ROOT, xcoll_ibcast(rbuf, 4, XCOLL_INT32, root, comm, NULL, &req));
        if (req != NULL)
            tc_fail("ibcast with bad root %d left a request", root);
    }

    /* --- sizes that overflow --- */
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_allreduce(sbuf, rbuf, huge, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_allreduce(sbuf, rbuf, SIZE_MAX, XCOLL_FLOAT64, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_bcast(rbuf, huge, XCOLL_INT32, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_reduce(sbuf, rbuf, huge, XCOLL_INT32, XCOLL_SUM, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_allgather(sbuf, rbuf, huge, XCOLL_INT32, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_reduce_scatter(sbuf, rbuf, huge, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_alltoall(sbuf, rbuf, huge, XCOLL_INT32, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_gather(sbuf, rbuf, huge, XCOLL_INT32, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_scatter(sbuf, rbuf, huge, XCOLL_INT32, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_send(sbuf, huge, XCOLL_INT32, 0, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_recv(rbuf, huge, XCOLL_INT32, 0, 0, comm, NULL));
    if (size > 1) {
        /* count * element size fits, count * element size * ranks does not. */
        size_t per_rank = SIZE_MAX / (size_t)size + 1;
        TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_allgather(sbuf, rbuf, per_rank, XCOLL_INT8, comm, NULL));
        TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_alltoall(sbuf, rbuf, per_rank, XCOLL_INT8, comm, NULL));
        TC_EXPECT(XCOLL_ERR_OVERFLOW, xcoll_reduce_scatter(sbuf, rbuf, per_rank, XCOLL_INT8, XCOLL_SUM, comm, NULL));
    }

    /* --- communicators --- */
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_allreduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_SUM, NULL, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_bcast(rbuf, 4, XCOLL_INT32, 0, NULL, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_barrier(NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_ibarrier(NULL, &req));
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_send(sbuf, 4, XCOLL_INT32, 0, 0, NULL, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_comm_destroy(NULL));
    int r = -1;
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_comm_rank(NULL, &r));
    TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_comm_size(NULL, &r));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_comm_rank(comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_comm_size(comm, NULL));
    {
        xcoll_comm_t gone = tc_comm_create(MPI_COMM_WORLD, 20.0);
        TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(gone));
        TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_allreduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_SUM, gone, NULL));
        TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_iallreduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_SUM, gone, NULL, &req));
        TC_EXPECT(XCOLL_ERR_INVALID_COMM, xcoll_comm_destroy(gone));
    }

#if !defined(__SANITIZE_ADDRESS__)
    {
        /* Waiting on a copy of a handle already released is the caller's
         * error (xcoll.h), but a common one: the request of the last call
         * of a shape stays for the next call, and a second release of it
         * must be refused, not free it and the cached schedule under the
         * communicator. Under AddressSanitizer nothing is kept and this
         * would be a use after free. */
        xcoll_request_t a = NULL, copy;
        TC_EXPECT(XCOLL_OK, xcoll_iallreduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL, &a));
        copy = a;
        TC_EXPECT(XCOLL_OK, xcoll_wait(&a));
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_wait(&copy));
        if (copy != NULL)
            tc_fail("a refused wait left the handle set");
        TC_EXPECT(XCOLL_OK, xcoll_allreduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
        TC_EXPECT(XCOLL_OK, xcoll_allreduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    }
#endif

    /* --- point to point: peer and tag --- */
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_send(sbuf, 4, XCOLL_INT32, size, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_send(sbuf, 4, XCOLL_INT32, -1, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_recv(rbuf, 4, XCOLL_INT32, size, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_recv(rbuf, 4, XCOLL_INT32, -1, 0, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_send(sbuf, 4, XCOLL_INT32, 0, -1, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_send(sbuf, 4, XCOLL_INT32, 0, XCOLL_TAG_LIMIT, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_recv(rbuf, 4, XCOLL_INT32, 0, XCOLL_TAG_LIMIT, comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_isend(sbuf, 4, XCOLL_INT32, 0, -5, comm, NULL, &req));

    /* --- requests --- */
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_wait(NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_test(NULL, &done));
    req = NULL;
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_test(&req, NULL));
    done = 0;
    TC_EXPECT(XCOLL_OK, xcoll_test(&req, &done));   /* NULL *req counts as finished */
    if (done != 1)
        tc_fail("xcoll_test on a NULL request set done=%d, expected 1", done);
    TC_EXPECT(XCOLL_OK, xcoll_wait(&req));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_iallreduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_SUM, comm, NULL, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_ibarrier(comm, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_irecv(rbuf, 4, XCOLL_INT32, 0, 0, comm, NULL, NULL));

    /* --- configuration and creation --- */
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_config_init(NULL));
    xcoll_comm_t c2 = (xcoll_comm_t)(uintptr_t)0x1234;
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_comm_create(NULL, NULL, &c2));
    if (c2 != NULL)
        tc_fail("xcoll_comm_create(NULL bootstrap) left *comm non-NULL");
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_comm_create_mpi(MPI_COMM_WORLD, NULL, NULL));
    TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_comm_create_mpi(MPI_COMM_NULL, NULL, &c2));
    {
        xcoll_bootstrap_t boot = { rank, size, allgather_mpi, NULL };
        boot.rank = size;
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_comm_create(&boot, NULL, &c2));
        boot.rank = -1;
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_comm_create(&boot, NULL, &c2));
        boot.rank = rank;
        boot.size = 0;
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_comm_create(&boot, NULL, &c2));
        boot.size = size;
        boot.allgather = NULL;
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_comm_create(&boot, NULL, &c2));
        /* A failing allgather is a bootstrap error on every rank, locally. */
        boot.allgather = allgather_fails;
        c2 = (xcoll_comm_t)(uintptr_t)0x1234;
        TC_EXPECT(XCOLL_ERR_BOOTSTRAP, xcoll_comm_create(&boot, NULL, &c2));
        if (c2 != NULL)
            tc_fail("failed xcoll_comm_create left *comm non-NULL");
        /* And the plain callback path (no MPI inline helper) works. */
        boot.allgather = allgather_mpi;
        c2 = NULL;
        if (TC_EXPECT(XCOLL_OK, xcoll_comm_create(&boot, NULL, &c2)))
            TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(c2));
    }
    /* memory: not an xcoll_memory_t; CUDA memory where no device is usable */
    {
        xcoll_config_t cfg;
        const char *info = xcoll_build_info();
        int no_device = strstr(info, "CUDA: not built") != NULL ||
                        strstr(info, "no device") != NULL;
        TC_EXPECT(XCOLL_OK, xcoll_config_init(&cfg));
        cfg.memory = (xcoll_memory_t)7;
        c2 = (xcoll_comm_t)(uintptr_t)0x1234;
        TC_EXPECT(XCOLL_ERR_INVALID_ARG, xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &c2));
        if (c2 != NULL)
            tc_fail("xcoll_comm_create with a bad memory setting left *comm non-NULL");
        cfg.memory = XCOLL_MEMORY_CUDA;
        if (no_device) {
            TC_EXPECT(XCOLL_ERR_UNSUPPORTED, xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &c2));
        } else if (TC_EXPECT(XCOLL_OK, xcoll_comm_create_mpi(MPI_COMM_WORLD, &cfg, &c2))) {
            TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(c2));
        }
    }

    /* --- a CUDA stream: unsupported without CUDA. (void *)2 is
     * cudaStreamPerThread, a valid stream handle where CUDA is built in, so
     * a CUDA build may also accept it and run the call on host buffers. --- */
    {
        for (int i = 0; i < 4; i++)
            sbuf[i] = 1;
        xcoll_status_t st = xcoll_allreduce(sbuf, rbuf, 4, XCOLL_INT32, XCOLL_SUM, comm, (void *)2);
        if (st == XCOLL_OK && rbuf[0] != size)
            tc_fail("allreduce on a stream gave %d, expected %d", rbuf[0], size);
        else if (st != XCOLL_OK && st != XCOLL_ERR_UNSUPPORTED)
            tc_fail("allreduce with a stream returned %d (%s), expected XCOLL_ERR_UNSUPPORTED or "
                    "XCOLL_OK", (int)st, xcoll_strerror(st));
        else
            tc_pass();
    }

    /* --- library helpers --- */
    for (int s = -20; s <= 5; s++) {
        const char *m = xcoll_strerror((xcoll_status_t)s);
        if (m == NULL || m[0] == '\0')
            tc_fail("xcoll_strerror(%d) is %s", s, m == NULL ? "NULL" : "empty");
        else
            tc_pass();
    }
    if (xcoll_version() == NULL || xcoll_dtype_size(BAD_DTYPE) != 0 ||
        xcoll_dtype_name(BAD_DTYPE) == NULL || xcoll_op_name(BAD_OP) == NULL ||
        strcmp(xcoll_dtype_name(BAD_DTYPE), "invalid") != 0 ||
        strcmp(xcoll_op_name(BAD_OP), "invalid") != 0)
        tc_fail("version/dtype_size/dtype_name/op_name mishandle invalid input");
    else
        tc_pass();
    for (size_t d = 0; d < TC_NUM_DTYPES; d++)
        if (xcoll_dtype_size(tc_all_dtypes[d]) != tc_dtype_size(tc_all_dtypes[d]))
            tc_fail("xcoll_dtype_size(%s) = %zu, expected %zu", xcoll_dtype_name(tc_all_dtypes[d]),
                    xcoll_dtype_size(tc_all_dtypes[d]), tc_dtype_size(tc_all_dtypes[d]));

    /* --- zero counts with NULL buffers are fine --- */
    TC_EXPECT(XCOLL_OK, xcoll_allreduce(NULL, NULL, 0, XCOLL_INT32, XCOLL_SUM, comm, NULL));
    TC_EXPECT(XCOLL_OK, xcoll_bcast(NULL, 0, XCOLL_INT32, 0, comm, NULL));

    /* --- after all that, the communicator still works --- */
    for (int i = 0; i < 64; i++)
        sbuf[i] = rank + i;
    if (TC_EXPECT(XCOLL_OK, xcoll_allreduce(sbuf, rbuf, 64, XCOLL_INT32, XCOLL_SUM, comm, NULL))) {
        int bad = 0;
        for (int i = 0; i < 64 && !bad; i++) {
            int32_t e = size * (size - 1) / 2 + size * i;
            if (rbuf[i] != e) {
                tc_fail("final allreduce: index %d got %d expected %d", i, rbuf[i], e);
                bad = 1;
            }
        }
        if (!bad)
            tc_pass();
    }
    TC_EXPECT(XCOLL_OK, xcoll_barrier(comm));
    TC_EXPECT(XCOLL_OK, xcoll_comm_destroy(comm));
    return tc_finish();
}
