/* Schedule construction: append steps, record dependencies and the
 * per-peer message ordinals that become the low bits of each tag. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "dtype.h"
#include "log.h"

xcoll_status_t xc_sched_init(xc_sched_t *s, int rank, int size, xcoll_dtype_t dtype,
                             xcoll_op_t op)
{
    memset(s, 0, sizeof(*s));
    s->rank = rank;
    s->size = size;
    s->dtype = dtype;
    s->op = op;
    s->dsize = xcoll_dtype_size(dtype);
    s->divisor = (uint32_t)size;
    s->algo = "none";
    s->after = -1;
    s->check_step = -1;
    for (int b = 0; b < XC_BUF_COUNT; b++)
        s->buf_map[b] = (uint8_t)b;
    s->send_slots = calloc((size_t)size, sizeof(uint32_t));
    s->recv_slots = calloc((size_t)size, sizeof(uint32_t));
    if (s->send_slots == NULL || s->recv_slots == NULL) {
        xc_error("out of memory building a schedule for %d ranks", size);
        s->err = XCOLL_ERR_NO_MEMORY;
    }
    return s->err;
}

/* The engine walks dependencies forwards (a finished step releases its
 * consumers), so invert the dependency lists once per schedule. */
xcoll_status_t xc_sched_finish(xc_sched_t *s)
{
    uint32_t i, d;
    free(s->send_slots);
    free(s->recv_slots);
    s->send_slots = s->recv_slots = NULL;
    if (s->err != XCOLL_OK || s->consumers_first != NULL)
        return s->err;
    s->consumers_first = calloc((size_t)s->nsteps + 2, sizeof(uint32_t));
    s->consumers = malloc(((size_t)s->ndeps + 1) * sizeof(uint32_t));
    if (s->consumers_first == NULL || s->consumers == NULL) {
        xc_error("out of memory finishing a schedule of %u steps", s->nsteps);
        s->err = XCOLL_ERR_NO_MEMORY;
        return s->err;
    }
    /* counting sort of (producer -> consumer) edges by producer */
    for (d = 0; d < s->ndeps; d++)
        s->consumers_first[s->deps[d] + 2]++;
    for (i = 0; i < s->nsteps; i++)
        s->consumers_first[i + 2] += s->consumers_first[i + 1];
    for (i = 0; i < s->nsteps; i++)
        for (d = 0; d < s->steps[i].ndeps; d++)
            s->consumers[s->consumers_first[s->deps[s->steps[i].dep_first + d] + 1]++] = i;
    return XCOLL_OK;
}

void xc_sched_fini(xc_sched_t *s)
{
    free(s->send_slots);
    free(s->recv_slots);
    free(s->consumers_first);
    free(s->consumers);
    free(s->steps);
    free(s->deps);
    memset(s, 0, sizeof(*s));
}

size_t xc_sched_tmp(xc_sched_t *s, size_t bytes)
{
    size_t off = (s->tmp_bytes + 63) & ~(size_t)63;
    s->tmp_bytes = off + bytes;
    return off;
}

static int fail(xc_sched_t *s, xcoll_status_t st)
{
    if (s->err == XCOLL_OK)
        s->err = st;
    return -1;
}

