/*
 * xcoll.h - the one public header of xcoll, a library of MPI-style
 * collectives over communicators, moved by UCX.
 *
 * Conventions, true of every function below:
 *  - every function returns an xcoll_status_t; XCOLL_OK (0) is success and
 *    every failure is negative. A failure is logged once, with its reason,
 *    where it is detected (see XCOLL_LOG), so callers need not log it again.
 *  - every argument is checked; a bad one gives a status, never a crash.
 *  - counts are element counts (size_t), never bytes.
 *  - every rank of a communicator calls the same collectives in the same
 *    order with matching count, dtype, op and root (as in MPI).
 *  - threads: without a progress thread (xcoll_config_t.progress_thread)
 *    the library is not thread safe: call it from one thread per process,
 *    or serialise the calls. With one, the collectives, point-to-point
 *    calls, xcoll_test, xcoll_wait, xcoll_request_notify, xcoll_start and
 *    xcoll_declines may be called from any threads at once, on one
 *    communicator or several (one lock serialises them; the order in
 *    which two threads post on one communicator is the order the lock
 *    grants, so threads that post on one communicator must order their
 *    calls themselves, as every rank has to see the same sequence).
 *    Creating and destroying communicators must not overlap other xcoll
 *    calls. A request may be tested or waited for by one thread at a time.
 *    A communicator that spans nodes, or whose ranks UCX connects over
 *    TCP, also runs a thread of xcoll's own, the drainer (XCOLL_DRAIN=0
 *    turns it off), which changes none of the above: once the caller has
 *    stayed out of xcoll for a few ms it progresses UCX, which writes out
 *    what UCX still holds of messages already reported sent (a peer may
 *    be waiting for them); it never finishes a request or calls a
 *    callback.
 *
 * In-place operation: pass XCOLL_IN_PLACE as the send buffer (MPI style),
 * or pass the same pointer as send and receive buffer (NCCL style); each
 * collective documents where its data lives then.
 *
 * To create a communicator from an MPI communicator, include <mpi.h> before
 * this header: xcoll_comm_create_mpi() is then defined inline, so libxcoll
 * itself links against no MPI library and works under any MPI.
 */
#ifndef XCOLL_H
#define XCOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XCOLL_VERSION_MAJOR 0
#define XCOLL_VERSION_MINOR 1
#define XCOLL_VERSION_PATCH 0

/* Statuses. XCOLL_INPROGRESS is only ever returned by xcoll_test(); XCOLL_DECLINED
 * only on a communicator created with xcoll_config_t.fallback set. */
typedef enum {
    XCOLL_OK                 =   0,
    XCOLL_INPROGRESS         =   1,
    XCOLL_DECLINED           =   2, /* not an error: the selection table hands this call to the
                                       caller's own implementation (xcoll_config_t.fallback);
                                       nothing was posted */
    XCOLL_ERR_INVALID_ARG    =  -1, /* NULL pointer, bad peer, bad count... */
    XCOLL_ERR_INVALID_DTYPE  =  -2, /* not an xcoll_dtype_t */
    XCOLL_ERR_INVALID_OP     =  -3, /* not an xcoll_op_t, or bitwise op on a float type */
    XCOLL_ERR_INVALID_ROOT   =  -4, /* root outside [0, size) */
    XCOLL_ERR_INVALID_COMM   =  -5, /* NULL, never created, or already destroyed */
    XCOLL_ERR_OVERFLOW       =  -6, /* count * element size (* ranks) does not fit in size_t */
    XCOLL_ERR_NO_MEMORY      =  -7,
    XCOLL_ERR_TRANSPORT      =  -8, /* UCX or shared memory failed (corrupt, or could not be
                                     * set up on some rank); a lost peer is PEER_LOST */
    XCOLL_ERR_TIMEOUT        =  -9, /* the collective did not complete within the timeout;
                                       keep its buffers until the comm is destroyed */
    XCOLL_ERR_COMM_FAILED    = -10, /* an earlier collective failed, or a peer failed in this
                                     * one; destroy the communicator */
    XCOLL_ERR_TRUNCATED      = -11, /* a peer sent a different number of bytes than expected */
    XCOLL_ERR_BOOTSTRAP      = -12, /* the bootstrap allgather failed */
    XCOLL_ERR_UNSUPPORTED    = -13, /* valid request this build cannot serve (e.g. CUDA stream without CUDA) */
    XCOLL_ERR_INTERNAL       = -14,
    XCOLL_ERR_MISMATCH       = -15, /* with the call check on (xcoll_config_t.check): the ranks
                                     * called different collectives (or counts, types,
                                     * operators, roots); no data moved, the communicator
                                     * stays usable */
    XCOLL_ERR_PEER_LOST      = -16  /* a rank this call waits for is gone: the transport lost
                                     * its connection (its process or node died, or the
                                     * network to it failed), or another rank reported such a
                                     * loss; the log names it. Only ranks on other hosts are
                                     * watched (UCX peer error handling): a dead rank on this
                                     * host is found by the timeout alone. Destroy the
                                     * communicator */
} xcoll_status_t;

