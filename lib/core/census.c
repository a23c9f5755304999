/* The census after a timeout: which rank is the cause.
 *
 * A rank whose collective times out can only see its own pending steps:
 * "waiting on rank 3", while rank 3 waits on rank 2, the one that never
 * came. So before the collective fails, the rank asks every other rank of
 * the communicator where it is. Each rank whose own collective timed out
 * does the same: it sends every peer one small message (how many
 * collectives it entered, the last one's name, the one it is stuck in and
 * the peers that one waits for) under the tag reserved for it
 * (XC_TAG_USER_CENSUS), and receives theirs for a short window, a
 * fraction of the timeout. A rank that has waited a quarter of its own
 * timeout already listens, and answers as soon as a peer's message comes
 * (xc_census_listen): a rank that came late is then counted as in the
 * collective, though its own timeout is still far off. A rank outside
 * xcoll (computing, stalled, dead) does not answer; one behind answers
 * with an older sequence number.
 *
 * From the answers every rank writes the same verdict: "rank 2 never
 * entered allreduce seq 100" when rank 2 is silent and someone waits for
 * its data, or answers from an earlier collective; "rank 2 is in bcast as
 * seq 100" when the ranks called different collectives.
 *
 * Buffers stay with the communicator until it is destroyed: a census
 * message to a rank that never reads it may still be in UCX's hands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "census.h"
#include "comm.h"
#include "log.h"
#include "tag.h"

#define XC_CENSUS_MAGIC 0x4e455343u /* "CSEN" */
#define XC_CENSUS_PEERS 8
#define XC_CENSUS_NAME 24

/* One rank's answer; every field is checked before use. Times are
 * CLOCK_REALTIME in ns: the only clock ranks on other nodes share (to
 * NTP's precision, milliseconds, against timeouts of seconds). */
typedef struct {
    uint32_t magic;
    uint32_t rank;
    uint32_t entered;      /* collectives entered on the communicator: the next seq */
    uint32_t stuck_seq;    /* the collective that timed out or failed */
    int32_t status;        /* XCOLL_ERR_TIMEOUT, or how it failed */
    uint32_t npending;     /* how many of pending are valid */
    int64_t since_ns;      /* when it began to wait in stuck_seq */
    int64_t gave_up_ns;    /* when it timed out or failed */
    int32_t pending[XC_CENSUS_PEERS]; /* whom the stuck collective waits for */
    char entered_what[XC_CENSUS_NAME]; /* the collective of seq entered - 1 */
    char stuck_what[XC_CENSUS_NAME];
} xc_census_msg_t;
/* the same layout on every rank: no padding a compiler could place otherwise */
_Static_assert(sizeof(xc_census_msg_t) == 120, "census message layout changed");

struct xc_census {
    xc_census_msg_t *mine;       /* what the peers get; apart: it may outlive the rest
                                  * (xc_census_free) */
    xc_census_msg_t self;        /* this rank's state when it timed out: the report's */
    xc_census_msg_t *theirs;     /* per rank */
    void **sreq, **rreq;         /* per rank: transport requests */
    uint8_t *got;                /* per rank: 1 answered, 2 garbage */
    int listening;               /* receives posted */
    int sent;                    /* this rank's message went out (once) */
    int asking;                  /* this rank timed out: collecting, then the verdict */
    double started, deadline;
    int done;
};

/* The window for answers: the ranks stuck with this one time out within a
 * few check intervals of each other; bounded so a failure is not much
 * later than the timeout the user set. */
static double window_s(double timeout_s)
{
    double w = timeout_s / 4;
    return w < 0.2 ? 0.2 : w > 2.0 ? 2.0 : w;
}

static void set_name(char *dst, const char *src)
{
    snprintf(dst, XC_CENSUS_NAME, "%s", src != NULL ? src : "");
}

/* A peer's name field as printable text. */
static void clean_name(char *s)
{
    size_t i;
    s[XC_CENSUS_NAME - 1] = '\0';
    for (i = 0; s[i] != '\0'; i++)
        if (s[i] < 0x20 || s[i] > 0x7e)
            s[i] = '?';
}

static void free_census(struct xc_census *c)
{
    if (c == NULL)
        return;
    free(c->mine);
    free(c->theirs);
    free(c->sreq);
    free(c->rreq);
    free(c->got);
    free(c);
}

