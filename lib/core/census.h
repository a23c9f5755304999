/* The census after a timeout (census.c): the ranks whose collective timed
 * out ask each other where they are, so each can name the rank that never
 * entered, not only the neighbour it was waiting for. */
#ifndef XC_CENSUS_H
#define XC_CENSUS_H

#include "engine.h"
#include "xcoll.h"

/* While x, the collective `what`, has made no progress for a while (a
 * quarter of the timeout): posts the receives for the peers' messages,
 * and once a peer's has come (it timed out and asks), answers with this
 * rank's state, still waiting. So a rank that entered late, and would
 * time out after the asking rank's window closed, is counted as in it,
 * not blamed. Cheap to call again: tests the receives. Returns XCOLL_OK,
 * or how a peer failed in x or before it (xc_census_announce: a lost
 * peer, say): x cannot complete then, and the caller gives up at once. */
xcoll_status_t xc_census_listen(xcoll_comm_t comm, const xc_exec_t *x, const char *what,
                                double since, double now);

/* Starts the census for x, the collective `what` that timed out on comm
 * after waiting since `since` (xc_now's clock): sends every peer this
 * rank's state and posts receives for theirs. Call before x is cancelled
 * (its steps in flight say whom it waits for). Once per communicator: XCOLL_ERR_INVALID_ARG if one ran already (or comm has
 * one rank), XCOLL_ERR_NO_MEMORY; the caller then fails the collective at
 * once. */
xcoll_status_t xc_census_start(xcoll_comm_t comm, const xc_exec_t *x, const char *what,
                               double since, double now);

/* The same for a collective given up before its timeout, because a peer
 * failed in it (status: how this rank fails it). */
xcoll_status_t xc_census_start_failed(xcoll_comm_t comm, const xc_exec_t *x, const char *what,
                                      double since, double now, xcoll_status_t status);

/* For a collective that failed otherwise (status, not a timeout): tells
 * every peer, once per communicator, so a peer that then times out
 * waiting for this rank says why it left. Asks nothing back. */
void xc_census_announce(xcoll_comm_t comm, const xc_exec_t *x, const char *what,
                        xcoll_status_t status);

/* Collects answers; 1 when every peer answered or the window closed, and
 * the verdict has been logged (then the caller fails the collective), 0
 * while it waits. */
int xc_census_progress(xcoll_comm_t comm, double now);

/* At comm destroy, before the transport goes: releases what the census
 * holds. */
void xc_census_free(xcoll_comm_t comm);

#endif