/* Element types. float16 is IEEE binary16, bfloat16 the upper half of a
 * float32; both are reduced in float32 and rounded to nearest-even. */
typedef enum {
    XCOLL_INT8 = 0,
    XCOLL_UINT8,
    XCOLL_INT32,
    XCOLL_UINT32,
    XCOLL_INT64,
    XCOLL_UINT64,
    XCOLL_FLOAT16,
    XCOLL_BFLOAT16,
    XCOLL_FLOAT32,
    XCOLL_FLOAT64,
    XCOLL_DTYPE_COUNT
} xcoll_dtype_t;

/* Reduction operators. AVG is the sum divided by the number of ranks
 * (integer division, truncating, for integer types). The sum is carried in
 * the element type, as SUM's is: an integer sum wraps, and a float16 sum
 * past 65504 is inf even where the average is not (to average such values,
 * divide each by the number of ranks and use SUM, as NCCL's AVG and torch's
 * ReduceOp.AVG do). BAND, BOR and BXOR are valid on integer types only. */
typedef enum {
    XCOLL_SUM = 0,
    XCOLL_PROD,
    XCOLL_MIN,
    XCOLL_MAX,
    XCOLL_AVG,
    XCOLL_BAND,
    XCOLL_BOR,
    XCOLL_BXOR,
    XCOLL_OP_COUNT
} xcoll_op_t;

/* The in-place marker for send buffers (MPI_IN_PLACE's role). */
#define XCOLL_IN_PLACE ((const void *)1)

typedef struct xcoll_comm_s    *xcoll_comm_t;
typedef struct xcoll_request_s *xcoll_request_t;

/* Where a communicator's buffers live. AUTO asks CUDA about every buffer
 * (cudaPointerGetAttributes, well under a microsecond); HOST and CUDA skip
 * the question, for callers that know. */
typedef enum {
    XCOLL_MEMORY_AUTO = 0, /* host, CUDA device or managed: found per buffer */
    XCOLL_MEMORY_HOST,     /* every buffer is host memory */
    XCOLL_MEMORY_CUDA      /* every buffer is CUDA device (or managed) memory */
} xcoll_memory_t;

