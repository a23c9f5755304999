/* Unit test of the UCX tag layout (lib/core/tag.h): every field survives a
 * round trip at its boundaries, fields never bleed into each other,
 * point-to-point and collective tags never collide, and distinct
 * (comm, src, seq, slot) give distinct tags. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tag.h"
#include "xcoll.h"

#define CHECK_RNG_SEED 0x243f6a8885a308d3ull
#include "check.h"

#define SEQ_MAX  ((1u << XC_TAG_SEQ_BITS) - 1)
#define SLOT_MAX ((1u << XC_TAG_SLOT_BITS) - 1)
#define USER_MAX ((1u << XC_TAG_USER_BITS) - 1)
#define RANK_MAX (XC_MAX_RANKS - 1)

static const uint32_t comm_vals[] = {0, 1, 2, XC_MAX_COMM_ID / 2, XC_MAX_COMM_ID - 1,
                                     XC_MAX_COMM_ID};
static const uint32_t rank_vals[] = {0, 1, 2, RANK_MAX / 2, RANK_MAX - 1, RANK_MAX};
static const uint32_t seq_vals[] = {0, 1, 2, SEQ_MAX / 2, SEQ_MAX - 1, SEQ_MAX};
static const uint32_t slot_vals[] = {0, 1, 2, SLOT_MAX / 2, SLOT_MAX - 1, SLOT_MAX};
static const uint32_t user_vals[] = {0, 1, 2, USER_MAX / 2, USER_MAX - 1, USER_MAX};
#define NV 6

static void test_layout(void)
{
    check(1 + XC_TAG_COMM_BITS + XC_TAG_RANK_BITS + XC_TAG_SEQ_BITS + XC_TAG_SLOT_BITS == 64,
          "collective fields do not fill 64 bits");
    check(1 + XC_TAG_COMM_BITS + XC_TAG_RANK_BITS + XC_TAG_USER_BITS == 64,
          "point-to-point fields do not fill 64 bits");
    /* every user tag fits the field, and the one value above them all is
     * the census's: a user's message can never match it */
    check((1ull << XC_TAG_USER_BITS) == (unsigned long long)XCOLL_TAG_LIMIT + 1,
          "XCOLL_TAG_LIMIT (%d) does not leave exactly the top user tag free", XCOLL_TAG_LIMIT);
    check(XC_TAG_USER_CENSUS == (uint32_t)XCOLL_TAG_LIMIT,
          "the census tag %u is not the value just above the user's", XC_TAG_USER_CENSUS);
    check(XC_TAG_MASK_ALL == UINT64_MAX, "XC_TAG_MASK_ALL is not all ones");

    /* Each field at its maximum alone: the masks are disjoint and together
     * cover every bit, so no field can overwrite another. */
    uint64_t comm = xc_tag_coll(XC_MAX_COMM_ID, 0, 0, 0);
    uint64_t src = xc_tag_coll(0, RANK_MAX, 0, 0);
    uint64_t seq = xc_tag_coll(0, 0, SEQ_MAX, 0);
    uint64_t slot = xc_tag_coll(0, 0, 0, SLOT_MAX);
    check((comm & src) == 0 && (comm & seq) == 0 && (comm & slot) == 0 && (src & seq) == 0 &&
              (src & slot) == 0 && (seq & slot) == 0,
          "collective fields overlap");
    check((comm | src | seq | slot | XC_TAG_P2P_BIT) == UINT64_MAX,
          "collective fields leave bits unused");
    uint64_t pcomm = xc_tag_p2p(XC_MAX_COMM_ID, 0, 0) & ~XC_TAG_P2P_BIT;
    uint64_t psrc = xc_tag_p2p(0, RANK_MAX, 0) & ~XC_TAG_P2P_BIT;
    uint64_t puser = xc_tag_p2p(0, 0, USER_MAX) & ~XC_TAG_P2P_BIT;
    check((pcomm & psrc) == 0 && (pcomm & puser) == 0 && (psrc & puser) == 0,
          "point-to-point fields overlap");
    check((pcomm | psrc | puser | XC_TAG_P2P_BIT) == UINT64_MAX,
          "point-to-point fields leave bits unused");
    /* comm and src sit in the same place in both kinds, so a receive can
     * match on them with one mask. */
    check(pcomm == comm && psrc == src, "comm/src placed differently in p2p and collective");
}

