#!/bin/sh
# The simulator's device sweep: every algorithm with its buffers in
# emulated device memory (test/gpu/emulated_gpu.h), staged and direct.
exec "${builddir:-.}/test/sim/test_sim" --gpu