/* Options for a communicator. Always start from xcoll_config_init(). */
typedef struct {
    /* Seconds a collective may wait without progress before it fails with
     * XCOLL_ERR_TIMEOUT; 0 waits forever, unless a rank on another host is
     * lost or a peer reports a failure (XCOLL_ERR_PEER_LOST or
     * XCOLL_ERR_COMM_FAILED within about a second). It then asks the other ranks where
     * they are, for a quarter of the timeout (0.2 to 2 s), and logs the
     * cause ("allreduce seq 100 (comm 1) timed out: rank 2 never entered
     * it") before it returns. A point-to-point call fails at once. Default:
     * the XCOLL_TIMEOUT environment variable, else 0. */
    double timeout_s;
    /* Default: the XCOLL_MEMORY environment variable (auto, host or cuda),
     * else XCOLL_MEMORY_AUTO. XCOLL_MEMORY_CUDA without a usable CUDA
     * device makes xcoll_comm_create fail with XCOLL_ERR_UNSUPPORTED. */
    xcoll_memory_t memory;
    /* Selection rules in the XCOLL_TUNE grammar (docs/TUNING.md), applied
     * after the built-in defaults and before XCOLL_TUNE_FILE and XCOLL_TUNE;
     * rules_source names them in logs and errors ("drop-in defaults").
     * Read during xcoll_comm_create only. Default NULL: none. */
    const char *rules;
    const char *rules_source;
    /* 1: the caller can run any call itself (the MPI drop-ins hand it to
     * MPI). A call whose selection rule picks the pseudo-algorithm "mpi"
     * then returns XCOLL_DECLINED without posting anything (no sequence
     * number is used, so ranks stay in step as long as all decline the
     * same calls: the rules depend only on collective, rank count and
     * message size). 0 (default): "mpi" is skipped like a declining
     * algorithm. */
    int fallback;
    /* 1: a thread of xcoll's own progresses this process's outstanding
     * operations (every communicator's) while the caller computes, so a
     * nonblocking collective completes without xcoll_test calls; one per
     * process, while any communicator that asked for it lives. When
     * nothing moves the thread sleeps until a peer's message wakes it
     * (UCX's event fd, a futex in shared memory). Waiting then sleeps
     * until the thread finishes the operation. Device buffers:
     * the thread makes its CUDA calls on its own current device, CUDA's
     * default one (use one visible device per process). Default: the
     * XCOLL_PROGRESS_THREAD environment variable (1 or 0), else 0. */
    int progress_thread;
    /* 1: every collective first compares what each rank called
     * (collective, count or bytes, datatype, operator, root; a v-variant
     * only its collective and root, as its counts differ by rank), and a
     * mismatch fails the call on every rank with XCOLL_ERR_MISMATCH and a
     * log line naming the ranks and their calls, where it would otherwise
     * hang or move wrong data; the communicator stays usable. Every rank
     * must set it alike (xcoll_comm_create fails otherwise). Costs one
     * small allgather per call (ceil(log2 P) messages of at most 32 P
     * bytes); device data is then staged through host memory. A call
     * handed back to the caller (fallback) is not checked. Default: the
     * XCOLL_CHECK environment variable (1 or 0), else 0. */
    int check;
} xcoll_config_t;

/* A launcher-neutral way to build a communicator: this process's rank, the
 * number of ranks, and a collective allgather of `bytes` bytes from every
 * rank into recvbuf (rank order). The callback must return 0 on success.
 * It is used only during xcoll_comm_create(). */
typedef struct {
    int rank;
    int size;
    int (*allgather)(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx);
    void *ctx;
} xcoll_bootstrap_t;

/* The collectives, numbered as xcoll_start() and xcoll_collective_name()
 * take them. */
typedef enum {
    XCOLL_COLL_ALLREDUCE = 0,
    XCOLL_COLL_BCAST,
    XCOLL_COLL_REDUCE,
    XCOLL_COLL_ALLGATHER,
    XCOLL_COLL_REDUCE_SCATTER,
    XCOLL_COLL_ALLTOALL,
    XCOLL_COLL_GATHER,
    XCOLL_COLL_SCATTER,
    XCOLL_COLL_BARRIER,
    XCOLL_COLL_ALLGATHERV,
    XCOLL_COLL_ALLTOALLV,
    XCOLL_COLL_GATHERV,
    XCOLL_COLL_SCATTERV,
    XCOLL_COLL_COUNT
} xcoll_coll_t;

/* A buffer that is not one contiguous range of memory (an MPI derived
 * datatype, say). xcoll sees it as `bytes` bytes in a fixed order, the
 * packed stream, and never touches its memory: pack() copies a range of
 * the stream out of the buffer, unpack() copies bytes into a range of it.
 * Both are called on the calling thread from inside xcoll calls, with
 * len > 0 and offset + len <= bytes; ranges come in any order, overlap
 * only when a reduction reads what it wrote before, and are each a small
 * part of the message when the algorithm cuts it into segments (staging
 * memory is what is in flight, not the whole buffer). They return 0 on
 * success; anything else fails the call with XCOLL_ERR_INVALID_ARG. The
 * layout and its ctx must stay valid until the call completes. */