/* Appends a step; fills dependencies and slots. Returns its id or -1. */
static int add_step(xc_sched_t *s, xc_step_t *st, const int *deps, int ndeps)
{
    int i;
    if (s->err != XCOLL_OK)
        return -1;
    if (s->nsteps == s->steps_cap) {
        uint32_t cap = s->steps_cap ? s->steps_cap * 2 : 16;
        xc_step_t *n = realloc(s->steps, cap * sizeof(*n));
        if (n == NULL) {
            xc_error("out of memory building a schedule (%u steps)", cap);
            return fail(s, XCOLL_ERR_NO_MEMORY);
        }
        s->steps = n;
        s->steps_cap = cap;
    }
    if (s->ndeps + (uint32_t)ndeps + 1 > s->deps_cap) {
        uint32_t cap = s->deps_cap ? s->deps_cap : 16;
        uint32_t *n;
        while (cap < s->ndeps + (uint32_t)ndeps + 1)
            cap *= 2;
        n = realloc(s->deps, cap * sizeof(*n));
        if (n == NULL) {
            xc_error("out of memory building a schedule (%u dependencies)", cap);
            return fail(s, XCOLL_ERR_NO_MEMORY);
        }
        s->deps = n;
        s->deps_cap = cap;
    }
    if (s->after >= 0) {
        s->deps[s->ndeps++] = (uint32_t)s->after;
        st->ndeps = 1;
    } else {
        st->ndeps = 0;
    }
    st->dep_first = s->ndeps - st->ndeps;
    st->a.buf = s->buf_map[st->a.buf < XC_BUF_COUNT ? st->a.buf : 0];
    st->b.buf = s->buf_map[st->b.buf < XC_BUF_COUNT ? st->b.buf : 0];
    st->dst.buf = s->buf_map[st->dst.buf < XC_BUF_COUNT ? st->dst.buf : 0];
    for (i = 0; i < ndeps; i++) {
        if (deps[i] < 0)
            continue;
        if ((uint32_t)deps[i] >= s->nsteps) {
            /* A forward dependency would make index order invalid. */
            xc_error("schedule %s: step %u depends on step %d, which is not earlier",
                     s->algo, s->nsteps, deps[i]);
            return fail(s, XCOLL_ERR_INTERNAL);
        }
        s->deps[s->ndeps++] = (uint32_t)deps[i];
        st->ndeps++;
    }
    if (st->kind == XC_STEP_SEND || st->kind == XC_STEP_RECV ||
        st->kind == XC_STEP_RECV_REDUCE) {
        if (st->peer < 0 || st->peer >= s->size || s->send_slots == NULL) {
            xc_error("schedule %s: step %u names peer %d of %d", s->algo, s->nsteps, st->peer,
                     s->size);
            return fail(s, XCOLL_ERR_INTERNAL);
        }
        st->slot = st->kind == XC_STEP_SEND ? s->send_slots[st->peer]++
                                            : s->recv_slots[st->peer]++;
    }
    s->steps[s->nsteps] = *st;
    return (int)s->nsteps++;
}

static xc_step_t step_of(xc_step_kind_t kind, int peer, size_t bytes)
{
    xc_step_t st;
    memset(&st, 0, sizeof(st));
    st.kind = (uint8_t)kind;
    st.peer = peer;
    st.bytes = bytes;
    return st;
}

int xc_send(xc_sched_t *s, int peer, xc_ref_t src, size_t bytes, const int *deps, int ndeps)
{
    xc_step_t st = step_of(XC_STEP_SEND, peer, bytes);
    st.a = src;
    return add_step(s, &st, deps, ndeps);
}

int xc_recv(xc_sched_t *s, int peer, xc_ref_t dst, size_t bytes, const int *deps, int ndeps)
{
    xc_step_t st = step_of(XC_STEP_RECV, peer, bytes);
    st.dst = dst;
    return add_step(s, &st, deps, ndeps);
}

int xc_recv_reduce_ordered(xc_sched_t *s, int peer, xc_ref_t landing, xc_ref_t a, xc_ref_t dst,
                           size_t bytes, int a_left, const int *deps, int ndeps)
{
    xc_step_t st = step_of(XC_STEP_RECV_REDUCE, peer, bytes);
    st.a = a;
    st.b = landing;
    st.dst = dst;
    st.msg_left = !a_left;
    return add_step(s, &st, deps, ndeps);
}

int xc_recv_reduce(xc_sched_t *s, int peer, xc_ref_t landing, xc_ref_t a, xc_ref_t dst,
                   size_t bytes, const int *deps, int ndeps)
{
    return xc_recv_reduce_ordered(s, peer, landing, a, dst, bytes, 1, deps, ndeps);
}

int xc_copy(xc_sched_t *s, xc_ref_t src, xc_ref_t dst, size_t bytes, const int *deps, int ndeps)
{
    xc_step_t st = step_of(XC_STEP_COPY, -1, bytes);
    st.a = src;
    st.dst = dst;
    return add_step(s, &st, deps, ndeps);
}

