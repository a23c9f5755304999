/*
 * dropin.c - the part of the MPI drop-ins that does not depend on how they
 * are plugged in: names, the translation of MPI arguments into xcoll
 * arguments, and the logger.
 */
#include <mpi.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dropin.h"

static const char *const coll_names[XCMPI_NCOLLS] = {
    "allreduce", "bcast",      "reduce",    "allgather", "reduce_scatter_block",
    "reduce_scatter", "alltoall", "gather", "scatter",  "barrier",
    "allgatherv", "alltoallv", "gatherv", "scatterv"};

static const char *const icoll_names[XCMPI_NCOLLS] = {
    "iallreduce", "ibcast",      "ireduce",    "iallgather", "ireduce_scatter_block",
    "ireduce_scatter", "ialltoall", "igather", "iscatter",  "ibarrier",
    "iallgatherv", "ialltoallv", "igatherv", "iscatterv"};

const char *xcmpi_coll_name(xcmpi_coll_t coll, int nonblocking)
{
    if ((int)coll < 0 || coll >= XCMPI_NCOLLS)
        return "invalid";
    return nonblocking ? icoll_names[coll] : coll_names[coll];
}

/* The forms one word of a colls list names, or 0 if it names none. */
static xcmpi_mask_t word_forms(const char *word)
{
    xcmpi_mask_t blocking = 0;
    int c;
    if (strcasecmp(word, "all") == 0)
        return XCMPI_ALL_FORMS;
    if (strcasecmp(word, "default") == 0)
        return XCMPI_DEFAULT_FORMS;
    if (strcasecmp(word, "none") == 0)
        return 0;
    for (c = 0; c < XCMPI_NCOLLS; c++)
        blocking |= XCMPI_BIT(c, 0);
    if (strcasecmp(word, "blocking") == 0)
        return blocking;
    if (strcasecmp(word, "nonblocking") == 0)
        return blocking << XCMPI_NCOLLS;
    for (c = 0; c < XCMPI_NCOLLS; c++) {
        if (strcasecmp(word, coll_names[c]) == 0)
            return XCMPI_BIT(c, 0) | XCMPI_BIT(c, 1);
        if (strcasecmp(word, icoll_names[c]) == 0)
            return XCMPI_BIT(c, 1);
    }
    return 0;
}

int xcmpi_parse_colls(const char *list, xcmpi_mask_t *mask, char *bad, size_t badlen)
{
    char word[64];
    const char *p = list;
    *mask = 0;
    if (bad != NULL && badlen > 0)
        bad[0] = '\0';
    if (list == NULL)
        return 0;
    while (*p != '\0') {
        size_t n = strcspn(p, ", \t");
        if (n > 0) {
            xcmpi_mask_t forms;
            if (n >= sizeof(word))
                n = sizeof(word) - 1;
            memcpy(word, p, n);
            word[n] = '\0';
            forms = word_forms(word);
            if (forms == 0 && strcasecmp(word, "none") != 0) {
                if (bad != NULL && badlen > 0)
                    snprintf(bad, badlen, "%s", word);
                return -1;
            }
            *mask |= forms;
        }
        p += n;
        p += strspn(p, ", \t");
    }
    return 0;
}

/* --- logging ------------------------------------------------------------------ */

int xcmpi_log_level = XCMPI_LOG_WARN;
static int log_rank = -1;
static int log_rank_set;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void xcmpi_log_init(int verbose)
{
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                            "SLURM_PROCID"};
    const char *env = getenv("XCOLL_LOG");
    size_t i;
    xcmpi_log_level = XCMPI_LOG_WARN;
    if (env != NULL && *env != '\0') {
        if (strcasecmp(env, "error") == 0)
            xcmpi_log_level = XCMPI_LOG_ERROR;
        else if (strcasecmp(env, "info") == 0)
            xcmpi_log_level = XCMPI_LOG_INFO;
        else if (strcasecmp(env, "debug") == 0 || strcasecmp(env, "trace") == 0)
            xcmpi_log_level = XCMPI_LOG_DEBUG;
    }
    if (verbose >= 2 && xcmpi_log_level < XCMPI_LOG_DEBUG)
        xcmpi_log_level = XCMPI_LOG_DEBUG;
    else if (verbose >= 1 && xcmpi_log_level < XCMPI_LOG_INFO)
        xcmpi_log_level = XCMPI_LOG_INFO;
    for (i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]) && !log_rank_set && log_rank < 0;
         i++) {
        env = getenv(rank_vars[i]);
        if (env != NULL && *env >= '0' && *env <= '9')
            log_rank = atoi(env);
    }
}

void xcmpi_log_set_rank(int rank)
{
    log_rank = rank;
    log_rank_set = 1;
}

void xcmpi_log_write(int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    if (level < XCMPI_LOG_ERROR || level > XCMPI_LOG_DEBUG)
        level = XCMPI_LOG_DEBUG;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* one fprintf per line, so lines of different ranks never interleave */
    fprintf(stderr, "[xcoll r%d] %s: %s\n", log_rank, level_names[level], msg);
}