static void test_round_trip(void)
{
    for (int c = 0; c < NV; c++)
        for (int r = 0; r < NV; r++) {
            for (int q = 0; q < NV; q++)
                for (int s = 0; s < NV; s++) {
                    uint64_t t = xc_tag_coll(comm_vals[c], rank_vals[r], seq_vals[q],
                                             slot_vals[s]);
                    check(!xc_tag_is_p2p(t) && xc_tag_comm(t) == comm_vals[c] &&
                              xc_tag_src(t) == rank_vals[r] && xc_tag_seq(t) == seq_vals[q] &&
                              xc_tag_slot(t) == slot_vals[s],
                          "coll(%u, %u, %u, %u) = 0x%016llx decodes as (%u, %u, %u, %u) p2p=%d",
                          comm_vals[c], rank_vals[r], seq_vals[q], slot_vals[s],
                          (unsigned long long)t, xc_tag_comm(t), xc_tag_src(t), xc_tag_seq(t),
                          xc_tag_slot(t), xc_tag_is_p2p(t));
                }
            for (int u = 0; u < NV; u++) {
                uint64_t t = xc_tag_p2p(comm_vals[c], rank_vals[r], user_vals[u]);
                check(xc_tag_is_p2p(t) && xc_tag_comm(t) == comm_vals[c] &&
                          xc_tag_src(t) == rank_vals[r] && (t & USER_MAX) == user_vals[u],
                      "p2p(%u, %u, %u) = 0x%016llx decodes wrong", comm_vals[c], rank_vals[r],
                      user_vals[u], (unsigned long long)t);
            }
        }
}

/* Out-of-range inputs are reduced modulo their field and never spill into
 * a neighbour, in particular never into the p2p bit. */
static void test_wrap(void)
{
    check(xc_tag_coll(7, 9, SEQ_MAX + 1, 3) == xc_tag_coll(7, 9, 0, 3),
          "sequence number does not wrap");
    check(xc_tag_coll(7, 9, SEQ_MAX + 6, 3) == xc_tag_coll(7, 9, 5, 3),
          "sequence number does not wrap modulo 2^%d", XC_TAG_SEQ_BITS);
    check(xc_tag_coll(7, 9, 11, SLOT_MAX + 1) == xc_tag_coll(7, 9, 11, 0),
          "slot does not wrap");
    check(xc_tag_coll(7, 9, 10, SLOT_MAX + 45) == xc_tag_coll(7, 9, 10, 44),
          "slot does not wrap modulo 2^%d", XC_TAG_SLOT_BITS);
    uint64_t t = xc_tag_coll(UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX);
    check(!xc_tag_is_p2p(t) && t == ~XC_TAG_P2P_BIT,
          "all-ones collective inputs give 0x%016llx", (unsigned long long)t);
    t = xc_tag_p2p(UINT32_MAX, UINT32_MAX, UINT32_MAX);
    check(t == UINT64_MAX, "all-ones p2p inputs give 0x%016llx", (unsigned long long)t);
    t = xc_tag_coll(0, 0, UINT32_MAX, UINT32_MAX);
    check(xc_tag_comm(t) == 0 && xc_tag_src(t) == 0, "seq/slot overflow reached comm/src");
    t = xc_tag_coll(0, 0, 0, UINT32_MAX);
    check(xc_tag_seq(t) == 0 && xc_tag_slot(t) == SLOT_MAX, "slot overflow reached seq");
    t = xc_tag_coll(0, 0, UINT32_MAX, 0);
    check(xc_tag_slot(t) == 0 && xc_tag_src(t) == 0, "seq overflow reached slot or src");
    t = xc_tag_p2p(0, 0, UINT32_MAX);
    check(xc_tag_comm(t) == 0 && xc_tag_src(t) == 0, "user tag overflow reached comm/src");
    t = xc_tag_coll(XC_MAX_COMM_ID + 1, XC_MAX_RANKS, 0, 0);
    check(t == 0, "comm/src overflow spilled: 0x%016llx", (unsigned long long)t);
}

typedef struct {
    uint64_t tag;
    uint32_t f[4]; /* comm, src, seq, slot; f[3] = UINT32_MAX marks p2p (f[2] = user tag) */
} entry_t;

static int cmp_entry(const void *x, const void *y)
{
    const entry_t *a = x, *b = y;
    if (a->tag != b->tag)
        return a->tag < b->tag ? -1 : 1;
    for (int i = 0; i < 4; i++)
        if (a->f[i] != b->f[i])
            return a->f[i] < b->f[i] ? -1 : 1;
    return 0;
}

/* Boundary combinations of every field plus random in-range tuples, both
 * kinds mixed: equal tags only ever come from equal inputs. */