int xc_reduce_local(xc_sched_t *s, xc_ref_t a, xc_ref_t b, xc_ref_t dst, size_t bytes,
                    const int *deps, int ndeps)
{
    xc_step_t st = step_of(XC_STEP_REDUCE, -1, bytes);
    st.a = a;
    st.b = b;
    st.dst = dst;
    return add_step(s, &st, deps, ndeps);
}

xcoll_status_t xc_sched_add_acks(xc_sched_t *s, size_t above)
{
    uint8_t *sent_big, *recv_big;
    int *deps;
    uint32_t nsteps = s->nsteps, i;
    int p, nd;

    if (s->err != XCOLL_OK || s->send_slots == NULL)
        return s->err != XCOLL_OK ? s->err : XCOLL_ERR_INTERNAL;
    sent_big = calloc((size_t)s->size, 1);
    recv_big = calloc((size_t)s->size, 1);
    deps = malloc(((size_t)nsteps + 1) * sizeof(int));
    if (sent_big == NULL || recv_big == NULL || deps == NULL) {
        xc_error("out of memory adding acknowledgements to a schedule");
        s->err = XCOLL_ERR_NO_MEMORY;
        goto out;
    }
    for (i = 0; i < nsteps; i++) {
        const xc_step_t *st = &s->steps[i];
        if (st->bytes <= above)
            continue;
        if (st->kind == XC_STEP_SEND)
            sent_big[st->peer] = 1;
        else if (st->kind == XC_STEP_RECV || st->kind == XC_STEP_RECV_REDUCE)
            recv_big[st->peer] = 1;
    }
    for (p = 0; p < s->size; p++) {
        if (!recv_big[p])
            continue;
        for (nd = 0, i = 0; i < nsteps; i++)
            if (s->steps[i].peer == p &&
                (s->steps[i].kind == XC_STEP_RECV || s->steps[i].kind == XC_STEP_RECV_REDUCE))
                deps[nd++] = (int)i;
        xc_send(s, p, xc_ref(XC_BUF_NONE, 0), 0, deps, nd);
    }
    for (p = 0; p < s->size; p++)
        if (sent_big[p])
            xc_recv(s, p, xc_ref(XC_BUF_NONE, 0), 0, XC_NODEPS);
out:
    free(sent_big);
    free(recv_big);
    free(deps);
    return s->err;
}

int xc_sched_add_check(xc_sched_t *s)
{
    const int P = s->size, r = s->rank;
    const size_t B = XC_STAMP_BYTES;
    size_t base;
    xc_step_t st;
    int prev, d;
    if (P <= 1)
        return -1;
    /* block i holds rank (r + i) % P's stamp: after the exchange at
     * distance d, this rank has the 2d blocks from itself on, half of them
     * from rank r + d, which had d */
    base = xc_sched_tmp(s, (size_t)P * B);
    memset(&st, 0, sizeof(st));
    st.kind = XC_STEP_STAMP;
    st.peer = -1;
    st.bytes = B;
    st.dst = XC_AT_TMP(base);
    prev = add_step(s, &st, XC_NODEPS);
    for (d = 1; d < P; d *= 2) {
        const size_t n = (size_t)(d < P - d ? d : P - d) * B;
        const int first = (int)s->nsteps;
        xc_send(s, (r - d + P) % P, XC_AT_TMP(base), n, XC_DEPS(prev));
        xc_recv(s, (r + d) % P, XC_AT_TMP(base + (size_t)d * B), n, XC_DEPS(prev));
        prev = xc_join(s, first);
    }
    memset(&st, 0, sizeof(st));
    st.kind = XC_STEP_CHECK;
    st.peer = -1;
    st.bytes = (size_t)P * B;
    st.a = XC_AT_TMP(base);
    s->check_step = add_step(s, &st, XC_DEPS(prev));
    return s->check_step;
}

int xc_skip_if_empty(xc_sched_t *s, int id)
{
    if (id >= 0 && (uint32_t)id < s->nsteps)
        s->steps[id].flags |= XC_STEP_F_SKIP_EMPTY;
    return id;
}

