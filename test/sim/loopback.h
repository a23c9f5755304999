/* Loopback transport: N virtual ranks in one process, for the simulator
 * and the engine's unit tests. A message is matched FIFO by (destination,
 * source, full tag), like UCX tag matching. By default a send completes
 * only when a receive has taken its data (rendezvous), so a schedule that
 * overwrites a buffer before its send has left, or that waits for a send
 * before posting the matching receive, fails here as it would with UCX's
 * rendezvous protocol. Eager mode copies at send time instead; delayed
 * mode (below) also holds matched messages in flight. */
#ifndef XC_LOOPBACK_H
#define XC_LOOPBACK_H

#include <stddef.h>
#include <stdint.h>
#include "transport.h"

typedef struct lb_world lb_world_t;

typedef struct {
    uint64_t msgs_sent, bytes_sent;   /* counted when posted */
    uint64_t msgs_recvd, bytes_recvd; /* counted when matched */
} lb_stats_t;

extern const xc_transport_t lb_transport;

/* NULL when out of memory. */
lb_world_t *lb_world_create(int nranks);
void lb_world_destroy(lb_world_t *w);

/* The tl_comm pointer of virtual rank `rank`, for xc_exec_init(). */
void *lb_comm(lb_world_t *w, int rank);

/* 1: sends copy their data and complete at once; 0 (default): rendezvous. */
void lb_world_set_eager(lb_world_t *w, int eager);

/* 1: the transport claims to take device memory (as a CUDA-aware UCX
 * does), so the engine hands it device buffers instead of staging. */
void lb_world_set_device(lb_world_t *w, int device);

/* 1: the transport offers irecv_reduce and reduces messages in pieces
 * as they land, leaving garbage in the landing buffer; 0 (default): it
 * declines, and the engine reduces. */
void lb_world_set_land_reduce(lb_world_t *w, int on);

/* Delayed mode: a matched send and receive stay in flight (neither
 * completes, no data moves) until lb_world_deliver() picks them, each call
 * moving a pseudo-random half (seeded) of what is in flight. It exposes
 * schedules that touch a buffer while a message on it is in flight, the
 * way a real network does, whereas immediate delivery hides such races. */
void lb_world_set_delayed(lb_world_t *w, int delayed, uint64_t seed);

/* Returns the number of messages delivered. */
size_t lb_world_deliver(lb_world_t *w);

/* Delivers everything in flight; returns how many. */
size_t lb_world_flush(lb_world_t *w);

void lb_stats(const lb_world_t *w, int rank, lb_stats_t *out);
void lb_stats_reset(lb_world_t *w);

/* Messages sent but not received plus receives posted but not matched, over
 * all ranks: 0 after every collective has completed. */
size_t lb_world_pending(const lb_world_t *w);

#endif
