#!/usr/bin/env bash
# Install everything and run the demo pipeline on the embedded default (SQLite + ./.strata/lake + local Spark).
source "$(dirname "$0")/env.sh"
strata demo "$@"