/* Nanoseconds on the clock every node shares, for a CLOCK_MONOTONIC time
 * of this process (xc_now). */
static int64_t realtime_ns(double mono)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - (int64_t)((xc_now() - mono) * 1e9);
}

/* The census's memory for comm, nothing posted yet; NULL without memory. */
static struct xc_census *make(xcoll_comm_t comm)
{
    struct xc_census *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->mine = calloc(1, sizeof(*c->mine));
    c->theirs = calloc((size_t)comm->size, sizeof(*c->theirs));
    c->sreq = calloc((size_t)comm->size, sizeof(*c->sreq));
    c->rreq = calloc((size_t)comm->size, sizeof(*c->rreq));
    c->got = calloc((size_t)comm->size, 1);
    if (c->mine == NULL || c->theirs == NULL || c->sreq == NULL || c->rreq == NULL ||
        c->got == NULL) {
        free_census(c);
        return NULL;
    }
    return c;
}

/* This rank's message: collective x (what, seq x->seq), in state status
 * (XCOLL_INPROGRESS: still waiting) after waiting since `since`. */
static void fill(xcoll_comm_t comm, xc_census_msg_t *m, const xc_exec_t *x, const char *what,
                 xcoll_status_t status, double since, double now)
{
    int pending[XC_CENSUS_PEERS];
    unsigned n = xc_exec_pending_peers(x, pending, XC_CENSUS_PEERS), i;
    memset(m, 0, sizeof(*m));
    m->magic = XC_CENSUS_MAGIC;
    m->rank = (uint32_t)comm->rank;
    m->entered = comm->seq;
    m->stuck_seq = x->seq;
    m->status = (int32_t)status;
    m->npending = n;
    for (i = 0; i < n; i++)
        m->pending[i] = pending[i];
    m->since_ns = realtime_ns(since > 0 ? since : now);
    m->gave_up_ns = realtime_ns(now);
    set_name(m->entered_what, comm->entered_what);
    set_name(m->stuck_what, what);
}

/* Posts a receive for every peer's message. */
static void listen_all(xcoll_comm_t comm, struct xc_census *c)
{
    int p;
    for (p = 0; p < comm->size; p++) {
        if (p == comm->rank)
            continue;
        if (comm->tl->irecv(comm->tl_comm, p, xc_tag_p2p(comm->id, (uint32_t)p, XC_TAG_USER_CENSUS),
                            &c->theirs[p], sizeof(c->theirs[p]), &c->rreq[p]) != XCOLL_OK) {
            c->got[p] = 2;
            c->rreq[p] = NULL;
        } else if (c->rreq[p] == NULL) {
            c->got[p] = 1; /* it was already here */
        }
    }
    c->listening = 1;
}

/* Why the transport's connection to rank p failed, or NULL; *left: 1 when
 * p said goodbye before (it destroyed its communicators with this rank). */
static const char *lost_or_left(xcoll_comm_t comm, int p, int *left)
{
    const xc_transport_t *tl = comm->tl;
    const char *why;
    *left = 0;
    if (tl->lost_count == NULL || tl->lost_count(comm->tl_comm) == 0)
        return NULL;
    why = tl->peer_lost(comm->tl_comm, p);
    *left = why != NULL && tl->peer_left != NULL && tl->peer_left(comm->tl_comm, p);
    return why;
}

/* Why the transport lost rank p, or NULL; NULL too when p left after a
 * goodbye: a rank that destroyed the communicator finished every
 * collective it entered and is no cause (a rank that still waits for its
 * data fails by itself: request.c, check_lost). */
static const char *lost(xcoll_comm_t comm, int p)
{
    int left;
    const char *why = lost_or_left(comm, p, &left);
    return left ? NULL : why;
}

/* Sends every peer this rank's message (once per communicator), but to
 * those whose connection failed (lost, or left after a goodbye). */
static void send_all(xcoll_comm_t comm, struct xc_census *c)
{
    int p;
    for (p = 0; p < comm->size; p++) {
        int left;
        if (p == comm->rank || lost_or_left(comm, p, &left) != NULL)
            continue;
        if (comm->tl->isend(comm->tl_comm, p,
                            xc_tag_p2p(comm->id, (uint32_t)comm->rank, XC_TAG_USER_CENSUS),
                            c->mine, sizeof(*c->mine), &c->sreq[p]) != XCOLL_OK)
            c->sreq[p] = NULL; /* a peer gone: its silence says the rest */
    }
    c->sent = 1;
}

