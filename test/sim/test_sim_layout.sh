#!/bin/sh
# The simulator's layout sweep: every algorithm with its send and receive
# buffers reachable only through xcoll_layout_t pack/unpack (scrambled
# memory, no addresses), as the MPI drop-ins give derived datatypes.
exec "${builddir:-.}/test/sim/test_sim" --layout
