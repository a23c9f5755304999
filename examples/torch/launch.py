"""Where a torch.distributed program learns its rank, under either launcher.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT
itself. mpirun sets its own variables instead (Open MPI: OMPI_COMM_WORLD_*;
MPICH and Intel MPI: PMI_RANK, PMI_SIZE), and torch's env:// rendezvous
reads only the torch names, so setup_env() copies them over. MASTER_ADDR
and MASTER_PORT name where rank 0 runs the rendezvous store: 127.0.0.1 and
29500 unless set; on several hosts pass them with mpirun -x MASTER_ADDR=host0.
"""
import argparse
import os
import sys

_FROM_MPI = {
    "RANK": ("OMPI_COMM_WORLD_RANK", "PMI_RANK"),
    "WORLD_SIZE": ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"),
    "LOCAL_RANK": ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"),
}


def setup_env():
    """Returns (rank, world_size), after setting torch's variables from MPI's."""
    for key, sources in _FROM_MPI.items():
        if key not in os.environ:
            for src in sources:
                if src in os.environ:
                    os.environ[key] = os.environ[src]
                    break
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        sys.exit("%s: no RANK/WORLD_SIZE: launch with torchrun (--nproc_per_node N) or "
                 "mpirun (-np N)" % os.path.basename(sys.argv[0]))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def import_backend():
    """Imports xcoll_torch, which registers backend "xcoll", or says why not."""
    try:
        import xcoll_torch  # noqa: F401
    except ImportError as e:
        sys.exit("cannot import xcoll_torch (%s): build xcoll with torch found "
                 "(configure says 'torch.distributed backend: yes'), then make install, "
                 "or point PYTHONPATH at build/lib/torch/.libs and LD_LIBRARY_PATH at "
                 "build/lib/.libs" % e)


def parse_args(ap=None):
    """The command line: --backend (default xcoll, whose module is imported
    then; gloo runs the same program on torch's own CPU backend) and what
    ap, if given, adds."""
    ap = ap or argparse.ArgumentParser()
    ap.add_argument("--backend", default="xcoll", help="xcoll (default) or gloo")
    args = ap.parse_args()
    if args.backend == "xcoll":
        import_backend()
    return args
