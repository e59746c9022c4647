#!/usr/bin/env bash
# pimsim_build.sh - build Samsung's PIMSimulator (SAITPublic/PIMSimulator) from a bare git
# snapshot, offline, for benchmarks/pimsim_trace.py and the constants of
# benchmarks/pimsim_compare.py (docs/validation.md, "PIM mode protocol against PIMSimulator").
#
# Usage:  benchmarks/pimsim_build.sh OUT_DIR BARE_GIT_DIR
#   OUT_DIR       where the source tree and the `sim` binary go (e.g. /tmp/pimsim)
#   BARE_GIT_DIR  a bare clone of SAITPublic/PIMSimulator (here @b464dde)
# Needs: g++, scons (pip install scons), libgtest-dev (apt). ~25 s on 2 cores.
#
# Local changes, none to the simulator itself: data/ and dump/ are not extracted (large numpy
# files, not needed: the benchmark fixture generates its data); lib/npy.h gets
# `#include <iterator>` (gcc 12); scons runs -j2; and one gtest case, PIMBenchFixture.gemv_env,
# is appended to src/tests/PIMBenchTestCases.cpp: upstream's own `gemv` case (4096 x 4096)
# with the shape read from GEMV_OUT / GEMV_IN, the host-only run left out.
set -euo pipefail
OUT=${1:?usage: $0 OUT_DIR BARE_GIT_DIR}
BARE=${2:?usage: $0 OUT_DIR BARE_GIT_DIR}
mkdir -p "$OUT"
cd "$OUT"
git --git-dir="$BARE" ls-tree -r --name-only HEAD | grep -v '^data/\|^dump/' | while read -r f; do
    mkdir -p "$(dirname "$f")"
    git --git-dir="$BARE" show "HEAD:$f" > "$f"
done
grep -q '#include <iterator>' lib/npy.h || sed -i 's/#include <vector>/#include <vector>\n#include <iterator>/' lib/npy.h
sed -i "s/SetOption('num_jobs', 32)/SetOption('num_jobs', 2)/" Sconstruct
grep -q gemv_env src/tests/PIMBenchTestCases.cpp || cat >> src/tests/PIMBenchTestCases.cpp <<'CASE'

TEST_F(PIMBenchFixture, gemv_env)
{
    setPIMBenchTestCase(KernelType::GEMV, atoi(getenv("GEMV_OUT")), atoi(getenv("GEMV_IN")));
    executePIMKernel();
}
CASE
scons NO_LIBRARY=1 NO_EMUL=1 > build.log 2>&1
echo "$OUT/sim"