/* --- translating a call -------------------------------------------------------- */

/* Only what the verdict reads is set here: the buffers' descriptions
 * (call->send, call->recv) wait for xcmpi_start, which a call that goes
 * back never reaches. */
static void plan_init(xcmpi_call_t *call, xcmpi_coll_t coll)
{
    memset(&call->args, 0, sizeof(call->args));
    memset(&call->vsend, 0, sizeof(call->vsend));
    memset(&call->vrecv, 0, sizeof(call->vrecv));
    call->vstarted = 0;
    call->send_side.used = call->send_side.bound = 0;
    call->recv_side.used = call->recv_side.bound = 0;
    call->permanent = 1;
    call->coll = coll;
    call->args.dtype = XCOLL_UINT8;
    call->args.op = XCOLL_SUM;
}

static void vside_unpack(xcmpi_call_t *call);

void xcmpi_call_fini(xcmpi_call_t *call)
{
    if (call->vstarted && call->vrecv.staging != NULL)
        vside_unpack(call);
    free(call->vsend.bytes);
    free(call->vsend.staging);
    free(call->vrecv.bytes);
    free(call->vrecv.staging);
    if (call->vsend.tm != NULL)
        xcmpi_typemap_put(call->vsend.tm);
    if (call->vrecv.tm != NULL)
        xcmpi_typemap_put(call->vrecv.tm);
    memset(&call->vsend, 0, sizeof(call->vsend));
    memset(&call->vrecv, 0, sizeof(call->vrecv));
    call->vstarted = 0;
    if (call->send_side.bound)
        xcmpi_buf_fini(&call->send);
    if (call->recv_side.bound)
        xcmpi_buf_fini(&call->recv);
    call->send_side.bound = call->recv_side.bound = 0;
}

static const char *const bad_type = "invalid datatype (MPI reports the error)";
const char xcmpi_plan_failed[] = "out of memory describing a datatype";

/* Why a valid-looking type has no map: MPI_DATATYPE_NULL is erroneous
 * (MPI reports it, on every rank that passes it); anything else is this
 * rank running out of memory. */
static const char *no_map(xcmpi_call_t *call, MPI_Datatype dtype)
{
    call->permanent = 0;
    if (dtype == MPI_DATATYPE_NULL)
        return bad_type;
    xcmpi_error("cannot describe a datatype (out of memory?)");
    return xcmpi_plan_failed;
}
static const char *const bad_count = "negative count (MPI reports the error)";
static const char *const bad_root = "root out of range (MPI reports the error)";
static const char *const bad_in_place =
    "MPI_IN_PLACE on a rank other than the root (MPI reports the error)";
static const char *const sizes_differ = "send and receive sizes differ (MPI reports the error)";

/* The bytes of count elements of dtype; NULL, or why not (erroneous). */
static const char *data_bytes(xcmpi_call_t *call, MPI_Datatype dtype, int count,
                              size_t *bytes)
{
    xcmpi_typemap_t *tm;
    if (count < 0)
        return bad_count;
    if ((tm = xcmpi_typemap_get(dtype)) == NULL)
        return no_map(call, dtype);
    *bytes = (size_t)count * tm->size;
    call->permanent &= tm->named;
    xcmpi_typemap_put(tm);
    return NULL;
}

/* A call that moves no bytes goes to MPI, which returns at once (Open MPI
 * and MPICH check the arguments and leave); through xcoll it would cost a
 * round of messages. Every rank sees the same zero: the counts and type
 * signatures that decide it must match across ranks. */
static const char *const no_data = "moves no data (MPI returns at once)";

/* data_bytes, for a side that every rank's must match: none is no_data. */
static const char *moved_bytes(xcmpi_call_t *call, MPI_Datatype dtype, int count, size_t *bytes)
{
    const char *why = data_bytes(call, dtype, count, bytes);
    return why == NULL && *bytes == 0 ? no_data : why;
}

/* Records one side of the call: count elements of dtype at buf. How it is
 * described to xcoll (an address, or a layout) is this rank's own affair
 * and waits for xcmpi_start: never a reason to pass the call back. */
static const char *side(xcmpi_call_t *call, xcmpi_buf_t *b, const void *buf, size_t count,
                        MPI_Datatype dtype, int is_send)
{
    xcmpi_side_t *sd = is_send ? &call->send_side : &call->recv_side;
    (void)b;
    sd->buf = buf;
    sd->count = count;
    sd->dtype = dtype;
    sd->used = 1;
    return NULL;
}