typedef struct {
    size_t bytes;
    int (*pack)(void *ctx, size_t offset, void *dst, size_t len);
    int (*unpack)(void *ctx, size_t offset, const void *src, size_t len);
    void *ctx;
    /* An address inside the buffer's memory, or NULL. xcoll asks where it
     * lives: layouts are host memory only, and device memory behind one
     * is refused (XCOLL_ERR_UNSUPPORTED) rather than handed to pack. */
    const void *where;
} xcoll_layout_t;

/* Any collective, described as data (what xcoll_start takes). Fields are
 * those of the collective's own call below; unused ones are ignored. */
typedef struct {
    xcoll_coll_t coll;
    const void *sendbuf;      /* XCOLL_IN_PLACE as in the collective's own call */
    void *recvbuf;            /* for scatter: (void *)XCOLL_IN_PLACE at the root */
    size_t count;
    xcoll_dtype_t dtype;
    xcoll_op_t op;            /* reductions */
    int root;                 /* bcast, reduce, gather, scatter */
    void *stream;             /* NULL, or a cudaStream_t */
    /* Not NULL: that side of the call is read (send) or written (recv)
     * through the layout, whose bytes must be exactly what the collective
     * moves there (count elements, times the ranks for the whole-buffer
     * sides), and the buffer pointer is ignored, except that
     * XCOLL_IN_PLACE still means in place. Host memory only (a stream or
     * a device buffer with a layout is XCOLL_ERR_UNSUPPORTED); in place
     * is only ever XCOLL_IN_PLACE then, never equal pointers. */
    const xcoll_layout_t *send_layout;
    const xcoll_layout_t *recv_layout;
    /* The v-variants' per-rank counts and displacements (elements), as in
     * their own calls: allgatherv and gatherv take recvcounts and rdispls
     * (their displs) and count as the send count; scatterv sendcounts and
     * sdispls (its displs) and count as the receive count; alltoallv all
     * four. Layouts are not supported with them. */
    const size_t *sendcounts, *sdispls;
    const size_t *recvcounts, *rdispls;
    /* 1: never XCOLL_DECLINED by an "mpi" rule (xcoll_config_t.fallback):
     * for a call the caller could not run itself (the drop-ins: a
     * reduction on a derived type, which Open MPI refuses). The rule's
     * next algorithm serves it, as on a communicator without fallback. */
    int no_fallback;
} xcoll_args_t;

/* --- Library ------------------------------------------------------------ */

/* A static English sentence for a status; never NULL. */
const char *xcoll_strerror(xcoll_status_t status);

/* The library version as "major.minor.patch"; never NULL. */
const char *xcoll_version(void);

/* Size in bytes of one element of dtype, or 0 if dtype is invalid. */
size_t xcoll_dtype_size(xcoll_dtype_t dtype);

/* Names as used in logs and benchmarks ("float32", "sum"); "invalid" if out of range. */
const char *xcoll_dtype_name(xcoll_dtype_t dtype);
const char *xcoll_op_name(xcoll_op_t op);

/* Fills cfg with defaults, then applies the XCOLL_* environment variables. */
xcoll_status_t xcoll_config_init(xcoll_config_t *cfg);

/* --- Introspection (what bin/xcoll-info prints) ----------------------------- */

/* A static multi-line text describing this build: the UCX version and the
 * transports UCX finds on this machine, and whether CUDA support is built
 * and a device found. Never NULL. */
const char *xcoll_build_info(void);

/* Name of collective i ("allreduce", "bcast", "reduce", "allgather",
 * "reduce_scatter", "alltoall", "gather", "scatter", "barrier" for
 * i = 0..8, the xcoll_coll_t values), or NULL past the last: the names
 * XCOLL_TUNE uses. */
const char *xcoll_collective_name(int coll);

/* Name of algorithm i (0, 1, ...) of collective coll, or NULL past the
 * last. This is also the fallback order once a selection rule's own
 * candidates have declined a call. The pseudo-algorithm "mpi" (hand the
 * call back to the caller: xcoll_config_t.fallback), valid in rules for
 * every collective, is not in this list. */
const char *xcoll_algorithm_name(int coll, int i);

