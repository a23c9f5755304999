/*
 * coll_xcoll_component.c - the component's description for Open MPI and
 * its MCA parameters. Open MPI finds it by the symbol name
 * mca_coll_xcoll_component in mca_coll_xcoll.so.
 */
#include "coll_xcoll.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/mca/base/mca_base_var.h"

mca_coll_xcoll_params_t mca_coll_xcoll_params;

#define XCOLL_STRINGIFY_(x) #x
#define XCOLL_STRINGIFY(x) XCOLL_STRINGIFY_(x)
const char *mca_coll_xcoll_component_version_string =
    "xcoll collective MCA component version " XCOLL_STRINGIFY(XCOLL_VERSION_MAJOR) "."
    XCOLL_STRINGIFY(XCOLL_VERSION_MINOR) "." XCOLL_STRINGIFY(XCOLL_VERSION_PATCH);

static int xcoll_register(void);
static int xcoll_open(void);
static int xcoll_close(void);
static int xcoll_init_query(bool enable_progress_threads, bool enable_mpi_threads);

mca_coll_base_component_2_0_0_t mca_coll_xcoll_component = {
    .collm_version = {
        MCA_COLL_BASE_VERSION_2_0_0,
        .mca_component_name = "xcoll",
        MCA_BASE_MAKE_VERSION(component, XCOLL_VERSION_MAJOR, XCOLL_VERSION_MINOR,
                              XCOLL_VERSION_PATCH),
        .mca_open_component = xcoll_open,
        .mca_close_component = xcoll_close,
        .mca_register_component_params = xcoll_register,
    },
    .collm_data = {
        MCA_BASE_METADATA_PARAM_NONE
    },
    .collm_init_query = xcoll_init_query,
    .collm_comm_query = mca_coll_xcoll_comm_query,
};

static int xcoll_register(void)
{
    const mca_base_component_t *c = &mca_coll_xcoll_component.collm_version;
    mca_coll_xcoll_params_t *p = &mca_coll_xcoll_params;

    /* Above tuned (30) and libnbc (10), so adding the component to the
     * search path is enough to use it; below self (75) for MPI_COMM_SELF. */
    p->priority = 50;
    (void)mca_base_component_var_register(c, "priority",
        "Priority of the xcoll coll component (it is used on a communicator when its "
        "priority is the highest; the previous module still serves what xcoll cannot)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &p->priority);

    p->enable = true;
    (void)mca_base_component_var_register(c, "enable",
        "Use xcoll at all (0: the component declines every communicator)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &p->enable);

    /* Writable while MPI runs (MPI_T_cvar_write), so that one job can hold
     * a communicator xcoll serves and one it does not, side by side: how
     * bench/mpi_collbench --pair compares the two within one run. */
    p->new_comms = 1;
    (void)mca_base_component_var_register(c, "new_comms",
        "Take the communicators created from now on (0: leave them to the other components; "
        "writable at run time through MPI_T, for side-by-side measurements)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_LOCAL, &p->new_comms);

    p->min_size = 2;
    (void)mca_base_component_var_register(c, "np",
        "Smallest communicator (number of ranks) xcoll takes; smaller ones stay with the "
        "other components",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &p->min_size);

    p->colls = "default";
    (void)mca_base_component_var_register(c, "colls",
        "Comma-separated collectives xcoll takes: default (all but the v-variants), all, none, "
        "blocking, nonblocking, or names (allreduce, bcast, reduce, allgather, "
        "reduce_scatter_block, reduce_scatter, alltoall, gather, scatter, barrier, allgatherv, "
        "alltoallv, gatherv, scatterv: both forms; iallreduce ...: the nonblocking form only)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &p->colls);

    /* the environment's file unless the MCA parameter names another */
    p->tune_file = getenv("XCOLL_MPI_TUNE_FILE");
    if (p->tune_file == NULL)
        p->tune_file = "";
    (void)mca_base_component_var_register(c, "tune_file",
        "Drop-in selection rules (docs/TUNING.md grammar) replacing the built-in ones, which "
        "give to Open MPI the calls it was measured faster at (bench/dropin_sweep.sh writes "
        "such a file; an empty file makes xcoll serve everything it can). Default: "
        "XCOLL_MPI_TUNE_FILE",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &p->tune_file);

    p->verbose = 0;
    (void)mca_base_component_var_register(c, "verbose",
        "Log which calls xcoll served and which it passed back, and why (1: info, 2: debug); "
        "XCOLL_LOG=info does the same",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &p->verbose);
    return OMPI_SUCCESS;
}

/* Open MPI's collectives call ours with datatypes of their own (merging
 * intercommunicators, the basic allgatherv) that carry no description, so
 * MPI_Type_get_envelope on them raises an error: only types that are
 * predefined or keep their constructor's arguments are asked about. */
static int type_described(MPI_Datatype d)
{
    const ompi_datatype_t *t = (const ompi_datatype_t *)d;
    return ompi_datatype_is_predefined(t) || t->args != NULL;
}

static void type_retain(MPI_Datatype d)
{
    OBJ_RETAIN((ompi_datatype_t *)d);
}

static void type_release(MPI_Datatype d)
{
    ompi_datatype_t *t = (ompi_datatype_t *)d;
    OBJ_RELEASE(t);
}

static int xcoll_open(void)
{
    char bad[64];
    mca_coll_xcoll_params_t *p = &mca_coll_xcoll_params;
    xcmpi_type_described = type_described;
    xcmpi_type_retain = type_retain;
    xcmpi_type_release = type_release;
    xcmpi_log_init(p->verbose);
    if (xcmpi_parse_colls(p->colls, &p->mask, bad, sizeof(bad)) != 0) {
        xcmpi_warn("coll_xcoll_colls: '%s' is not a collective name; xcoll takes none", bad);
        p->mask = 0;
    }
    return OMPI_SUCCESS;
}

static int xcoll_close(void)
{
    mca_coll_xcoll_progress_fini();
    return OMPI_SUCCESS;
}

static int xcoll_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    /* libxcoll is not thread safe: under MPI_THREAD_MULTIPLE two threads
     * could enter it at once. */
    if (enable_mpi_threads) {
        xcmpi_info("declined: MPI_THREAD_MULTIPLE, and xcoll is not thread safe");
        return OMPI_ERR_NOT_SUPPORTED;
    }
    return OMPI_SUCCESS;
}