/* Describes a recorded side to xcoll; NULL, or why it cannot be. */
static const char *bind_side(xcmpi_call_t *call, int is_send)
{
    xcmpi_side_t *sd = is_send ? &call->send_side : &call->recv_side;
    xcmpi_buf_t *b = is_send ? &call->send : &call->recv;
    xcmpi_typemap_t *tm;
    void *contig;
    int rc;
    if (!sd->used)
        return NULL;
    if ((tm = xcmpi_typemap_get(sd->dtype)) == NULL)
        return bad_type;
    rc = xcmpi_buf_init(b, tm, sd->buf, sd->count, &contig);
    xcmpi_typemap_put(tm);
    if (rc < 0)
        return "out of memory, or the buffer's size overflows";
    sd->bound = 1;
    if (is_send) {
        call->args.sendbuf = contig;
        call->args.send_layout = rc > 0 ? &b->layout : NULL;
    } else {
        call->args.recvbuf = contig;
        call->args.recv_layout = rc > 0 ? &b->layout : NULL;
    }
    return NULL;
}

/* A reduction's element type and op, from the type signature and the op:
 * the same verdict on every rank. */
static const char *reduce_args(xcmpi_call_t *call, MPI_Datatype dtype, int count, MPI_Op op)
{
    xcmpi_typemap_t *tm;
    int d, bitwise = 0;
    size_t n;
    if (op == MPI_SUM)
        call->args.op = XCOLL_SUM;
    else if (op == MPI_PROD)
        call->args.op = XCOLL_PROD;
    else if (op == MPI_MIN)
        call->args.op = XCOLL_MIN;
    else if (op == MPI_MAX)
        call->args.op = XCOLL_MAX;
    else if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) {
        call->args.op = op == MPI_BAND ? XCOLL_BAND : op == MPI_BOR ? XCOLL_BOR : XCOLL_BXOR;
        bitwise = 1;
    } else
        return "op is not one of SUM, PROD, MIN, MAX, BAND, BOR, BXOR "
               "(user op, MINLOC/MAXLOC, logical op or invalid)";
    if (count < 0)
        return bad_count;
    if (count == 0)
        return no_data;
    if ((tm = xcmpi_typemap_get(dtype)) == NULL)
        return no_map(call, dtype);
    d = tm->xdtype;
    n = tm->nbasic;
    call->permanent &= tm->named;
    /* a derived type with a predefined op: the standard lets an MPI refuse
     * it (MPI-3.1 5.9.2; Open MPI 4.1 returns MPI_ERR_OP, MPICH reduces),
     * so no speed rule may hand it back: whether it works must not depend
     * on its size (xcmpi_declined, and xcoll's own table) */
    call->args.no_fallback = !tm->named;
    xcmpi_typemap_put(tm);
    if (d < 0)
        return "datatype is not made of one basic type xcoll reduces "
               "(8/32/64-bit integers, float, double)";
    if (bitwise && (d == XCOLL_FLOAT32 || d == XCOLL_FLOAT64))
        return "bitwise op on a floating-point type (MPI reports the error)";
    call->args.dtype = (xcoll_dtype_t)d;
    call->args.count = (size_t)count * n;
    return NULL;
}

const char *xcmpi_plan_allreduce(xcmpi_call_t *call, const void *sbuf, void *rbuf, int count,
                                 MPI_Datatype dtype, MPI_Op op)
{
    const char *why;
    plan_init(call, XCMPI_ALLREDUCE);
    call->args.coll = XCOLL_COLL_ALLREDUCE;
    if ((why = reduce_args(call, dtype, count, op)) != NULL)
        return why;
    if (sbuf == MPI_IN_PLACE)
        call->args.sendbuf = XCOLL_IN_PLACE;
    else if ((why = side(call, &call->send, sbuf, (size_t)count, dtype, 1)) != NULL)
        return why;
    return side(call, &call->recv, rbuf, (size_t)count, dtype, 0);
}

const char *xcmpi_plan_bcast(xcmpi_call_t *call, void *buf, int count, MPI_Datatype dtype,
                             int root, int size)
{
    const char *why;
    plan_init(call, XCMPI_BCAST);
    call->args.coll = XCOLL_COLL_BCAST;
    call->args.root = root;
    if (root < 0 || root >= size)
        return bad_root;
    if ((why = moved_bytes(call, dtype, count, &call->args.count)) != NULL)
        return why;
    return side(call, &call->recv, buf, (size_t)count, dtype, 0);
}

const char *xcmpi_plan_reduce(xcmpi_call_t *call, const void *sbuf, void *rbuf, int count,
                              MPI_Datatype dtype, MPI_Op op, int root, int rank, int size)
{
    const char *why;
    plan_init(call, XCMPI_REDUCE);
    call->args.coll = XCOLL_COLL_REDUCE;
    call->args.root = root;
    if (root < 0 || root >= size)
        return bad_root;
    if ((why = reduce_args(call, dtype, count, op)) != NULL)
        return why;
    if (sbuf == MPI_IN_PLACE) {
        if (rank != root)
            return bad_in_place;
        call->args.sendbuf = XCOLL_IN_PLACE;
    } else if ((why = side(call, &call->send, sbuf, (size_t)count, dtype, 1)) != NULL) {
        return why;
    }
    if (rank != root)
        return NULL;
    return side(call, &call->recv, rbuf, (size_t)count, dtype, 0);
}

