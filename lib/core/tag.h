/* The 64-bit UCX tag layout: it keeps communicators, point-to-point traffic
 * and successive collectives apart, and names the sender (UCX tag matching
 * cannot filter by source otherwise).
 *
 *   bit 63      1 = point-to-point, 0 = collective
 *   bits 62-48  communicator id (15 bits)
 *   bits 47-28  sender's rank in the communicator (20 bits)
 *   collective:  bits 27-12 collective sequence number (16 bits, wraps;
 *                          65536 collectives are never outstanding at once)
 *                bits 11-0 message ordinal between this pair in this
 *                          collective (12 bits, wraps; UCX keeps order per
 *                          sender and tag and the engine posts in step
 *                          order, so a wrap is still matched right)
 *   point-to-point: bits 27-0 user tag; the top value, XC_TAG_USER_CENSUS,
 *                is not the user's (XCOLL_TAG_LIMIT stops below it): the
 *                census that follows a timeout (census.c) travels there
 *
 * The largest communicator id, XC_MAX_COMM_ID, is never given to a
 * communicator: point-to-point tags with it carry the UCX transport's
 * goodbye (xc_tag_goodbye), which belongs to a process, not to a
 * communicator, and names its sender by its UCX address's hash.
 */
#ifndef XC_TAG_H
#define XC_TAG_H

#include <stdint.h>

#define XC_TAG_P2P_BIT     ((uint64_t)1 << 63)
#define XC_TAG_COMM_BITS   15
#define XC_TAG_RANK_BITS   20
#define XC_TAG_SEQ_BITS    16
#define XC_TAG_SLOT_BITS   12
#define XC_TAG_USER_BITS   28
#define XC_MAX_COMM_ID     ((1u << XC_TAG_COMM_BITS) - 1)
#define XC_MAX_RANKS       (1u << XC_TAG_RANK_BITS)
#define XC_TAG_MASK_ALL    (~(uint64_t)0)
#define XC_TAG_USER_CENSUS ((1u << XC_TAG_USER_BITS) - 1)

static inline uint64_t xc_tag_coll(uint32_t comm_id, uint32_t src, uint32_t seq, uint32_t slot)
{
    return ((uint64_t)(comm_id & XC_MAX_COMM_ID) << 48) |
           ((uint64_t)(src & (XC_MAX_RANKS - 1)) << 28) |
           ((uint64_t)(seq & ((1u << XC_TAG_SEQ_BITS) - 1)) << XC_TAG_SLOT_BITS) |
           (uint64_t)(slot & ((1u << XC_TAG_SLOT_BITS) - 1));
}

static inline uint64_t xc_tag_p2p(uint32_t comm_id, uint32_t src, uint32_t user_tag)
{
    return XC_TAG_P2P_BIT | ((uint64_t)(comm_id & XC_MAX_COMM_ID) << 48) |
           ((uint64_t)(src & (XC_MAX_RANKS - 1)) << 28) |
           (uint64_t)(user_tag & ((1u << XC_TAG_USER_BITS) - 1));
}

/* The goodbye a process sends on an inter-node connection before it closes
 * it (lib/ucx/ucx_transport.c), from the sender whose UCX worker address
 * hashes to addr_hash: bits 47-0 of it. */
static inline uint64_t xc_tag_goodbye(uint64_t addr_hash)
{
    return XC_TAG_P2P_BIT | ((uint64_t)XC_MAX_COMM_ID << 48) |
           (addr_hash & (((uint64_t)1 << 48) - 1));
}

static inline uint32_t xc_tag_comm(uint64_t tag) { return (uint32_t)(tag >> 48) & XC_MAX_COMM_ID; }
static inline uint32_t xc_tag_src(uint64_t tag) { return (uint32_t)(tag >> 28) & (XC_MAX_RANKS - 1); }
static inline uint32_t xc_tag_seq(uint64_t tag) { return (uint32_t)(tag >> XC_TAG_SLOT_BITS) & ((1u << XC_TAG_SEQ_BITS) - 1); }
static inline uint32_t xc_tag_slot(uint64_t tag) { return (uint32_t)tag & ((1u << XC_TAG_SLOT_BITS) - 1); }
static inline int xc_tag_is_p2p(uint64_t tag) { return (tag & XC_TAG_P2P_BIT) != 0; }

#endif