/* The selection table a communicator created now would use: the built-in
 * defaults overridden by XCOLL_TUNE_FILE and XCOLL_TUNE (docs/TUNING.md),
 * written as text into buf (at most len bytes, NUL-terminated like
 * snprintf; *needed, if not NULL, gets the size the whole text needs).
 * nranks 0: every rule, one a line, in precedence order (a later line wins
 * where two cover the same call) with where it came from. nranks > 0: the
 * resolved table for a communicator of nranks ranks on one node, one line
 * of the tuning grammar per collective (rules for other node shapes,
 * "/ranks-per-node", are in the nranks 0 list; xcoll-info --predict shows
 * the choice on any cluster). A malformed override gives
 * XCOLL_ERR_INVALID_ARG, and buf then holds the error with its position. */
xcoll_status_t xcoll_tune_table(int nranks, char *buf, size_t len, size_t *needed);

/* --- Communicators -------------------------------------------------------- */

/* Collective over the bootstrap's ranks: exchanges transport addresses and
 * agrees on a communicator id. cfg may be NULL (defaults and environment).
 * On success *comm is a new communicator; on failure it is set to NULL. */
xcoll_status_t xcoll_comm_create(const xcoll_bootstrap_t *bootstrap,
                                 const xcoll_config_t *cfg, xcoll_comm_t *comm);

/* Frees the communicator and everything it holds. Not collective, but no
 * collective may be outstanding on it on this rank (XCOLL_ERR_INVALID_ARG
 * otherwise: wait for them first). Later calls on it return
 * XCOLL_ERR_INVALID_COMM. A connection to another node that no other
 * communicator uses is closed after a goodbye: peers still in a collective
 * this rank finished do not take it for lost (only one that awaits its
 * data fails, XCOLL_ERR_PEER_LOST). A process that exits without
 * destroying its communicators looks lost to those peers. Ids: a process
 * can create at most 32766 communicators in its life (fewer when it
 * shares them with processes that created more). Memory: the scratch of
 * large collectives (up to two blocks, 512 MiB together) is kept for the
 * next ones and freed when the process's last communicator is destroyed. */
xcoll_status_t xcoll_comm_destroy(xcoll_comm_t comm);

/* This process's rank in comm, and the number of ranks. */
xcoll_status_t xcoll_comm_rank(xcoll_comm_t comm, int *rank);
xcoll_status_t xcoll_comm_size(xcoll_comm_t comm, int *size);

/* --- Collectives --------------------------------------------------------------
 * Each blocking call returns when this rank's part is done and its buffers
 * may be reused. The xcoll_i* form takes the same arguments plus a request
 * and returns at once; finish it with xcoll_test() or xcoll_wait(). Any
 * number of nonblocking collectives may be outstanding on any number of
 * communicators; the buffers of an outstanding one must not be touched.
 *
 * Buffers may be host memory, CUDA device memory or CUDA managed memory
 * (mixed too); device data is reduced on the GPU. With a UCX that cannot
 * send device memory it is staged through pinned host memory in chunks.
 * One CUDA device per process, and it must be the current device when a
 * call is made. Asking where a buffer lives creates no CUDA context (the
 * driver's pointer query), so host-only programs on GPU machines cost no
 * device memory; XCOLL_MEMORY=host (or XCOLL_CUDA=0) skips the question.
 *
 * stream: a cudaStream_t, or NULL for host order.
 *  - NULL: the call reads its buffers after the work queued on the legacy
 *    default stream (and on every blocking stream) before the call, like a
 *    CUDA-aware MPI; when it completes its results are in place.
 *  - a stream: the collective first waits for the work queued on `stream`
 *    before the call, and work queued on `stream` after the call waits
 *    until the collective has completed, so results can be consumed on
 *    the stream without synchronising the host. The call itself is still
 *    a host call: a blocking one returns when this rank's part is done, a
 *    nonblocking one must still be finished with xcoll_wait or xcoll_test,
 *    or by the progress thread where it runs (xcoll_config_t.progress_thread);
 *    the stream waits until then.
 *  - a non-NULL stream in a build without CUDA, or with no CUDA device, is
 *    XCOLL_ERR_UNSUPPORTED. */

/* recvbuf[i] = op over ranks of sendbuf[i], i < count, on every rank.
 * In place: sendbuf XCOLL_IN_PLACE or == recvbuf; the input is in recvbuf. */