/* The block bytes of a collective whose send side must carry what the
 * receive side takes; in place, only the receive side counts. */
static const char *matching_bytes(xcmpi_call_t *call, const void *sbuf, int scount,
                                  MPI_Datatype sdtype, int rcount, MPI_Datatype rdtype,
                                  size_t *bytes)
{
    const char *why;
    size_t sbytes;
    if ((why = moved_bytes(call, rdtype, rcount, bytes)) != NULL)
        return why;
    if (sbuf == MPI_IN_PLACE)
        return NULL;
    if ((why = data_bytes(call, sdtype, scount, &sbytes)) != NULL)
        return why;
    return sbytes == *bytes ? NULL : sizes_differ;
}

/* Both sides of a collective whose receive side (and, unless in place,
 * send side) holds size blocks (or one): allgather, alltoall, gathers. */
static const char *both_sides(xcmpi_call_t *call, const void *sbuf, int scount,
                              MPI_Datatype sdtype, size_t sblocks, void *rbuf, int rcount,
                              MPI_Datatype rdtype, size_t rblocks)
{
    const char *why;
    if (sbuf == MPI_IN_PLACE)
        call->args.sendbuf = XCOLL_IN_PLACE;
    else if ((why = side(call, &call->send, sbuf, (size_t)scount * sblocks, sdtype, 1)) != NULL)
        return why;
    return side(call, &call->recv, rbuf, (size_t)rcount * rblocks, rdtype, 0);
}

const char *xcmpi_plan_allgather(xcmpi_call_t *call, const void *sbuf, int scount,
                                 MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                                 int size)
{
    const char *why;
    plan_init(call, XCMPI_ALLGATHER);
    call->args.coll = XCOLL_COLL_ALLGATHER;
    if ((why = matching_bytes(call, sbuf, scount, sdtype, rcount, rdtype, &call->args.count)) != NULL)
        return why;
    return both_sides(call, sbuf, scount, sdtype, 1, rbuf, rcount, rdtype, (size_t)size);
}

const char *xcmpi_plan_reduce_scatter_block(xcmpi_call_t *call, const void *sbuf, void *rbuf,
                                            int rcount, MPI_Datatype dtype, MPI_Op op, int size)
{
    const char *why;
    plan_init(call, XCMPI_REDUCE_SCATTER_BLOCK);
    call->args.coll = XCOLL_COLL_REDUCE_SCATTER;
    if ((why = reduce_args(call, dtype, rcount, op)) != NULL)
        return why;
    if (sbuf == MPI_IN_PLACE) {
        /* the whole input is in recvbuf; the result lands in its first block */
        call->args.sendbuf = XCOLL_IN_PLACE;
        return side(call, &call->recv, rbuf, (size_t)rcount * (size_t)size, dtype, 0);
    }
    if ((why = side(call, &call->send, sbuf, (size_t)rcount * (size_t)size, dtype, 1)) != NULL)
        return why;
    return side(call, &call->recv, rbuf, (size_t)rcount, dtype, 0);
}

const char *xcmpi_plan_reduce_scatter(xcmpi_call_t *call, const void *sbuf, void *rbuf,
                                      const int *rcounts, MPI_Datatype dtype, MPI_Op op, int size)
{
    const char *why;
    int i;
    plan_init(call, XCMPI_REDUCE_SCATTER);
    call->permanent = 0; /* the verdict reads the counts array, which no key holds */
    if (rcounts == NULL || size < 1)
        return "no receive counts (MPI reports the error)";
    for (i = 1; i < size; i++)
        if (rcounts[i] != rcounts[0])
            return "receive counts differ between ranks (xcoll's reduce_scatter takes equal "
                   "blocks)";
    why = xcmpi_plan_reduce_scatter_block(call, sbuf, rbuf, rcounts[0], dtype, op, size);
    call->coll = XCMPI_REDUCE_SCATTER;
    call->permanent = 0; /* the verdict read the counts array, which no key holds */
    return why;
}

const char *xcmpi_plan_alltoall(xcmpi_call_t *call, const void *sbuf, int scount,
                                MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                                int size)
{
    const char *why;
    plan_init(call, XCMPI_ALLTOALL);
    call->args.coll = XCOLL_COLL_ALLTOALL;
    if ((why = matching_bytes(call, sbuf, scount, sdtype, rcount, rdtype, &call->args.count)) != NULL)
        return why;
    return both_sides(call, sbuf, scount, sdtype, (size_t)size, rbuf, rcount, rdtype,
                      (size_t)size);
}

