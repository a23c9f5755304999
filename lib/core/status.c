/* Status strings and the version. */
#include "xcoll.h"

#define XC_STR2(x) #x
#define XC_STR(x) XC_STR2(x)

const char *xcoll_version(void)
{
    return XC_STR(XCOLL_VERSION_MAJOR) "." XC_STR(XCOLL_VERSION_MINOR) "." XC_STR(
        XCOLL_VERSION_PATCH);
}

const char *xcoll_strerror(xcoll_status_t status)
{
    switch (status) {
    case XCOLL_OK: return "success";
    case XCOLL_INPROGRESS: return "operation in progress";
    case XCOLL_DECLINED: return "handed back to the caller by the selection table (\"mpi\")";
    case XCOLL_ERR_INVALID_ARG: return "invalid argument";
    case XCOLL_ERR_INVALID_DTYPE: return "invalid datatype";
    case XCOLL_ERR_INVALID_OP: return "invalid reduction operator for this datatype";
    case XCOLL_ERR_INVALID_ROOT: return "root is not a rank of the communicator";
    case XCOLL_ERR_INVALID_COMM: return "invalid communicator (NULL, or already destroyed)";
    case XCOLL_ERR_OVERFLOW: return "message size overflows size_t";
    case XCOLL_ERR_NO_MEMORY: return "out of memory";
    case XCOLL_ERR_TRANSPORT: return "transport error (UCX or shared memory)";
    case XCOLL_ERR_TIMEOUT: return "timed out waiting for peers";
    case XCOLL_ERR_COMM_FAILED: return "communicator failed earlier; destroy it";
    case XCOLL_ERR_TRUNCATED: return "message size mismatch between sender and receiver";
    case XCOLL_ERR_BOOTSTRAP: return "bootstrap allgather failed";
    case XCOLL_ERR_UNSUPPORTED: return "not supported by this build or algorithm";
    case XCOLL_ERR_INTERNAL: return "internal error";
    case XCOLL_ERR_MISMATCH: return "the ranks called different collectives (XCOLL_CHECK)";
    case XCOLL_ERR_PEER_LOST: return "a peer is lost (its process or node is gone, or the network to it)";
    }
    return "unknown status";
}