/* Collects what arrived; returns how many receives are still open. */
static int collect(xcoll_comm_t comm, struct xc_census *c)
{
    int p, open = 0;
    for (p = 0; p < comm->size; p++) {
        xcoll_status_t rc;
        if (p == comm->rank || c->rreq[p] == NULL)
            continue;
        rc = comm->tl->test(comm->tl_comm, c->rreq[p]);
        if (rc == XCOLL_INPROGRESS) {
            open++;
            continue;
        }
        c->rreq[p] = NULL;
        c->got[p] = rc == XCOLL_OK ? 1 : 2;
    }
    return open;
}

/* The census of comm, made on first use; NULL without memory. */
static struct xc_census *census_of(xcoll_comm_t comm)
{
    if (comm->census == NULL)
        comm->census = make(comm);
    return comm->census;
}

static int seq_before(uint32_t a, uint32_t b);

/* How peer p failed in collective seq or before it, from its announcement
 * (XCOLL_OK if it did not, or is not heard yet). A timeout is not a
 * failure here: a peer that timed out asks, and this rank answers. */
static xcoll_status_t failed_before(const struct xc_census *c, int p, uint32_t seq)
{
    const xc_census_msg_t *m = &c->theirs[p];
    if (c->got[p] != 1 || m->magic != XC_CENSUS_MAGIC || m->rank != (uint32_t)p ||
        m->status >= 0 || m->status == XCOLL_ERR_TIMEOUT || seq_before(seq, m->stuck_seq))
        return XCOLL_OK;
    return (xcoll_status_t)m->status;
}

xcoll_status_t xc_census_listen(xcoll_comm_t comm, const xc_exec_t *x, const char *what,
                                double since, double now)
{
    struct xc_census *c;
    xcoll_status_t failed = XCOLL_OK;
    int p, asked = 0;
    if (comm->size < 2 || (c = census_of(comm)) == NULL)
        return XCOLL_OK;
    if (!c->listening)
        listen_all(comm, c);
    collect(comm, c);
    for (p = 0; p < comm->size; p++) {
        if (p == comm->rank)
            continue;
        asked |= c->got[p] == 1;
        if (failed == XCOLL_OK)
            failed = failed_before(c, p, x->seq);
        if (failed == XCOLL_OK && lost(comm, p) != NULL)
            failed = XCOLL_ERR_PEER_LOST;
    }
    if (asked && !c->sent) {
        /* a peer gave up and asks: say where this rank is, still waiting */
        fill(comm, c->mine, x, what, XCOLL_INPROGRESS, since, now);
        send_all(comm, c);
    }
    return failed;
}

xcoll_status_t xc_census_start(xcoll_comm_t comm, const xc_exec_t *x, const char *what,
                               double since, double now)
{
    return xc_census_start_failed(comm, x, what, since, now, XCOLL_ERR_TIMEOUT);
}

xcoll_status_t xc_census_start_failed(xcoll_comm_t comm, const xc_exec_t *x, const char *what,
                                      double since, double now, xcoll_status_t status)
{
    struct xc_census *c;
    if (comm->size < 2 || (comm->census != NULL && (comm->census->asking || comm->census->done)))
        return XCOLL_ERR_INVALID_ARG; /* one census per communicator */
    c = census_of(comm);
    if (c == NULL)
        return XCOLL_ERR_NO_MEMORY;
    if (!c->listening)
        listen_all(comm, c);
    fill(comm, &c->self, x, what, status, since, now);
    /* a rank that answered already ("waiting in it") keeps that answer:
     * one message a peer, and the transport may still hold it */
    if (!c->sent) {
        *c->mine = c->self;
        send_all(comm, c);
    }
    c->asking = 1;
    c->started = now;
    c->deadline = now + window_s(comm->timeout_s);
    xc_error("%s (seq %u, comm %u): asking the other %d ranks where they are (for %.1f s)", what,
             x->seq, comm->id, comm->size - 1, c->deadline - now);
    return XCOLL_OK;
}

void xc_census_announce(xcoll_comm_t comm, const xc_exec_t *x, const char *what,
                        xcoll_status_t status)
{
    struct xc_census *c;
    double now;
    if (comm->size < 2 || (c = census_of(comm)) == NULL || c->sent)
        return; /* without memory the peers will say this rank did not answer */
    now = xc_now();
    fill(comm, c->mine, x, what, status, now, now);
    send_all(comm, c);
    c->done = 1;
}