const char *xcmpi_plan_gather(xcmpi_call_t *call, const void *sbuf, int scount, MPI_Datatype sdtype,
                              void *rbuf, int rcount, MPI_Datatype rdtype, int root, int rank,
                              int size)
{
    const char *why;
    plan_init(call, XCMPI_GATHER);
    call->args.coll = XCOLL_COLL_GATHER;
    call->args.root = root;
    if (root < 0 || root >= size)
        return bad_root;
    if (rank == root) {
        /* the receive side is significant only at the root */
        if ((why = matching_bytes(call, sbuf, scount, sdtype, rcount, rdtype, &call->args.count)) !=
            NULL)
            return why;
        return both_sides(call, sbuf, scount, sdtype, 1, rbuf, rcount, rdtype, (size_t)size);
    }
    if (sbuf == MPI_IN_PLACE)
        return bad_in_place;
    if ((why = moved_bytes(call, sdtype, scount, &call->args.count)) != NULL)
        return why;
    return side(call, &call->send, sbuf, (size_t)scount, sdtype, 1);
}

const char *xcmpi_plan_scatter(xcmpi_call_t *call, const void *sbuf, int scount,
                               MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                               int root, int rank, int size)
{
    const char *why;
    size_t rbytes;
    plan_init(call, XCMPI_SCATTER);
    call->args.coll = XCOLL_COLL_SCATTER;
    call->args.root = root;
    if (root < 0 || root >= size)
        return bad_root;
    if (rank != root) {
        if (rbuf == MPI_IN_PLACE)
            return bad_in_place;
        if ((why = moved_bytes(call, rdtype, rcount, &call->args.count)) != NULL)
            return why;
        return side(call, &call->recv, rbuf, (size_t)rcount, rdtype, 0);
    }
    /* the send side is significant only at the root; in place there, the
     * receive side is not */
    if ((why = moved_bytes(call, sdtype, scount, &call->args.count)) != NULL)
        return why;
    if (rbuf != MPI_IN_PLACE) {
        if ((why = data_bytes(call, rdtype, rcount, &rbytes)) != NULL)
            return why;
        if (rbytes != call->args.count)
            return sizes_differ;
    }
    if ((why = side(call, &call->send, sbuf, (size_t)scount * (size_t)size, sdtype, 1)) != NULL)
        return why;
    if (rbuf == MPI_IN_PLACE) {
        call->args.recvbuf = (void *)(uintptr_t)XCOLL_IN_PLACE;
        return NULL;
    }
    return side(call, &call->recv, rbuf, (size_t)rcount, rdtype, 0);
}

/* --- the v-variants --------------------------------------------------------------- */

static const char *const no_counts = "no counts or displacements (MPI reports the error)";

/* Records a v side: the buffer and type (as side() does) and its blocks.
 * Erroneous counts go back for MPI to report. *bytes (if not NULL) gets
 * the bytes of block `which`. */
static const char *vside(xcmpi_call_t *call, int is_send, const void *buf, const int *counts,
                         const int *displs, int nblocks, MPI_Datatype dtype, int which,
                         size_t *bytes)
{
    xcmpi_vside_t *v = is_send ? &call->vsend : &call->vrecv;
    const char *why;
    size_t unused;
    int j;
    if (counts == NULL || displs == NULL)
        return no_counts;
    for (j = 0; j < nblocks; j++)
        if (counts[j] < 0)
            return bad_count;
    /* also checks the type */
    if ((why = data_bytes(call, dtype, which >= 0 ? counts[which] : 0,
                          bytes != NULL ? bytes : &unused)) != NULL)
        return why;
    v->counts = counts;
    v->displs = displs;
    v->nblocks = nblocks;
    return side(call, is_send ? &call->send : &call->recv, buf, 0, dtype, is_send);
}

/* A scalar side (count elements at buf) as a v side of one block. */
static const char *vscalar(xcmpi_call_t *call, int is_send, const void *buf, int count,
                           MPI_Datatype dtype, size_t *bytes)
{
    xcmpi_vside_t *v = is_send ? &call->vsend : &call->vrecv;
    v->one_count = count;
    v->zero = 0;
    return vside(call, is_send, buf, &v->one_count, &v->zero, 1, dtype, 0, bytes);
}

/* Where block j of a side starts (its first element, not its data). */
static char *block_at(const xcmpi_side_t *sd, const xcmpi_typemap_t *tm, const xcmpi_vside_t *v,
                      int j)
{
    return (char *)(uintptr_t)sd->buf + (MPI_Aint)v->displs[j] * tm->extent;
}

/* Packs (is_pack) block j into staging at its offset, or unpacks it back;
 * 0, or -1 when the type cannot be walked (out of memory). */