xcoll_status_t xcoll_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               xcoll_dtype_t dtype, xcoll_op_t op,
                               xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                xcoll_dtype_t dtype, xcoll_op_t op,
                                xcoll_comm_t comm, void *stream, xcoll_request_t *req);

/* buf's count elements on root are copied into buf on every other rank. */
xcoll_status_t xcoll_bcast(void *buf, size_t count, xcoll_dtype_t dtype, int root,
                           xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_ibcast(void *buf, size_t count, xcoll_dtype_t dtype, int root,
                            xcoll_comm_t comm, void *stream, xcoll_request_t *req);

/* recvbuf on root = op over ranks of sendbuf; recvbuf is ignored elsewhere
 * (may be NULL). In place at root: sendbuf XCOLL_IN_PLACE or == recvbuf. */
xcoll_status_t xcoll_reduce(const void *sendbuf, void *recvbuf, size_t count,
                            xcoll_dtype_t dtype, xcoll_op_t op, int root,
                            xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                             xcoll_dtype_t dtype, xcoll_op_t op, int root,
                             xcoll_comm_t comm, void *stream, xcoll_request_t *req);

/* recvbuf (size*count elements) = every rank's sendbuf (count), in rank
 * order. In place: sendbuf XCOLL_IN_PLACE, or sendbuf == recvbuf +
 * rank*count elements; this rank's block is already in recvbuf. */
xcoll_status_t xcoll_allgather(const void *sendbuf, void *recvbuf, size_t count,
                               xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_iallgather(const void *sendbuf, void *recvbuf, size_t count,
                                xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream,
                                xcoll_request_t *req);

/* sendbuf holds size*count elements; recvbuf (count) on rank r = op over
 * ranks of block r of sendbuf. In place, MPI style: sendbuf XCOLL_IN_PLACE,
 * the whole input is in recvbuf and the result lands in its first block.
 * In place, NCCL style: recvbuf == sendbuf + rank*count elements. */
xcoll_status_t xcoll_reduce_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                    xcoll_dtype_t dtype, xcoll_op_t op,
                                    xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                     xcoll_dtype_t dtype, xcoll_op_t op,
                                     xcoll_comm_t comm, void *stream, xcoll_request_t *req);

/* Block j (count elements) of sendbuf goes to rank j, landing in block
 * (this rank) of its recvbuf. In place: sendbuf XCOLL_IN_PLACE or ==
 * recvbuf; the input is in recvbuf. */
xcoll_status_t xcoll_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                              xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_ialltoall(const void *sendbuf, void *recvbuf, size_t count,
                               xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream,
                               xcoll_request_t *req);

/* recvbuf on root (size*count) = every rank's sendbuf (count) in rank order;
 * recvbuf is ignored elsewhere. In place at root: sendbuf XCOLL_IN_PLACE or
 * == recvbuf + root*count elements. */
xcoll_status_t xcoll_gather(const void *sendbuf, void *recvbuf, size_t count,
                            xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_igather(const void *sendbuf, void *recvbuf, size_t count,
                             xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream,
                             xcoll_request_t *req);

/* Block r (count elements) of root's sendbuf (size*count) lands in recvbuf
 * on rank r; sendbuf is ignored elsewhere. In place at root: recvbuf
 * XCOLL_IN_PLACE (cast) or == sendbuf + root*count elements. */
xcoll_status_t xcoll_scatter(const void *sendbuf, void *recvbuf, size_t count,
                             xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_iscatter(const void *sendbuf, void *recvbuf, size_t count,
                              xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream,
                              xcoll_request_t *req);

/* Returns on a rank only after every rank has entered the barrier. */
xcoll_status_t xcoll_barrier(xcoll_comm_t comm);
xcoll_status_t xcoll_ibarrier(xcoll_comm_t comm, xcoll_request_t *req);

/* --- v-variants ---------------------------------------------------------------
 * Blocks of their own sizes: block j is counts[j] elements at displs[j]
 * elements from the buffer's start, j < size; counts and displacements are
 * size_t arrays of size entries, read during the call only. Receive blocks
 * must not overlap (XCOLL_ERR_INVALID_ARG, checked the first time a set of
 * counts is seen); send blocks may. A block of 0 elements is not sent at
 * all. Empty totals allow NULL buffers. Layouts are not supported. The
 * sizes two ranks give for one block must agree, as in MPI; where they do
 * not, the call fails (XCOLL_ERR_TRUNCATED, or XCOLL_ERR_TIMEOUT). Never
 * XCOLL_DECLINED: a v-variant always runs in xcoll. */

/* Every rank's sendbuf (sendcount = recvcounts[rank] elements) lands in
 * recvbuf at displs[rank], on every rank. recvcounts is the same on every
 * rank; displs are each rank's own. In place: sendbuf XCOLL_IN_PLACE, or
 * sendbuf == recvbuf + displs[rank] elements; this rank's block is already
 * there and sendcount is ignored. */
xcoll_status_t xcoll_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                const size_t *recvcounts, const size_t *displs,
                                xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                 const size_t *recvcounts, const size_t *displs,
                                 xcoll_dtype_t dtype, xcoll_comm_t comm, void *stream,
                                 xcoll_request_t *req);

/* sendcounts[j] elements at sdispls[j] of sendbuf go to rank j, landing at
 * its rdispls[this rank] (recvcounts[this rank] elements there, equal to
 * sendcounts[j] here). In place: sendbuf XCOLL_IN_PLACE (sendcounts and
 * sdispls ignored); the input is in recvbuf as recvcounts and rdispls
 * describe it, and block j of it goes to rank j. */
xcoll_status_t xcoll_alltoallv(const void *sendbuf, const size_t *sendcounts,
                               const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                               const size_t *rdispls, xcoll_dtype_t dtype, xcoll_comm_t comm,
                               void *stream);
xcoll_status_t xcoll_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                                const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                const size_t *rdispls, xcoll_dtype_t dtype, xcoll_comm_t comm,
                                void *stream, xcoll_request_t *req);

/* Rank j's sendbuf (sendcount elements, = recvcounts[j] at the root) lands
 * at displs[j] of recvbuf on root; recvbuf, recvcounts and displs are read
 * only at the root (may be NULL elsewhere). In place at root: sendbuf
 * XCOLL_IN_PLACE or == recvbuf + displs[root] elements. */
xcoll_status_t xcoll_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                             const size_t *recvcounts, const size_t *displs, xcoll_dtype_t dtype,
                             int root, xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                              const size_t *recvcounts, const size_t *displs, xcoll_dtype_t dtype,
                              int root, xcoll_comm_t comm, void *stream, xcoll_request_t *req);