/* "2", "0-1,3": a set of ranks, short. */
static void rank_list(const uint8_t *in, int size, char *out, size_t cap)
{
    size_t len = 0;
    int p = 0, shown = 0;
    out[0] = '\0';
    while (p < size && len + 24 < cap) {
        int q;
        if (!in[p]) {
            p++;
            continue;
        }
        for (q = p; q + 1 < size && in[q + 1]; q++)
            ;
        len += (size_t)snprintf(out + len, cap - len, q == p ? "%s%d" : q == p + 1 ? "%s%d,%d" : "%s%d-%d",
                                shown ? "," : "", p, q);
        shown = 1;
        p = q + 1;
    }
    if (p < size && len + 24 >= cap)
        snprintf(out + len, cap - len, ",...");
}

static int count_set(const uint8_t *in, int size)
{
    int p, n = 0;
    for (p = 0; p < size; p++)
        n += in[p] != 0;
    return n;
}

/* Whether an answer is usable: the fields a peer wrote, checked. */
static int valid_answer(xcoll_comm_t comm, xc_census_msg_t *m, int p)
{
    uint32_t i;
    if (m->magic != XC_CENSUS_MAGIC || m->rank != (uint32_t)p || m->npending > XC_CENSUS_PEERS)
        return 0;
    for (i = 0; i < m->npending; i++)
        if (m->pending[i] < 0 || m->pending[i] >= comm->size)
            return 0;
    clean_name(m->entered_what);
    clean_name(m->stuck_what);
    return 1;
}

/* What the census learnt of one rank. */
enum {
    K_SAME,          /* in it too, timed out waiting */
    K_WAITING,       /* in it, still waiting when it answered */
    K_EARLIER,       /* entered it, but stuck in an earlier one (nonblocking) */
    K_GAVE_UP_EARLY, /* in it, and gave up before this rank began to wait */
    K_AHEAD,         /* finished it; stuck or failed in a later one */
    K_NEVER,         /* never entered it: answered from an earlier one */
    K_NEVER_SILENT,  /* no answer, and its data is awaited */
    K_SILENT,        /* no answer, nobody waits for it */
    K_OTHER,         /* called another collective as this sequence number */
    K_FAILED,        /* left it with an error */
    K_LOST,          /* no answer, and the transport lost its connection */
    K_COUNT
};

/* Milliseconds of clock difference between nodes that "gave up before
 * this rank began" must exceed: NTP keeps nodes within a few. */
#define XC_CENSUS_SKEW_NS 20000000