int xc_join(xc_sched_t *s, int first)
{
    int n = (int)s->nsteps - (first < 0 ? 0 : first), i, id;
    int *deps;
    xc_step_t st = step_of(XC_STEP_COPY, -1, 0);
    if (s->err != XCOLL_OK)
        return -1;
    if (n <= 0)
        return s->after;
    deps = malloc((size_t)n * sizeof(int));
    if (deps == NULL) {
        xc_error("out of memory joining %d schedule steps", n);
        return fail(s, XCOLL_ERR_NO_MEMORY);
    }
    for (i = 0; i < n; i++)
        deps[i] = (first < 0 ? 0 : first) + i;
    id = add_step(s, &st, deps, n);
    free(deps);
    return id;
}

int xc_divide_local(xc_sched_t *s, xc_ref_t dst, size_t bytes, const int *deps, int ndeps)
{
    xc_step_t st = step_of(XC_STEP_DIVIDE, -1, bytes);
    st.dst = dst;
    return add_step(s, &st, deps, ndeps);
}

static const char *buf_name(uint8_t b)
{
    static const char *names[XC_BUF_COUNT] = {"-", "send", "recv", "tmp"};
    return b < XC_BUF_COUNT ? names[b] : "?";
}

void xc_sched_print(const xc_sched_t *s, void *file)
{
    FILE *f = file;
    uint32_t i, d;
    fprintf(f, "schedule %s: rank %d of %d, %s/%s, %u steps, %zu bytes scratch\n", s->algo,
            s->rank, s->size, xcoll_dtype_name(s->dtype), xcoll_op_name(s->op), s->nsteps,
            s->tmp_bytes);
    for (i = 0; i < s->nsteps; i++) {
        const xc_step_t *st = &s->steps[i];
        fprintf(f, "  %3u ", i);
        switch ((xc_step_kind_t)st->kind) {
        case XC_STEP_SEND:
            fprintf(f, "send   %8zu B %s+%zu -> rank %d (#%u)", st->bytes, buf_name(st->a.buf),
                    st->a.off, st->peer, st->slot);
            break;
        case XC_STEP_RECV:
            fprintf(f, "recv   %8zu B rank %d -> %s+%zu (#%u)", st->bytes, st->peer,
                    buf_name(st->dst.buf), st->dst.off, st->slot);
            break;
        case XC_STEP_RECV_REDUCE:
            fprintf(f, "recv+reduce %zu B rank %d -> %s+%zu; %s+%zu = %s%s+%zu%s (#%u)",
                    st->bytes, st->peer, buf_name(st->b.buf), st->b.off, buf_name(st->dst.buf),
                    st->dst.off, st->msg_left ? "it op " : "", buf_name(st->a.buf), st->a.off,
                    st->msg_left ? "" : " op it", st->slot);
            break;
        case XC_STEP_COPY:
            fprintf(f, "copy   %8zu B %s+%zu -> %s+%zu", st->bytes, buf_name(st->a.buf),
                    st->a.off, buf_name(st->dst.buf), st->dst.off);
            break;
        case XC_STEP_REDUCE:
            fprintf(f, "reduce %8zu B %s+%zu = %s+%zu op %s+%zu", st->bytes, buf_name(st->dst.buf),
                    st->dst.off, buf_name(st->a.buf), st->a.off, buf_name(st->b.buf), st->b.off);
            break;
        case XC_STEP_DIVIDE:
            fprintf(f, "divide %8zu B %s+%zu by %u", st->bytes, buf_name(st->dst.buf),
                    st->dst.off, s->divisor);
            break;
        case XC_STEP_STAMP:
            fprintf(f, "stamp  %8zu B %s+%zu = \"%.*s\"", st->bytes, buf_name(st->dst.buf),
                    st->dst.off, (int)XC_STAMP_BYTES, s->stamp);
            break;
        case XC_STEP_CHECK:
            fprintf(f, "check  %8zu B %s+%zu: every rank's stamp equals mine", st->bytes,
                    buf_name(st->a.buf), st->a.off);
            break;
        default:
            fprintf(f, "?");
        }
        if (st->ndeps) {
            fprintf(f, "  after");
            for (d = 0; d < st->ndeps; d++)
                fprintf(f, " %u", s->deps[st->dep_first + d]);
        }
        fputc('\n', f);
    }
}