static int stage_block(xcmpi_typemap_t *tm, const xcmpi_side_t *sd, xcmpi_vside_t *v, int j,
                       int is_pack)
{
    xcmpi_buf_t b;
    void *contig;
    int rc = xcmpi_buf_init(&b, tm, block_at(sd, tm, v, j), (size_t)v->counts[j], &contig);
    if (rc < 0)
        return -1;
    if (rc == 0 && is_pack)
        memcpy(v->staging + v->offs[j], contig, v->bytes[j]);
    else if (rc == 0)
        memcpy(contig, v->staging + v->offs[j], v->bytes[j]);
    else if (is_pack)
        rc = b.layout.pack(b.layout.ctx, 0, v->staging + v->offs[j], v->bytes[j]);
    else
        rc = b.layout.unpack(b.layout.ctx, 0, v->staging + v->offs[j], v->bytes[j]);
    xcmpi_buf_fini(&b);
    return rc == 0 ? 0 : -1;
}

/* Describes a recorded v side to xcoll: *base and the bytes and offsets
 * of its blocks. A contiguous type is used where it lies (offsets from
 * the lowest block); another is staged, packed now when it is read
 * (`input`: a send side, or a receive side that holds input in place). */
static const char *bind_vside(xcmpi_call_t *call, int is_send, int input, void **base)
{
    xcmpi_side_t *sd = is_send ? &call->send_side : &call->recv_side;
    xcmpi_vside_t *v = is_send ? &call->vsend : &call->vrecv;
    xcmpi_typemap_t *tm;
    const char *why = NULL;
    size_t total = 0;
    char *lo = NULL;
    int j;
    if (!sd->used)
        return NULL;
    if ((tm = xcmpi_typemap_get(sd->dtype)) == NULL)
        return bad_type;
    v->bytes = malloc(2 * (size_t)v->nblocks * sizeof(size_t) + 1);
    if (v->bytes == NULL) {
        xcmpi_typemap_put(tm);
        return "out of memory";
    }
    v->offs = v->bytes + v->nblocks;
    for (j = 0; j < v->nblocks; j++) {
        char *at = block_at(sd, tm, v, j) + tm->true_lb;
        v->bytes[j] = (size_t)v->counts[j] * tm->size;
        v->offs[j] = total;
        total += v->bytes[j];
        if (v->bytes[j] > 0 && (lo == NULL || at < lo))
            lo = at;
    }
    /* an element's data in one piece, and elements abutting */
    if (tm->contiguous && (MPI_Aint)tm->size == tm->extent) {
        /* the blocks where they are: offsets from the lowest one */
        for (j = 0; j < v->nblocks; j++)
            v->offs[j] = v->bytes[j] > 0
                             ? (size_t)(block_at(sd, tm, v, j) + tm->true_lb - lo)
                             : 0;
        *base = lo != NULL ? lo : (void *)(uintptr_t)sd->buf;
    } else {
        v->staging = malloc(total + 1);
        if (v->staging == NULL)
            why = "out of memory staging a derived datatype";
        for (j = 0; why == NULL && input && j < v->nblocks; j++)
            if (v->bytes[j] > 0 && stage_block(tm, sd, v, j, 1) != 0)
                why = "out of memory packing a derived datatype";
        *base = v->staging;
        v->tm = tm; /* the unpack's, released with the call */
        return why;
    }
    xcmpi_typemap_put(tm);
    return why;
}

/* After xcoll is done: a staged receive side back into the buffer. */
static void vside_unpack(xcmpi_call_t *call)
{
    int j;
    for (j = 0; j < call->vrecv.nblocks; j++)
        if (call->vrecv.bytes[j] > 0 &&
            stage_block(call->vrecv.tm, &call->recv_side, &call->vrecv, j, 0) != 0)
            xcmpi_error("%s: unpacking block %d of a derived datatype failed",
                        xcmpi_coll_name(call->coll, 0), j);
}

/* Both sides of a planned v-variant described to xcoll (bytes, as
 * XCOLL_UINT8 elements). */
static const char *bind_vcall(xcmpi_call_t *call)
{
    xcoll_args_t *a = &call->args;
    void *sbase = NULL, *rbase = NULL;
    const int in_place = a->sendbuf == XCOLL_IN_PLACE;
    const char *why;
    if ((why = bind_vside(call, 1, 1, &sbase)) != NULL ||
        (why = bind_vside(call, 0, in_place, &rbase)) != NULL)
        return why;
    if (call->send_side.used) {
        a->sendbuf = sbase;
        a->sendcounts = call->vsend.bytes;
        a->sdispls = call->vsend.offs;
    }
    if (call->recv_side.used) {
        a->recvbuf = rbase;
        a->recvcounts = call->vrecv.bytes;
        a->rdispls = call->vrecv.offs;
    }
    /* a scalar side's one block is the call's count */
    if (call->coll == XCMPI_ALLGATHERV || call->coll == XCMPI_GATHERV)
        a->count = call->send_side.used ? call->vsend.bytes[0] : 0;
    else if (call->coll == XCMPI_SCATTERV)
        a->count = call->recv_side.used ? call->vrecv.bytes[0] : 0;
    return NULL;
}