/* Sequence numbers in the order they were taken, across a wrap of 2^32. */
static int seq_before(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

static int kind_of(xcoll_comm_t comm, const struct xc_census *c, int p, const uint8_t *awaited)
{
    const xc_census_msg_t *m = &c->theirs[p], *me = &c->self;
    int left;
    /* one that left in order is lost only to those it still owes data */
    if (c->got[p] != 1 && lost_or_left(comm, p, &left) != NULL && (!left || awaited[p]))
        return K_LOST;
    if (c->got[p] != 1)
        return awaited[p] ? K_NEVER_SILENT : K_SILENT;
    if (!seq_before(me->stuck_seq, m->entered))
        return K_NEVER;
    if (seq_before(me->stuck_seq, m->stuck_seq))
        return K_AHEAD;
    if (seq_before(m->stuck_seq, me->stuck_seq))
        return K_EARLIER;
    if (strcmp(m->stuck_what, me->stuck_what) != 0)
        return K_OTHER;
    if (m->status == XCOLL_INPROGRESS)
        return K_WAITING;
    if (m->status != XCOLL_ERR_TIMEOUT)
        return K_FAILED;
    if (m->gave_up_ns + XC_CENSUS_SKEW_NS < me->since_ns)
        return K_GAVE_UP_EARLY;
    return K_SAME;
}

static const char *status_name(int32_t st)
{
    return xcoll_strerror((xcoll_status_t)st);
}

/* The verdict, logged once: who never entered, who called something else,
 * who left with an error, who is stuck too, who went on. */
static void report(xcoll_comm_t comm, struct xc_census *c, double now)
{
    const int P = comm->size, me = comm->rank;
    const uint32_t S = c->self.stuck_seq;
    const char *W = c->self.stuck_what;
    uint8_t *awaited = calloc((size_t)P, 1), *kind = calloc((size_t)P, 1);
    uint8_t *set = calloc((size_t)P, 1);
    char list[256];
    const char *how = c->self.status == XCOLL_ERR_TIMEOUT ? "timed out" : "failed";
    int p, k, answered = 0, n[K_COUNT] = {0};
    uint32_t i;
    if (awaited == NULL || kind == NULL || set == NULL) {
        xc_error("%s seq %u: no memory to tell who is missing", W, S);
        goto out;
    }
    /* whose data is awaited: this rank's steps in flight, and those of
     * every rank stuck in this collective or an earlier one (a rank that
     * owes data in an earlier one cannot have come to this one) */
    for (i = 0; i < c->self.npending; i++)
        awaited[c->self.pending[i]] = 1;
    for (p = 0; p < P; p++)
        if (p != me && c->got[p] == 1 && !seq_before(S, c->theirs[p].stuck_seq))
            for (i = 0; i < c->theirs[p].npending; i++)
                awaited[c->theirs[p].pending[i]] = 1;
    for (p = 0; p < P; p++) {
        answered += p != me && c->got[p] == 1;
        kind[p] = p == me ? K_SAME : (uint8_t)kind_of(comm, c, p, awaited);
        n[kind[p]]++;
    }
    xc_error("%s seq %u: %d of %d other ranks of comm %u answered in %.2f s (ranks below are "
             "the communicator's)", W, S, answered, P - 1, comm->id, now - c->started);
    /* one line per rank that explains the hang, one per group otherwise */
    for (p = 0; p < P; p++) {
        const xc_census_msg_t *m = &c->theirs[p];
        const char *why;
        int left;
        switch (kind[p]) {
        case K_NEVER:
            if (m->stuck_seq + 1 == m->entered)
                xc_error("%s seq %u: rank %d never entered it: it %s in %s seq %u", W, S, p,
                         m->status == XCOLL_ERR_TIMEOUT ? "is stuck" : "failed", m->stuck_what,
                         m->stuck_seq);
            else
                xc_error("%s seq %u: rank %d never entered it: its last collective was %s seq %u",
                         W, S, p, m->entered_what, m->entered - 1);
            break;
        case K_NEVER_SILENT:
            xc_error("%s seq %u: rank %d never entered it: it does not answer, and its data "
                     "is awaited (it is busy outside xcoll, stalled or gone; or it called "
                     "another collective here and left: XCOLL_CHECK=1 would say)", W, S, p);
            break;
        case K_OTHER:
            xc_error("%s seq %u: rank %d called %s as seq %u: the ranks called different "
                     "collectives (XCOLL_CHECK=1 stops this at the call)", W, S, p, m->stuck_what,
                     S);
            break;
        case K_FAILED:
            xc_error("%s seq %u: rank %d left it early: it failed there (%s)", W, S, p,
                     status_name(m->status));
            break;
        case K_LOST:
            why = lost_or_left(comm, p, &left);
            xc_error("%s seq %u: rank %d is lost: %s (%s)", W, S, p,
                     left ? "it destroyed the communicator while this collective awaits its "
                            "data"
                          : "the connection to it failed; its process or node is gone, or "
                            "the network to it",
                     why != NULL ? why : "?");
            break;
        default:
            break;
        }
    }
    for (k = 0; k < K_COUNT; k++) {
        static const char *const says[K_COUNT] = {
            [K_SAME] = "in it and timed out waiting",
            [K_WAITING] = "in it, still waiting (not timed out yet)",
            [K_EARLIER] = "in it, and stuck in an earlier collective too",
            [K_GAVE_UP_EARLY] = "timed out in it before this rank began to wait",
            [K_AHEAD] = "past it (waiting in or failed in a later collective)",
            [K_SILENT] = "silent, and nobody waits for their data: they finished it and left "
                         "xcoll, or never came",
        };
        if (says[k] == NULL || n[k] == 0)
            continue;
        for (p = 0; p < P; p++)
            set[p] = kind[p] == k;
        rank_list(set, P, list, sizeof(list));
        xc_error("%s seq %u: rank%s %s: %s", W, S, n[k] > 1 ? "s" : "", list, says[k]);
    }
    /* the verdict */
    for (p = 0; p < P; p++)
        set[p] = kind[p] == K_NEVER || kind[p] == K_NEVER_SILENT;
    rank_list(set, P, list, sizeof(list));
    if (n[K_LOST] > 0) {
        /* the others' state follows from it: name the lost ones */
        for (p = 0; p < P; p++)
            set[p] = kind[p] == K_LOST;
        rank_list(set, P, list, sizeof(list));
        xc_error("%s seq %u (comm %u) %s: rank%s %s %s lost", W, S, comm->id, how,
                 n[K_LOST] > 1 ? "s" : "", list, n[K_LOST] > 1 ? "are" : "is");
    } else if (n[K_GAVE_UP_EARLY] > 0) {
        xc_error("%s seq %u (comm %u) %s: this rank (%d) came late; the others had "
                 "given up on it already%s%s%s", W, S, comm->id, how, me,
                 n[K_NEVER] + n[K_NEVER_SILENT] > 0 ? "; never entered it: " : "",
                 n[K_NEVER] + n[K_NEVER_SILENT] > 0 ? (n[K_NEVER] + n[K_NEVER_SILENT] > 1 ? "ranks " : "rank ") : "",
                 n[K_NEVER] + n[K_NEVER_SILENT] > 0 ? list : "");
    } else if (n[K_NEVER] + n[K_NEVER_SILENT] > 0 && n[K_OTHER] + n[K_FAILED] == 0) {
        xc_error("%s seq %u (comm %u) %s: rank%s %s never entered it", W, S, comm->id, how,
                 n[K_NEVER] + n[K_NEVER_SILENT] > 1 ? "s" : "", list);
    } else if (n[K_NEVER] + n[K_NEVER_SILENT] + n[K_OTHER] + n[K_FAILED] > 0) {
        for (p = 0; p < P; p++)
            set[p] = kind[p] == K_NEVER || kind[p] == K_NEVER_SILENT || kind[p] == K_OTHER ||
                     kind[p] == K_FAILED;
        rank_list(set, P, list, sizeof(list));
        xc_error("%s seq %u (comm %u) %s: the cause is rank%s %s (above)", W, S, comm->id, how,
                 count_set(set, P) > 1 ? "s" : "", list);
    } else {
        xc_error("%s seq %u (comm %u) %s: no rank is missing that the census can see "
                 "(every rank that answered is in it or past it)", W, S, comm->id, how);
    }
out:
    free(awaited);
    free(kind);
    free(set);
}

int xc_census_progress(xcoll_comm_t comm, double now)
{
    struct xc_census *c = comm->census;
    int p, missing = 0;
    if (c == NULL || c->done)
        return 1;
    comm->tl->progress(comm->tl_comm);
    missing = collect(comm, c);
    if (missing > 0 && now < c->deadline)
        return 0;
    for (p = 0; p < comm->size; p++) {
        if (p == comm->rank)
            continue;
        /* sends that arrived let go now: one still held keeps UCX polled
         * on every round until the communicator is destroyed */
        if (c->sreq[p] != NULL && comm->tl->test(comm->tl_comm, c->sreq[p]) != XCOLL_INPROGRESS)
            c->sreq[p] = NULL;
        if (c->got[p] == 1 && !valid_answer(comm, &c->theirs[p], p))
            c->got[p] = 2;
        if (c->rreq[p] != NULL) {
            comm->tl->cancel(comm->tl_comm, c->rreq[p]);
            c->rreq[p] = NULL;
        }
    }
    report(comm, c, now);
    c->done = 1;
    return 1;
}

void xc_census_free(xcoll_comm_t comm)
{
    struct xc_census *c = comm->census;
    int p, in_flight = 0;
    if (c == NULL)
        return;
    for (p = 0; p < comm->size; p++) {
        if (c->sreq[p] != NULL && comm->tl->test(comm->tl_comm, c->sreq[p]) == XCOLL_INPROGRESS) {
            comm->tl->cancel(comm->tl_comm, c->sreq[p]);
            in_flight = 1;
        }
        if (c->rreq[p] != NULL)
            comm->tl->cancel(comm->tl_comm, c->rreq[p]);
    }
    /* A UCX send cannot be called back: one to a rank that never took it
     * (stalled, gone) may still read its buffer once its endpoint connects,
     * and endpoints outlive a communicator that shares them. Its 120 bytes
     * are left to the process rather than freed under UCX. */
    if (in_flight)
        c->mine = NULL;
    free_census(c);
    comm->census = NULL;
}