/* sendcounts[j] elements at displs[j] of root's sendbuf land in recvbuf
 * (recvcount elements) on rank j; sendbuf, sendcounts and displs are read
 * only at the root. In place at root: recvbuf XCOLL_IN_PLACE (cast) or ==
 * sendbuf + displs[root] elements; the root's block stays put. */
xcoll_status_t xcoll_scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                              void *recvbuf, size_t recvcount, xcoll_dtype_t dtype, int root,
                              xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_iscatterv(const void *sendbuf, const size_t *sendcounts,
                               const size_t *displs, void *recvbuf, size_t recvcount,
                               xcoll_dtype_t dtype, int root, xcoll_comm_t comm, void *stream,
                               xcoll_request_t *req);

/* Posts the collective args describes, as its xcoll_i* form would, plus
 * what only this form offers: non-contiguous buffers (send_layout,
 * recv_layout). On a communicator with xcoll_config_t.fallback it may
 * return XCOLL_DECLINED: nothing is posted, *req is NULL, and the caller
 * runs the call itself. */
xcoll_status_t xcoll_start(const xcoll_args_t *args, xcoll_comm_t comm, xcoll_request_t *req);

/* On a communicator with xcoll_config_t.fallback: sets *declined to 1 if
 * xcoll_start would return XCOLL_DECLINED for this call, else 0. Only
 * args->coll, count, dtype, op, root and no_fallback are read (the
 * decision never depends on buffers or in-place), so a caller can ask
 * before it prepares them; answers are remembered per communicator, a
 * repeated question costs a table lookup. On other communicators
 * *declined is always 0. */
xcoll_status_t xcoll_declines(xcoll_comm_t comm, const xcoll_args_t *args, int *declined);