const char *xcmpi_plan_allgatherv(xcmpi_call_t *call, const void *sbuf, int scount,
                                  MPI_Datatype sdtype, void *rbuf, const int *rcounts,
                                  const int *displs, MPI_Datatype rdtype, int rank, int size)
{
    const char *why;
    size_t rbytes, sbytes;
    plan_init(call, XCMPI_ALLGATHERV);
    call->permanent = 0; /* the verdict read the counts arrays, which no key holds */
    call->args.coll = XCOLL_COLL_ALLGATHERV;
    if ((why = vside(call, 0, rbuf, rcounts, displs, size, rdtype, rank, &rbytes)) != NULL)
        return why;
    if (sbuf == MPI_IN_PLACE) {
        call->args.sendbuf = XCOLL_IN_PLACE;
        return NULL;
    }
    if ((why = vscalar(call, 1, sbuf, scount, sdtype, &sbytes)) != NULL)
        return why;
    return sbytes == rbytes ? NULL : sizes_differ;
}

const char *xcmpi_plan_alltoallv(xcmpi_call_t *call, const void *sbuf, const int *scounts,
                                 const int *sdispls, MPI_Datatype sdtype, void *rbuf,
                                 const int *rcounts, const int *rdispls, MPI_Datatype rdtype,
                                 int size)
{
    const char *why;
    plan_init(call, XCMPI_ALLTOALLV);
    call->permanent = 0;
    call->args.coll = XCOLL_COLL_ALLTOALLV;
    if ((why = vside(call, 0, rbuf, rcounts, rdispls, size, rdtype, -1, NULL)) != NULL)
        return why;
    if (sbuf == MPI_IN_PLACE) {
        call->args.sendbuf = XCOLL_IN_PLACE;
        return NULL;
    }
    return vside(call, 1, sbuf, scounts, sdispls, size, sdtype, -1, NULL);
}

/* A gatherv (gather: 1) or scatterv: the root's blocks on one side, every
 * rank's own block on the other; in place at the root the own block is
 * among the blocks. */
static const char *plan_rooted_v(xcmpi_call_t *call, int gather, const void *blocks,
                                 const int *counts, const int *displs, MPI_Datatype btype,
                                 const void *own, int count, MPI_Datatype otype, int root,
                                 int rank, int size)
{
    const char *why;
    size_t bbytes, obytes;
    plan_init(call, gather ? XCMPI_GATHERV : XCMPI_SCATTERV);
    call->permanent = 0;
    call->args.coll = gather ? XCOLL_COLL_GATHERV : XCOLL_COLL_SCATTERV;
    call->args.root = root;
    if (root < 0 || root >= size)
        return bad_root;
    if (rank != root) {
        /* the blocks are significant only at the root */
        if (own == MPI_IN_PLACE)
            return bad_in_place;
        return vscalar(call, gather, own, count, otype, NULL);
    }
    if ((why = vside(call, !gather, blocks, counts, displs, size, btype, root, &bbytes)) != NULL)
        return why;
    if (own == MPI_IN_PLACE) {
        if (gather)
            call->args.sendbuf = XCOLL_IN_PLACE;
        else
            call->args.recvbuf = (void *)(uintptr_t)XCOLL_IN_PLACE;
        return NULL;
    }
    if ((why = vscalar(call, gather, own, count, otype, &obytes)) != NULL)
        return why;
    return bbytes == obytes ? NULL : sizes_differ;
}

const char *xcmpi_plan_gatherv(xcmpi_call_t *call, const void *sbuf, int scount,
                               MPI_Datatype sdtype, void *rbuf, const int *rcounts,
                               const int *displs, MPI_Datatype rdtype, int root, int rank,
                               int size)
{
    return plan_rooted_v(call, 1, rbuf, rcounts, displs, rdtype, sbuf, scount, sdtype, root, rank,
                         size);
}

const char *xcmpi_plan_scatterv(xcmpi_call_t *call, const void *sbuf, const int *scounts,
                                const int *displs, MPI_Datatype sdtype, void *rbuf, int rcount,
                                MPI_Datatype rdtype, int root, int rank, int size)
{
    return plan_rooted_v(call, 0, sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, rank,
                         size);
}

void xcmpi_plan_barrier(xcmpi_call_t *call)
{
    plan_init(call, XCMPI_BARRIER);
    call->args.coll = XCOLL_COLL_BARRIER;
}

