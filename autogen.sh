#!/bin/sh
# Generate configure and Makefile.in from a git checkout (releases ship them).
set -e
cd "$(dirname "$0")"
autoreconf --install --force --warnings=all