/* --- Point to point ---------------------------------------------------------
 * A send matches the recv on peer with the same tag (0 <= tag <
 * XCOLL_TAG_LIMIT); messages between one pair with one tag arrive in the
 * order sent. The receive count must equal the send count
 * (XCOLL_ERR_TRUNCATED otherwise). Never matches a collective's traffic.
 * (The tag field has 28 bits; its top value is xcoll's own: after a
 * timeout the ranks exchange where they are under it.) */
#define XCOLL_TAG_LIMIT ((1 << 28) - 1)
xcoll_status_t xcoll_send(const void *buf, size_t count, xcoll_dtype_t dtype, int peer,
                          int tag, xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_isend(const void *buf, size_t count, xcoll_dtype_t dtype, int peer,
                           int tag, xcoll_comm_t comm, void *stream, xcoll_request_t *req);
xcoll_status_t xcoll_recv(void *buf, size_t count, xcoll_dtype_t dtype, int peer,
                          int tag, xcoll_comm_t comm, void *stream);
xcoll_status_t xcoll_irecv(void *buf, size_t count, xcoll_dtype_t dtype, int peer,
                           int tag, xcoll_comm_t comm, void *stream, xcoll_request_t *req);

/* --- Requests -----------------------------------------------------------------
 * xcoll_test progresses all outstanding work; if *req is finished it sets
 * *done = 1, frees the request, sets *req = NULL and returns the
 * operation's status; otherwise *done = 0 and it returns XCOLL_OK. A NULL
 * *req counts as finished. xcoll_wait blocks (backing off when idle) until
 * *req finishes or the communicator's timeout expires, then does the same.
 * A released request is gone: a copy of its handle must not be passed
 * again (xcoll may recognise one and return XCOLL_ERR_INVALID_ARG, but
 * need not). */
xcoll_status_t xcoll_test(xcoll_request_t *req, int *done);
xcoll_status_t xcoll_wait(xcoll_request_t *req);

/* Asks for fn(arg) to be called once when req finishes (completes, fails
 * or times out), so that a caller with the progress thread can learn of
 * it without a thread of its own blocked in xcoll_wait on each request
 * (the torch backend: completions in any order, from one thread). fn runs
 * on the thread that finishes req, the progress thread or a caller inside
 * xcoll_test or xcoll_wait; if req has finished already, on this thread
 * before this call returns. It runs inside xcoll, holding xcoll's lock: it
 * must not call xcoll nor wait for a thread that does; note the fact (set
 * a flag, signal a condition variable) and return. The request is still
 * the caller's: finish it with xcoll_test or xcoll_wait, which then
 * returns at once. One callback per request (a second call gives
 * XCOLL_ERR_INVALID_ARG). */
xcoll_status_t xcoll_request_notify(xcoll_request_t req, void (*fn)(void *arg), void *arg);

/* --- MPI bootstrap (only when <mpi.h> was included first) ------------------ */
#ifdef MPI_VERSION
static inline int xcoll_mpi_allgather_(const void *sendbuf, void *recvbuf, size_t bytes,
                                       void *ctx)
{
    if (bytes > (size_t)0x7fffffff)
        return -1;
    return MPI_Allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE,
                         *(MPI_Comm *)ctx) == MPI_SUCCESS ? 0 : -1;
}

/* Collective over mpi_comm: a communicator of the same ranks in the same
 * order. mpi_comm is used only during this call. */
static inline xcoll_status_t xcoll_comm_create_mpi(MPI_Comm mpi_comm, const xcoll_config_t *cfg,
                                                   xcoll_comm_t *comm)
{
    xcoll_bootstrap_t boot;
    if (comm == NULL)
        return XCOLL_ERR_INVALID_ARG;
    *comm = NULL;
    if (mpi_comm == MPI_COMM_NULL || MPI_Comm_rank(mpi_comm, &boot.rank) != MPI_SUCCESS ||
        MPI_Comm_size(mpi_comm, &boot.size) != MPI_SUCCESS)
        return XCOLL_ERR_INVALID_ARG;
    boot.allgather = xcoll_mpi_allgather_;
    boot.ctx = &mpi_comm;
    return xcoll_comm_create(&boot, cfg, comm);
}
#endif

#ifdef __cplusplus
}
#endif
#endif /* XCOLL_H */