int xcmpi_declined(const xcmpi_call_t *call, xcoll_comm_t comm, xcmpi_verdicts_t *memo)
{
    const xcoll_args_t *a = &call->args;
    uint64_t k0 = ((uint64_t)a->coll + 1) | (uint64_t)a->dtype << 8 | (uint64_t)a->op << 16 |
                  (uint64_t)(uint32_t)a->root << 24,
             k1 = a->count;
    unsigned i = (unsigned)(((k0 ^ k1 * 0x9E3779B97F4A7C15ULL) * 0xC2B2AE3D27D4EB4FULL) >> 58);
    int declined = 0;
    if (a->no_fallback)
        return 0; /* before the memo: its key does not tell derived types apart */
    if (memo->slot[i].key[0] == k0 && memo->slot[i].key[1] == k1)
        return memo->slot[i].declined;
    if (xcoll_declines(comm, a, &declined) != XCOLL_OK)
        return -1;
    memo->slot[i].key[0] = k0;
    memo->slot[i].key[1] = k1;
    memo->slot[i].declined = declined;
    return declined;
}

xcoll_status_t xcmpi_start(xcmpi_call_t *call, xcoll_comm_t comm, xcoll_request_t *req)
{
    const char *why;
    xcoll_status_t status;
    const int v = call->coll >= XCMPI_ALLGATHERV;
    if (v ? (why = bind_vcall(call)) != NULL
          : (why = bind_side(call, 1)) != NULL || (why = bind_side(call, 0)) != NULL) {
        xcmpi_error("%s: %s", xcmpi_coll_name(call->coll, 0), why);
        return XCOLL_ERR_INVALID_ARG;
    }
    status = xcoll_start(&call->args, comm, req);
    call->vstarted = v && status == XCOLL_OK;
    return status;
}

void xcmpi_describe(const xcmpi_call_t *c, char *buf, size_t len)
{
    const xcoll_args_t *a = &c->args;
    const char *in_place = a->sendbuf == XCOLL_IN_PLACE || a->recvbuf == XCOLL_IN_PLACE
                               ? ", in place"
                               : "";
    const char *packed = a->send_layout != NULL && a->recv_layout != NULL ? ", both sides packed"
                         : a->send_layout != NULL                         ? ", send side packed"
                         : a->recv_layout != NULL ? ", receive side packed"
                                                  : "";
    switch (c->coll) {
    case XCMPI_ALLREDUCE:
    case XCMPI_REDUCE_SCATTER_BLOCK:
    case XCMPI_REDUCE_SCATTER:
        snprintf(buf, len, "%zu x %s %s%s%s", a->count, xcoll_dtype_name(a->dtype),
                 xcoll_op_name(a->op), in_place, packed);
        break;
    case XCMPI_REDUCE:
        snprintf(buf, len, "%zu x %s %s, root %d%s%s", a->count, xcoll_dtype_name(a->dtype),
                 xcoll_op_name(a->op), a->root, in_place, packed);
        break;
    case XCMPI_BCAST:
    case XCMPI_GATHER:
    case XCMPI_SCATTER:
        snprintf(buf, len, "%zu bytes, root %d%s%s", a->count, a->root, in_place, packed);
        break;
    case XCMPI_ALLGATHER:
    case XCMPI_ALLTOALL:
        snprintf(buf, len, "%zu bytes per rank%s%s", a->count, in_place, packed);
        break;
    case XCMPI_ALLGATHERV:
    case XCMPI_ALLTOALLV:
    case XCMPI_GATHERV:
    case XCMPI_SCATTERV:
        snprintf(buf, len, "blocks of their own sizes%s%s%s", in_place,
                 c->vsend.staging != NULL || c->vrecv.staging != NULL ? ", staged" : "",
                 c->coll == XCMPI_GATHERV || c->coll == XCMPI_SCATTERV ? ", rooted" : "");
        break;
    default:
        snprintf(buf, len, "no data");
        break;
    }
}

/* --- the drop-in selection rules ------------------------------------------------ */

void xcmpi_config_fail(xcoll_config_t *cfg, const char *why)
{
    cfg->rules = "(this rank could not configure xcoll)";
    cfg->rules_source = why;
}

int xcmpi_config_rules(xcoll_config_t *cfg, const char *path, char **text)
{
    static char source[320];
    FILE *f;
    long n;
    *text = NULL;
    cfg->fallback = 1;
    cfg->rules = xcmpi_rules_builtin;
    cfg->rules_source = "drop-in defaults";
    if (path == NULL || *path == '\0')
        return 0;
    f = fopen(path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > (1L << 20) ||
        fseek(f, 0, SEEK_SET) != 0 || (*text = malloc((size_t)n + 1)) == NULL ||
        fread(*text, 1, (size_t)n, f) != (size_t)n) {
        xcmpi_error("XCOLL_MPI_TUNE_FILE=%s: cannot read it (%s); MPI serves every collective "
                    "on every rank",
                    path, f == NULL ? strerror(errno) : "read error or larger than 1 MiB");
        if (f != NULL)
            fclose(f);
        free(*text);
        *text = NULL;
        cfg->rules = NULL;
        return -1;
    }
    fclose(f);
    (*text)[n] = '\0';
    snprintf(source, sizeof(source), "XCOLL_MPI_TUNE_FILE=%s", path);
    cfg->rules = *text;
    cfg->rules_source = source;
    return 0;
}