static void test_distinct(void)
{
    size_t n_random = 200000;
    size_t cap = (size_t)NV * NV * NV * NV + (size_t)NV * NV * NV + 2 * n_random;
    entry_t *e = malloc(cap * sizeof *e);
    size_t n = 0;
    if (!e) {
        check(0, "out of memory");
        return;
    }
    for (int c = 0; c < NV; c++)
        for (int r = 0; r < NV; r++) {
            for (int q = 0; q < NV; q++)
                for (int s = 0; s < NV; s++)
                    e[n++] = (entry_t){xc_tag_coll(comm_vals[c], rank_vals[r], seq_vals[q],
                                                   slot_vals[s]),
                                       {comm_vals[c], rank_vals[r], seq_vals[q], slot_vals[s]}};
            for (int u = 0; u < NV; u++)
                e[n++] = (entry_t){xc_tag_p2p(comm_vals[c], rank_vals[r], user_vals[u]),
                                   {comm_vals[c], rank_vals[r], user_vals[u], UINT32_MAX}};
        }
    for (size_t i = 0; i < n_random; i++) {
        /* Small ranges for some fields so that near-collisions are frequent. */
        uint32_t comm = (uint32_t)(rnd64() % 4), src = (uint32_t)(rnd64() % 64);
        uint32_t seq = (i & 1) ? (uint32_t)(rnd64() & SEQ_MAX) : (uint32_t)(rnd64() % 8);
        uint32_t slot = (uint32_t)(rnd64() & SLOT_MAX);
        uint32_t user = (uint32_t)(rnd64() & USER_MAX);
        if (i & 2)
            user &= 0xffff; /* overlaps the bit range of seq/slot */
        e[n++] = (entry_t){xc_tag_coll(comm, src, seq, slot), {comm, src, seq, slot}};
        e[n++] = (entry_t){xc_tag_p2p(comm, src, user), {comm, src, user, UINT32_MAX}};
    }
    qsort(e, n, sizeof *e, cmp_entry);
    size_t collisions = 0;
    for (size_t i = 1; i < n; i++)
        if (e[i].tag == e[i - 1].tag && cmp_entry(&e[i], &e[i - 1]) != 0 && collisions++ < 10)
            check(0, "tag 0x%016llx from (%u,%u,%u,%u) and (%u,%u,%u,%u)",
                  (unsigned long long)e[i].tag, e[i - 1].f[0], e[i - 1].f[1], e[i - 1].f[2],
                  e[i - 1].f[3], e[i].f[0], e[i].f[1], e[i].f[2], e[i].f[3]);
    check(collisions == 0, "%zu tag collisions among %zu tags", collisions, n);

    /* The same (comm, src) and numerically equal payload never gives the
     * same tag as p2p and collective. */
    for (size_t i = 0; i < n_random; i++) {
        uint32_t comm = (uint32_t)(rnd64() & XC_MAX_COMM_ID), src = (uint32_t)(rnd64() & RANK_MAX);
        uint32_t low = (uint32_t)(rnd64() & USER_MAX);
        uint64_t coll = xc_tag_coll(comm, src, low >> XC_TAG_SLOT_BITS, low & SLOT_MAX);
        uint64_t p2p = xc_tag_p2p(comm, src, low);
        if (coll == p2p || xc_tag_is_p2p(coll) || !xc_tag_is_p2p(p2p)) {
            check(0, "p2p and collective tag collide for comm %u src %u payload 0x%x", comm,
                  src, low);
            break;
        }
    }
    check(1, "ok");
    free(e);
}

/* The goodbye (ucx_transport.c) lives in the communicator id no
 * communicator gets: no tag of a communicator's traffic can equal one,
 * and every sender hash keeps its low 48 bits. */
static void test_goodbye(void)
{
    static const uint64_t hashes[] = {0, 1, 0xcbf29ce484222325ull, UINT64_MAX,
                                      (1ull << 48) - 1, 1ull << 48};
    for (size_t h = 0; h < sizeof(hashes) / sizeof(hashes[0]); h++) {
        uint64_t g = xc_tag_goodbye(hashes[h]);
        check(xc_tag_is_p2p(g) && xc_tag_comm(g) == XC_MAX_COMM_ID,
              "goodbye 0x%016llx is not in the reserved communicator id",
              (unsigned long long)g);
        check((g & ((1ull << 48) - 1)) == (hashes[h] & ((1ull << 48) - 1)),
              "goodbye 0x%016llx lost bits of hash 0x%016llx", (unsigned long long)g,
              (unsigned long long)hashes[h]);
        for (int c = 0; c < NV; c++) {
            if (comm_vals[c] == XC_MAX_COMM_ID)
                continue; /* never a communicator's (comm.c) */
            for (int r = 0; r < NV; r++)
                for (int u = 0; u < NV; u++)
                    check(xc_tag_p2p(comm_vals[c], rank_vals[r], user_vals[u]) != g &&
                              xc_tag_coll(comm_vals[c], rank_vals[r], seq_vals[u],
                                          slot_vals[u]) != g,
                          "a communicator's tag equals goodbye 0x%016llx",
                          (unsigned long long)g);
        }
    }
}

int main(void)
{
    test_layout();
    test_goodbye();
    test_round_trip();
    test_wrap();
    test_distinct();
    printf("test_tag: %lu passed, %lu failed\n", n_pass, n_fail);
    return n_fail == 0 ? 0 : 1;
}
