/*
 * coll_xcoll.h - the Open MPI coll component "xcoll": Open MPI collectives
 * served by libxcoll, everything it cannot serve handed to the module that
 * Open MPI selected before it.
 */
#ifndef MCA_COLL_XCOLL_H
#define MCA_COLL_XCOLL_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "dropin.h"

BEGIN_C_DECLS

/* The MCA parameters (coll_xcoll_*). */
typedef struct {
    int priority;
    bool enable;
    int new_comms;       /* coll_xcoll_new_comms: take communicators created from now on */
    int min_size;        /* coll_xcoll_np */
    char *colls;         /* coll_xcoll_colls, parsed into mask */
    int verbose;
    char *tune_file;     /* coll_xcoll_tune_file: replaces the built-in drop-in rules */
    xcmpi_mask_t mask;
} mca_coll_xcoll_params_t;

extern mca_coll_xcoll_params_t mca_coll_xcoll_params;
OMPI_MODULE_DECLSPEC extern mca_coll_base_component_2_0_0_t mca_coll_xcoll_component;

typedef enum {
    XCOLL_OMPI_COMM_NONE = 0,  /* not needed yet: created on the first collective */
    XCOLL_OMPI_COMM_READY,
    XCOLL_OMPI_COMM_FAILED     /* creation failed on some rank: MPI serves everything */
} mca_coll_xcoll_comm_state_t;

typedef struct {
    mca_coll_base_module_t super;
    struct ompi_communicator_t *comm;  /* not retained: the module lives inside it */
    xcoll_comm_t xcomm;
    mca_coll_xcoll_comm_state_t state;
    xcmpi_verdicts_t verdicts;         /* which calls the drop-in rules give back */
    xcmpi_passbacks_t passbacks;       /* calls passed back, by their MPI arguments */
    /* The handlers Open MPI had selected before this module, each module
     * retained, for everything xcoll passes back. */
    mca_coll_base_comm_coll_t prev;
    bool prev_retained;
} mca_coll_xcoll_module_t;

OBJ_CLASS_DECLARATION(mca_coll_xcoll_module_t);

mca_coll_base_module_t *mca_coll_xcoll_comm_query(struct ompi_communicator_t *comm, int *priority);

/* Called by the component's close: no request may be left by then. */
void mca_coll_xcoll_progress_fini(void);

END_C_DECLS

#endif
